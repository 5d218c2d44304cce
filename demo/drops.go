package demo

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/packet"
)

// PacketKind is what a dropped packet was, as DropTap tells them apart:
// enough to see whether a drop was a marker's effect on the traffic under
// test or befell a packet the marker does not judge (a Not-ECT SYN, a
// host's MLD report).
type PacketKind uint8

// Packet kinds.
const (
	KindTCPECT       PacketKind = iota // TCP, ECN-capable (every segment of a DCTCP connection)
	KindTCPSYNNotECT                   // a TCP SYN without ECT (cubic's, with tcp_ecn = 1)
	KindTCPNotECT                      // other TCP without ECT: bare FINs, pure ACKs, a connection without ECN
	KindUDPECT                         // UDP, ECN-capable
	KindUDPNotECT                      // UDP without ECT
	KindICMPv6                         // ICMPv6: the hosts' MLD reports and neighbour discovery
	KindARP                            // ARP
	KindOther                          // anything else
	NumKinds
)

var kindNames = [NumKinds]string{"TCP ECT", "TCP SYN Not-ECT", "TCP Not-ECT", "UDP ECT", "UDP Not-ECT", "ICMPv6 (MLD, ND)", "ARP", "other"}

// String returns the kind as a report names it.
func (k PacketKind) String() string {
	if k < NumKinds {
		return kindNames[k]
	}
	return "unknown"
}

// kindOf returns what the packet of d is.
func kindOf(d *packet.Desc) PacketKind {
	ect := d.ECN != packet.NotECT
	switch {
	case d.EtherType == 0x0806:
		return KindARP
	case d.L3 == packet.L3None:
		return KindOther
	case d.L3 == packet.L3IPv6 && (d.Proto == 58 || d.Proto == 0 && hopByHop(d) == 58):
		return KindICMPv6 // MLD reports come behind a hop-by-hop header (RFC 3810 §5)
	case d.Proto == 17 && ect:
		return KindUDPECT
	case d.Proto == 17:
		return KindUDPNotECT
	case d.Proto != 6:
		return KindOther
	case ect:
		return KindTCPECT
	}
	if f := d.Frame(); d.L4Off > 0 && int(d.L4Off)+13 < len(f) && f[d.L4Off+13]&0x02 != 0 {
		return KindTCPSYNNotECT
	}
	return KindTCPNotECT
}

// hopByHop returns the next header after the IPv6 hop-by-hop options
// header of d, or 255 if the frame is too short to hold it.
func hopByHop(d *packet.Desc) uint8 {
	f, off := d.Frame(), int(d.L3Off)+40
	if off >= len(f) {
		return 255
	}
	return f[off]
}

// DropTap counts the packets a switch drops, by reason and by kind, and by
// reason and DSCP: set it on every port (AddTap), and read Drops. It runs
// on the workers for every event of its ports and counts only drops, with
// atomic adds: no lock, no allocation.
type DropTap struct {
	kind [dataplane.NumDropReasons][NumKinds]atomic.Uint64
	dscp [dataplane.NumDropReasons][64]atomic.Uint64
}

// Record implements dataplane.Tap.
func (t *DropTap) Record(ev *dataplane.Event) {
	if ev.Kind != dataplane.EventDrop || int(ev.Drop) >= dataplane.NumDropReasons {
		return
	}
	t.kind[ev.Drop][kindOf(ev.Desc)].Add(1)
	t.dscp[ev.Drop][ev.Desc.DSCP&63].Add(1)
}

// Drops returns the counts so far.
func (t *DropTap) Drops() Drops {
	var d Drops
	for r := range t.kind {
		for k := range t.kind[r] {
			d.ByKind[r][k] = t.kind[r][k].Load()
		}
		for c := range t.dscp[r] {
			d.ByDSCP[r][c] = t.dscp[r][c].Load()
		}
	}
	return d
}

// Tapper is a switch that takes taps (node's does).
type Tapper interface {
	AddTap(port int, t dataplane.Tap) error
}

// TapEveryPort sets t on every port of sw: n ports.
func TapEveryPort(sw Tapper, n int, t dataplane.Tap) error {
	for p := range n {
		if err := sw.AddTap(p, t); err != nil {
			return err
		}
	}
	return nil
}

// Drops are counts of dropped packets by reason and kind, and by reason
// and DSCP, over all the ports of a DropTap.
type Drops struct {
	ByKind [dataplane.NumDropReasons][NumKinds]uint64
	ByDSCP [dataplane.NumDropReasons][64]uint64
}

// Sub returns d − e: what was dropped between two readings.
func (d Drops) Sub(e Drops) Drops {
	for r := range d.ByKind {
		for k := range d.ByKind[r] {
			d.ByKind[r][k] -= e.ByKind[r][k]
		}
		for c := range d.ByDSCP[r] {
			d.ByDSCP[r][c] -= e.ByDSCP[r][c]
		}
	}
	return d
}

// Add returns d + e.
func (d Drops) Add(e Drops) Drops {
	for r := range d.ByKind {
		for k := range d.ByKind[r] {
			d.ByKind[r][k] += e.ByKind[r][k]
		}
		for c := range d.ByDSCP[r] {
			d.ByDSCP[r][c] += e.ByDSCP[r][c]
		}
	}
	return d
}

// Total returns every drop.
func (d Drops) Total() uint64 {
	var n uint64
	for r := range d.ByKind {
		for _, v := range d.ByKind[r] {
			n += v
		}
	}
	return n
}

// overflowReasons are the drops for want of room: what a buffer too
// small for the burst causes, whatever a marker does.
var overflowReasons = []dataplane.DropReason{
	dataplane.DropPoolFull, dataplane.DropDynamicThreshold, dataplane.DropStaticCap,
	dataplane.DropQueueFull, dataplane.DropDelayFull,
}

// Overflow returns the drops for want of room (a full pool, a queue at its
// Dynamic Threshold or static cap, a full descriptor ring or delay line)
// of packets of DSCP dscp, or of any DSCP when dscp is negative.
func (d Drops) Overflow(dscp int) uint64 {
	var n uint64
	for _, r := range overflowReasons {
		if dscp >= 0 {
			n += d.ByDSCP[r][dscp&63]
			continue
		}
		for _, v := range d.ByKind[r] {
			n += v
		}
	}
	return n
}

// Marker returns the drops a marker made, of packets of kind k.
func (d Drops) Marker(k PacketKind) uint64 {
	return d.ByKind[dataplane.DropEnqueueMarker][k] + d.ByKind[dataplane.DropDequeueMarker][k]
}

// NotECT returns the marker drops of packets that were not ECN-capable:
// packets a marker would have marked, dropped because they could not
// carry the mark (marking.NonECTDrop). They are no marker's effect on
// the traffic under test.
func (d Drops) NotECT() uint64 {
	var n uint64
	for k := range NumKinds {
		if k != KindTCPECT && k != KindUDPECT {
			n += d.Marker(k)
		}
	}
	return n
}

// String lists the drops by reason and kind: "dequeue_marker: 2 ICMPv6
// (MLD, ND); pool_full: 31 TCP ECT", or "none".
func (d Drops) String() string {
	var rs []string
	for r := range d.ByKind {
		var ks []string
		for k, v := range d.ByKind[r] {
			if v > 0 {
				ks = append(ks, fmt.Sprintf("%d %s", v, PacketKind(k)))
			}
		}
		if len(ks) > 0 {
			rs = append(rs, dataplane.DropReason(r).String()+": "+strings.Join(ks, ", "))
		}
	}
	if len(rs) == 0 {
		return "none"
	}
	return strings.Join(rs, "; ")
}
