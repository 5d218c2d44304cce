package dataplane

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/ecnswitch/ecnswitch/packet"
)

// Forwarding configures how the switch picks an egress port. Static rules
// are tried first, in this order: a port patch on the ingress port, a
// destination MAC rule, then the longest matching IP prefix. Then the
// learned L2 table; a frame nothing matches, and every broadcast or
// multicast frame, is flooded to every port but the one it came in on.
type Forwarding struct {
	// NoLearning turns the L2 learning table off; unknown destinations flood.
	NoLearning bool
	// AgeTime is how long a learned MAC stays valid without being seen
	// again; 0 means DefaultAgeTime.
	AgeTime time.Duration
	// TableSize is the number of slots in the learning table (rounded up to a
	// power of two), up to MaxTableSize; 0 means DefaultTableSize.
	TableSize int
	// MACLimit is how many MACs the table may hold learned on one port, a
	// port security maximum: beyond it a new source MAC is not learned
	// (frames to it flood) and is counted. Up to MaxMACLimit; 0 means
	// DefaultMACLimit, negative no limit.
	MACLimit int
	// FloodRate is storm control: how many frames per second each ingress
	// port may flood (broadcast, multicast, unknown unicast, and with
	// learning off every frame no rule matches), in a token bucket of
	// FloodBurst frames. Frames above it are dropped with reason storm. Up
	// to MaxFloodRate; 0 means DefaultFloodRate, negative no limit.
	FloodRate int
	// FloodBurst is the storm-control bucket in frames, up to
	// MaxFloodBurst; 0 means DefaultFloodBurst.
	FloodBurst int

	Patches  []Patch
	MACs     []MACRule
	Prefixes []PrefixRule
}

// Defaults and limits of the learning table's per-port limit and of storm
// control.
const (
	DefaultMACLimit   = 1024
	MaxMACLimit       = MaxTableSize
	DefaultFloodRate  = 10_000 // frames/s per ingress port
	MaxFloodRate      = 1_000_000_000
	DefaultFloodBurst = 1_000 // frames
	MaxFloodBurst     = 1 << 20
)

// Patch sends everything received on From out of To.
type Patch struct{ From, To int }

// MACRule sends frames for a destination MAC out of Port.
type MACRule struct {
	MAC  net.HardwareAddr
	Port int
}

// PrefixRule sends IPv4 or IPv6 packets whose destination lies in Prefix out
// of Port; the longest matching prefix wins.
type PrefixRule struct {
	Prefix netip.Prefix
	Port   int
}

// forwarder is Forwarding compiled for the hot path.
type forwarder struct {
	patch    []int16        // by ingress port; -1 when none
	macList  []macRule      // the MAC rules while there are few (searched in order), else nil
	macs     map[uint64]int // the MAC rules when there are many
	prefixes []PrefixRule   // longest first
	fdb      *fdb           // nil when learning is off
	src      []lastSource   // by ingress port, with fdb
	nports   int
	storm    []floodBucket // by ingress port; nil when flooding is not limited
}

// macRule is a compiled MACRule.
type macRule struct {
	key  uint64 // macKey
	port int
}

// maxMACList is the most MAC rules route searches in a list; with more, a
// map is cheaper. A map lookup costs about as much as comparing a few
// dozen keys (callgrind: 36 instructions per lookup of a one-rule map).
const maxMACList = 16

// Special egress ports route returns.
const (
	noPort  = -1 // the frame goes nowhere: its destination is behind its ingress port
	flood   = -2 // to every port but the ingress one
	stormed = -3 // it would flood, but its port's flood rate is spent
)

// floodBucket is one ingress port's storm-control token bucket, with its
// credit in nanoseconds (like scheduler.Shaper's): each flooded frame
// costs 1/FloodRate seconds of credit, the credit grows with time, and
// holds at most FloodBurst frames' worth. Only the worker that receives on
// the port touches it, so it needs no atomics; the padding keeps other
// ports' buckets off its cache line.
type floodBucket struct {
	credit int64 // ns
	last   int64 // ns; when credit was computed
	cost   int64 // ns per frame
	depth  int64 // ns
	_      [32]byte
}

// allow takes one frame's credit at now, reporting whether there was any.
func (b *floodBucket) allow(now int64) bool {
	if el := now - b.last; el > 0 {
		b.credit = min(b.depth, b.credit+el)
		b.last = now
	}
	if b.credit < b.cost {
		return false
	}
	b.credit -= b.cost
	return true
}

