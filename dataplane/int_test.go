package dataplane_test

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/intmd"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// intPort is the UDP destination port the INT tests' packets carry INT
// headers to.
const intPort = 4790

// intFrame is a frame from host 0 to host 1 to intPort whose UDP payload
// starts with INT headers asking up to hops hops for HPCC's fields, size
// bytes in all; seq, in the payload after the headers, tells frames apart.
func intFrame(tb testing.TB, hops, size int, seq uint16) []byte {
	tb.Helper()
	h, err := intmd.NewHeader(intmd.HPCCInstructions, intmd.HPCCDSInstructions, max(hops, 1))
	if err != nil {
		tb.Fatal(err)
	}
	h.RemainingHops = uint8(hops)
	return intFrameOf(tb, h, size, seq)
}

// intFrameOf is intFrame with INT headers h.
func intFrameOf(tb testing.TB, h intmd.Header, size int, seq uint16) []byte {
	tb.Helper()
	pl := make([]byte, intmd.HeaderLen+2)
	h.Put(pl)
	binary.BigEndian.PutUint16(pl[intmd.HeaderLen:], seq)
	return dataplanetest.Frame(tb, 0, 1, packettest.Options{SrcPort: 1000, DstPort: intPort, ECN: packet.ECT0, Size: size, Payload: pl})
}

// intTap keeps every egress event's time and INT outcome, by the frame's
// sequence number (intFrame's).
type intTap struct {
	at  map[uint16]int64
	out map[uint16]dataplane.INTOutcome
}

func (t *intTap) Record(ev *dataplane.Event) {
	if ev.Kind != dataplane.EventEgress || len(ev.Frame) < 14+20+8+intmd.HeaderLen+2 {
		return
	}
	_, stack, err := intmd.Parse(ev.Frame[14+20+8:])
	if err != nil {
		return
	}
	seq := binary.BigEndian.Uint16(ev.Frame[14+20+8+intmd.HeaderLen+len(stack):])
	t.at[seq], t.out[seq] = ev.Time, ev.INT
}

// checksums fails tb unless gopacket, decoding f and serialising it again
// with lengths and checksums recomputed, gets f back byte for byte.
func checksums(tb testing.TB, f []byte) {
	tb.Helper()
	p := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
	eth, _ := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	udp, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if eth == nil || ip == nil || udp == nil {
		tb.Fatalf("gopacket finds no Ethernet/IPv4/UDP in % x", f)
	}
	_ = udp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, udp, gopacket.Payload(udp.Payload)); err != nil {
		tb.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes()[:len(f)], f) {
		tb.Fatalf("lengths or checksums wrong:\nframe    % x\ngopacket % x", f, buf.Bytes()[:len(f)])
	}
}

