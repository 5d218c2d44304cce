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

	Patches  []Patch
	MACs     []MACRule
	Prefixes []PrefixRule
}

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
	patch    []int16 // by ingress port; -1 when none
	macs     map[uint64]int
	prefixes []PrefixRule // longest first
	fdb      *fdb         // nil when learning is off
	nports   int
}

// noPort is the egress of a frame that goes nowhere.
const (
	noPort = -1
	flood  = -2
)

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
	return nil
}

func newForwarder(f Forwarding, nports int) (*forwarder, error) {
	if err := f.validate(nports); err != nil {
		return nil, err
	}
	fw := &forwarder{patch: make([]int16, nports), macs: map[uint64]int{}, nports: nports}
	for i := range fw.patch {
		fw.patch[i] = noPort
	}
	for _, p := range f.Patches {
		fw.patch[p.From] = int16(p.To)
	}
	for _, m := range f.MACs {
		fw.macs[macKey(m.MAC)] = m.Port
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
		fw.fdb = newFDB(size, int64(age))
	}
	return fw, nil
}

// route returns the egress port of a parsed frame, flood, or noPort. It
// learns the source MAC as a side effect.
func (fw *forwarder) route(d *packet.Desc, now int64) int {
	f := d.Frame()
	in := int(d.InPort)
	dst, src := macKey(f[0:6]), macKey(f[6:12])
	if fw.fdb != nil && f[6]&1 == 0 {
		fw.fdb.learn(src, in, now)
	}
	if p := fw.patch[in]; p != noPort {
		return int(p)
	}
	if f[0]&1 != 0 { // broadcast and multicast
		return flood
	}
	if len(fw.macs) > 0 {
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
		if p := fw.fdb.lookup(dst, now); p >= 0 {
			return fw.notBack(p, in)
		}
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