// validate checks f for a switch of nports ports.
func (f Forwarding) validate(nports int) error {
	inRange := func(key string, p int) error {
		if p < 0 || p >= nports {
			return fmt.Errorf("forwarding: %s: port %d outside [0, %d]", key, p, nports-1)
		}
		return nil
	}
	for i, p := range f.Patches {
		if err := inRange(fmt.Sprintf("patches[%d].from", i), p.From); err != nil {
			return err
		}
		if err := inRange(fmt.Sprintf("patches[%d].to", i), p.To); err != nil {
			return err
		}
		if p.From == p.To {
			return fmt.Errorf("forwarding: patches[%d]: port %d patched to itself", i, p.From)
		}
	}
	for i, m := range f.MACs {
		if len(m.MAC) != 6 {
			return fmt.Errorf("forwarding: macs[%d].mac: %q is not a 6-byte MAC", i, m.MAC)
		}
		if err := inRange(fmt.Sprintf("macs[%d].port", i), m.Port); err != nil {
			return err
		}
	}
	for i, r := range f.Prefixes {
		if !r.Prefix.IsValid() {
			return fmt.Errorf("forwarding: prefixes[%d].prefix: invalid prefix", i)
		}
		if err := inRange(fmt.Sprintf("prefixes[%d].port", i), r.Port); err != nil {
			return err
		}
	}
	if !f.NoLearning && (f.TableSize < 0 || f.TableSize > MaxTableSize) {
		return fmt.Errorf("forwarding: table_size: %d outside [1, %d]", f.TableSize, MaxTableSize)
	}
	if !f.NoLearning && f.MACLimit > MaxMACLimit {
		return fmt.Errorf("forwarding: mac_limit: %d outside [1, %d] (or negative: no limit)", f.MACLimit, MaxMACLimit)
	}
	if f.FloodRate > MaxFloodRate {
		return fmt.Errorf("forwarding: flood_rate: %d frames/s outside [1, %d] (or negative: no limit)", f.FloodRate, MaxFloodRate)
	}
	if f.FloodBurst < 0 || f.FloodBurst > MaxFloodBurst {
		return fmt.Errorf("forwarding: flood_burst: %d frames outside [1, %d]", f.FloodBurst, MaxFloodBurst)
	}
	return nil
}

func newForwarder(f Forwarding, nports int) (*forwarder, error) {
	if err := f.validate(nports); err != nil {
		return nil, err
	}
	fw := &forwarder{patch: make([]int16, nports), nports: nports}
	for i := range fw.patch {
		fw.patch[i] = noPort
	}
	for _, p := range f.Patches {
		fw.patch[p.From] = int16(p.To)
	}
	if len(f.MACs) > 0 {
		fw.macs = make(map[uint64]int, len(f.MACs))
		for _, m := range f.MACs {
			fw.macs[macKey(m.MAC)] = m.Port // the last rule for a MAC wins
		}
	}
	if len(fw.macs) <= maxMACList {
		for k, p := range fw.macs {
			fw.macList = append(fw.macList, macRule{k, p})
		}
		fw.macs = nil
	}
	for _, r := range f.Prefixes {
		fw.prefixes = append(fw.prefixes, PrefixRule{r.Prefix.Masked(), r.Port})
	}
	slices.SortStableFunc(fw.prefixes, func(a, b PrefixRule) int { return b.Prefix.Bits() - a.Prefix.Bits() })
	if !f.NoLearning {
		age := f.AgeTime
		if age == 0 {
			age = DefaultAgeTime
		}
		size := f.TableSize
		if size == 0 {
			size = DefaultTableSize
		}
		limit := f.MACLimit
		if limit == 0 {
			limit = DefaultMACLimit
		}
		fw.fdb = newFDB(size, int64(age), limit, nports)
		fw.src = make([]lastSource, nports)
	}
	rate, burst := f.FloodRate, f.FloodBurst
	if rate == 0 {
		rate = DefaultFloodRate
	}
	if burst == 0 {
		burst = DefaultFloodBurst
	}
	if rate > 0 {
		cost := int64(time.Second) / int64(rate)
		fw.storm = make([]floodBucket, nports)
		for i := range fw.storm {
			fw.storm[i] = floodBucket{cost: cost, depth: cost * int64(burst), credit: cost * int64(burst)}
		}
	}
	return fw, nil
}

// route returns the egress port of a parsed frame, flood, stormed or
// noPort. It learns the source MAC as a side effect. It is called by the
// worker that received the frame, the one owner of its ingress port's
// flood bucket.
func (fw *forwarder) route(d *packet.Desc, now int64) int {
	f := d.Frame()
	in := int(d.InPort)
	dst := macKey(f[0:6])
	if fw.fdb != nil && f[6]&1 == 0 {
		fw.fdb.learnFrom(&fw.src[in], f[6:12], macKey(f[6:12]), in, now)
	}
	if p := fw.patch[in]; p != noPort {
		return int(p)
	}
	if f[0]&1 != 0 { // broadcast and multicast
		return fw.flood(in, now)
	}
	for _, r := range fw.macList {
		if r.key == dst {
			return fw.notBack(r.port, in)
		}
	}
	if fw.macs != nil {
		if p, ok := fw.macs[dst]; ok {
			return fw.notBack(p, in)
		}
	}
	if len(fw.prefixes) > 0 {
		if a := d.DstAddr(); a.IsValid() {
			for _, r := range fw.prefixes {
				if r.Prefix.Contains(a) {
					return fw.notBack(r.Port, in)
				}
			}
		}
	}
	if fw.fdb != nil {
		if p := fw.fdb.lookup(f[0:6], dst, now); p >= 0 {
			return fw.notBack(p, in)
		}
	}
	return fw.flood(in, now)
}

// flood returns flood, or stormed when port in has flooded its rate.
func (fw *forwarder) flood(in int, now int64) int {
	if fw.storm != nil && !fw.storm[in].allow(now) {
		return stormed
	}
	return flood
}

// notBack filters a frame whose destination sits behind its ingress port,
// as an L2 switch does.
func (fw *forwarder) notBack(p, in int) int {
	if p == in {
		return noPort
	}
	return p
}