// TestINTRecords: a port with INT adds one HPCC record to each packet that
// carries INT headers, as it leaves the port's virtual line: the egress
// time is the departure the tap sees, the queue occupancy is what the
// burst left behind it, TX bytes count what the line sent before it, the
// rate is the shaper's, and lengths and checksums are gopacket's. Between
// any two records the line's rate (ΔTX bytes over Δtime) is the shaper's,
// once the bucket's burst is spent: HPCC's txRate (§3.2). A packet
// without room and one with no hops left go out without a record, M or E
// set; packets to another port, and ones to the INT port whose INT
// headers are garbage, go out untouched; and the buffer gives back
// exactly what it took though the frames grew.
func TestINTRecords(t *testing.T) {
	const rate, n, size = 1_000_000_000, 20, 1000
	cfg := dataplanetest.Config(2, 1, rate, 1<<20)
	cfg.Forwarding.MACs = []dataplane.MACRule{{MAC: dataplanetest.HardwareAddr(1), Port: 1}}
	cfg.Ports[1].INT = &dataplane.INT{Port: intPort, NodeID: 9}
	r := dataplanetest.New(t, cfg, memport.Link{})
	tap := &intTap{at: map[uint16]int64{}, out: map[uint16]dataplane.INTOutcome{}}
	if err := r.Switch.AddTap(1, tap); err != nil {
		t.Fatal(err)
	}
	var sent [][]byte
	for i := range n {
		sent = append(sent, intFrame(t, 2, size, uint16(i)))
	}
	full := intFrame(t, 2, 1514-20, n) // 20 bytes below the MTU: no room for 24
	spent := intFrame(t, 0, size, n+1) // no hops remaining
	plain := dataplanetest.Frame(t, 0, 1, packettest.Options{DstPort: 53, Size: size})
	junk := dataplanetest.Frame(t, 0, 1, packettest.Options{DstPort: intPort, Size: size})
	sent = append(sent, full, spent, plain, junk)
	r.Send(0, sent...)
	var got [][]byte
	for i := 0; i < 1000 && len(got) < len(sent); i++ {
		r.Step(10_000, 1000)
		got = append(got, r.Recv(1)...)
	}
	if len(got) != len(sent) {
		t.Fatalf("%d of %d frames arrived", len(got), len(sent))
	}

	wire := size + 24 // a frame with its record, as the shaper counts it (no overhead)
	var prev intmd.Hop
	for i, f := range got[:n] {
		checksums(t, f)
		if len(f) != wire {
			t.Fatalf("frame %d: %d bytes, want %d", i, len(f), wire)
		}
		h, stack, err := intmd.Parse(f[14+20+8:])
		if err != nil || h.Hops() != 1 || h.RemainingHops != 1 || h.Flags != 0 {
			t.Fatalf("frame %d: %+v, %d records, %v", i, h, h.Hops(), err)
		}
		seq := binary.BigEndian.Uint16(f[14+20+8+intmd.HeaderLen+len(stack):])
		hop, _ := h.Hop(stack, 0)
		want := intmd.Hop{
			Instructions: intmd.HPCCInstructions, DSInstr: intmd.HPCCDSInstructions,
			QueueBytes: uint32((n-1-i+3)*size + 1514 - 20), // the burst behind it (full, spent, plain and junk too), not yet grown
			EgressTS:   uint64(tap.at[seq]), TxBytes: uint64(i * wire), LinkRateKbps: rate / 1000,
		}
		if int(seq) != i || hop != want || tap.out[seq] != dataplane.INTAdded {
			t.Fatalf("frame %d (seq %d, %v): record\n%+v\nwant\n%+v", i, seq, tap.out[seq], hop, want)
		}
		if i >= 4 { // past the bucket's burst (three frames, then its debt): the line runs at the shaper's rate
			dtx, dts := float64(hop.TxBytes-prev.TxBytes), float64(hop.EgressTS-prev.EgressTS)
			if got := dtx * 8e9 / dts; got < rate*0.999 || got > rate*1.001 {
				t.Errorf("records %d and %d: txRate %.0f bit/s, want %d", i-1, i, got, rate)
			}
		}
		prev = hop
	}
	for i, want := range []uint8{intmd.FlagM, intmd.FlagE} {
		f := got[n+i]
		checksums(t, f)
		h, _, err := intmd.Parse(f[14+20+8:])
		if err != nil || h.Hops() != 0 || h.Flags != want || len(f) != len(sent[n+i]) {
			t.Errorf("frame %d: %+v, %v; want no record and flags %#x", n+i, h, err, want)
		}
	}
	for i := n + 2; i < len(sent); i++ {
		if !bytes.Equal(got[i], sent[i]) {
			t.Errorf("frame %d changed on its way", i)
		}
	}

	st := r.Switch.Stats()
	ist := st.Ports[1].INT
	wantStats := dataplane.INTStats{Added: n, NoRoom: 1, HopLimit: 1, Malformed: 1, Limit: 1514,
		TxBytes: uint64(n*wire + (1514 - 20) + 3*size)}
	if ist == nil || *ist != wantStats {
		t.Fatalf("INT stats %+v, want %+v", ist, wantStats)
	}
	if st.Ports[0].INT != nil {
		t.Errorf("INT stats on the port without INT: %+v", st.Ports[0].INT)
	}
	if st.Ports[1].Bytes != 0 || st.Pools[0].Bytes != 0 {
		t.Errorf("buffer holds %d bytes on the port, %d in the pool after the last packet left", st.Ports[1].Bytes, st.Pools[0].Bytes)
	}
	if a := r.Switch.Account(); !a.Balanced() || a.Transmitted != uint64(len(sent)) {
		t.Errorf("accounting %+v, want %d transmitted and balanced", a, len(sent))
	}
}

