// Package packet holds the packet descriptor that travels through the switch,
// zero-copy header parsing, and CE marking with checksum update.
//
// packet is the leaf of ecnswitch: it imports nothing of ours, and every other
// package speaks in terms of *Desc. Times are int64 monotonic nanoseconds so
// that the descriptor stays small and free of time.Time.
package packet

// ECN is the two-bit ECN codepoint of the IP header (RFC 3168 §5).
type ECN uint8

// ECN codepoints.
const (
	NotECT ECN = 0b00 // not ECN-capable transport
	ECT1   ECN = 0b01 // ECN-capable transport, ECT(1)
	ECT0   ECN = 0b10 // ECN-capable transport, ECT(0)
	CE     ECN = 0b11 // congestion experienced
)

// IsECT reports whether the codepoint is ECT(0) or ECT(1), the codepoints a
// marker may turn into CE.
func (e ECN) IsECT() bool { return e == ECT0 || e == ECT1 }

func (e ECN) String() string {
	switch e {
	case NotECT:
		return "Not-ECT"
	case ECT1:
		return "ECT(1)"
	case ECT0:
		return "ECT(0)"
	default:
		return "CE"
	}
}

// L3 names the network-layer protocol Parse found.
type L3 uint8

// Network-layer protocols.
const (
	L3None L3 = iota // not parsed yet, or an EtherType ecnswitch does not parse
	L3IPv4           // IPv4
	L3IPv6           // IPv6
	L3ARP            // ARP, passed through unparsed
)

// Desc describes one frame held by the switch. The frame bytes live in a
// fixed arena slot (Buf) owned by whoever handed the descriptor out; Desc
// itself never allocates.
//
// Parse fills the header fields; the dataplane fills ports, queue and times.
type Desc struct {
	// Buf is the arena slot holding the frame; the frame is Buf[:Len].
	Buf []byte
	// Len is the frame length in bytes, without FCS.
	Len int

	// RxTime is the ingress timestamp: the NIC's when the port provides one,
	// else the dataplane's clock when the batch was received.
	RxTime int64
	// EnqTime is when the packet entered its egress queue; sojourn = now − EnqTime.
	EnqTime int64
	// TxTime is when the packet was handed to the egress port.
	TxTime int64

	InPort  uint16 // ingress port index
	OutPort uint16 // egress port index, set by forwarding
	Queue   uint8  // egress queue index, set by classification

	L3    L3     // network-layer protocol
	DSCP  uint8  // differentiated services codepoint (6 bits)
	ECN   ECN    // ECN codepoint as received (or as marked)
	Proto uint8  // IP protocol / IPv6 next header (after no extension headers)
	PCP   uint8  // 802.1Q priority code point of the outer tag, 0 if untagged
	VLAN  uint16 // 802.1Q VLAN id of the outer tag, 0 if untagged
	Tags  uint8  // number of VLAN tags (0, 1 or 2)

	EtherType uint16 // EtherType after any VLAN tags
	L3Off     uint16 // offset of the network header in the frame
	L4Off     uint16 // offset of the transport header; 0 if none was parsed
	SrcPort   uint16 // TCP/UDP source port, 0 if none
	DstPort   uint16 // TCP/UDP destination port, 0 if none

	// MarkedBy records which marker set CE, for capture and telemetry: 0
	// when none did, else 1 + the marker's index in its port's list of
	// markers (enqueue chain first, then dequeue chain). MarkValue and
	// MarkThreshold are what that marker compared (bytes or ns).
	MarkedBy uint8
	// Trimmed says Trim cut the packet (or, already short, marked it):
	// it left the switch as a trimmed header.
	Trimmed bool
	// Charged is the length the switch's buffer accounted for the packet
	// when it admitted it, and gives back when the packet leaves its queue:
	// a stage that changes Len in between (a frame extended by telemetry)
	// cannot unbalance the buffer.
	Charged       uint32
	MarkValue     int64
	MarkThreshold int64
}

// Frame returns the frame bytes.
func (d *Desc) Frame() []byte { return d.Buf[:d.Len] }

// ResetHeaders clears every field Parse sets, leaving Buf, Len, ports and times.
func (d *Desc) ResetHeaders() {
	d.L3, d.DSCP, d.ECN, d.Proto, d.PCP, d.VLAN, d.Tags = L3None, 0, NotECT, 0, 0, 0, 0
	d.EtherType, d.L3Off, d.L4Off, d.SrcPort, d.DstPort = 0, 0, 0, 0, 0
	d.MarkedBy, d.MarkValue, d.MarkThreshold, d.Trimmed = 0, 0, 0, false
}