// TestINTByDSCP: a port whose INT is marked by DSCP adds records to the
// packets with that DSCP, whatever their port, and to no others.
func TestINTByDSCP(t *testing.T) {
	dscp := uint8(34)
	cfg := dataplanetest.Config(2, 1, 1e9, 1<<20)
	cfg.Forwarding.MACs = []dataplane.MACRule{{MAC: dataplanetest.HardwareAddr(1), Port: 1}}
	cfg.Ports[1].INT = &dataplane.INT{DSCP: &dscp}
	r := dataplanetest.New(t, cfg, memport.Link{})
	h, _ := intmd.NewHeader(intmd.InstrEgressTS, 0, 1)
	pl := make([]byte, intmd.HeaderLen)
	h.Put(pl)
	marked := dataplanetest.Frame(t, 0, 1, packettest.Options{DstPort: 9, DSCP: dscp, Payload: pl, Size: 200})
	other := dataplanetest.Frame(t, 0, 1, packettest.Options{DstPort: 9, DSCP: 10, Payload: pl, Size: 200})
	r.Send(0, marked, other)
	var got [][]byte
	for i := 0; i < 100 && len(got) < 2; i++ {
		r.Step(10_000, 1000)
		got = append(got, r.Recv(1)...)
	}
	if len(got) != 2 || len(got[0]) != 208 || !bytes.Equal(got[1], other) {
		t.Fatalf("got frames of %d bytes; want the marked one grown by 8, the other untouched", len(got))
	}
	checksums(t, got[0])
}

// TestINTValidate: what a port's INT may not be, by the key it names.
func TestINTValidate(t *testing.T) {
	big := uint8(64)
	for _, c := range []struct {
		name string
		int  dataplane.INT
		rate int64
		want string
	}{
		{"nothing carries it", dataplane.INT{}, 1e9, "neither port nor dscp"},
		{"dscp", dataplane.INT{DSCP: &big}, 1e9, "int.dscp: 64 outside [0, 63]"},
		{"unshaped", dataplane.INT{Port: 1}, 0, "unshaped"},
	} {
		cfg := dataplanetest.Config(2, 1, c.rate, 1<<20)
		cfg.Ports[1].INT = &c.int
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "ports[1]") {
			t.Errorf("%s: Validate = %v, want ports[1] … %q", c.name, err, c.want)
		}
	}
}

// TestINTComposes: INT works under every scheduler, a DualQ port's
// included, beside an enqueue marker and a delay line: every INT packet
// gets a record naming the queue it left.
func TestINTComposes(t *testing.T) {
	for _, kind := range []scheduler.Kind{scheduler.SP, scheduler.WRR, scheduler.DWRR, scheduler.WFQ, scheduler.DualQ} {
		t.Run(kind.String(), func(t *testing.T) {
			cfg := dataplanetest.Config(2, 2, 1e9, 1<<20)
			cfg.Forwarding.MACs = []dataplane.MACRule{{MAC: dataplanetest.HardwareAddr(1), Port: 1}}
			p := &cfg.Ports[1]
			p.Scheduler = scheduler.Config{Kind: kind, NumQueues: 2, LineRate: 1e9}
			if kind == scheduler.DualQ {
				p.Scheduler.NumQueues = 0
			} else {
				p.Enqueue = []dataplane.MarkerSpec{{Name: "red", New: func(q int) (marking.Marker, error) {
					return marking.NewRED(marking.CutOff(marking.MeasureQueue, marking.Bytes(5000)), marking.Enqueue, q)
				}}}
			}
			p.Delay = dataplane.Delay{Fixed: 10 * time.Microsecond}
			p.INT = &dataplane.INT{Port: intPort}
			r := dataplanetest.New(t, cfg, memport.Link{})
			var sent [][]byte
			for i := range 20 {
				f := intFrame(t, 1, 600, uint16(i))
				if i%2 == 1 { // DSCP 8: queue 1 by the class selector; ECT(1): the DualQ's L4S queue
					f = dataplanetest.Frame(t, 0, 1, packettest.Options{SrcPort: 1000, DstPort: intPort, DSCP: 8, ECN: packet.ECT1, Size: 600, Payload: f[42 : 42+intmd.HeaderLen+2]})
				}
				sent = append(sent, f)
			}
			r.Send(0, sent...)
			var got [][]byte
			for i := 0; i < 200 && len(got) < len(sent); i++ {
				r.Step(10_000, 1000)
				got = append(got, r.Recv(1)...)
			}
			queues := map[uint8]int{}
			for _, f := range got {
				h, stack, err := intmd.Parse(f[42:])
				if err != nil || h.Hops() != 1 {
					t.Fatalf("%d records, %v", h.Hops(), err)
				}
				hop, _ := h.Hop(stack, 0)
				queues[hop.QueueID]++
				checksums(t, f)
			}
			if len(got) != len(sent) || queues[0] != 10 || queues[1] != 10 {
				t.Fatalf("%d of %d frames, by queue %v; want 10 records from each queue", len(got), len(sent), queues)
			}
		})
	}
}
