package capture

import (
	"testing"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/packet/intmd"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports/memport"
)

// TestINTComment: the pcapng comment of a packet leaving a port with INT
// decodes the records its INT headers carry, newest first, the switch's
// own included; one without room says so, and a snap length that cuts
// the records says that too.
func TestINTComment(t *testing.T) {
	cfg := dataplanetest.Config(2, 1, 1e9, 1<<20)
	cfg.Forwarding.MACs = []dataplane.MACRule{{MAC: dataplanetest.HardwareAddr(1), Port: 1}}
	cfg.Ports[1].INT = &dataplane.INT{Port: 4790, NodeID: 7}
	r := dataplanetest.New(t, cfg, memport.Link{})
	m := New(r.Switch, r.Clock, Options{Dir: t.TempDir(), Wall: fixedWall})
	full, err := m.Start(Spec{Port: "b", Path: "int.pcapng"})
	if err != nil {
		t.Fatal(err)
	}
	snapped, err := m.Start(Spec{Port: "b", Path: "snap.pcapng", SnapLen: 64})
	if err != nil {
		t.Fatal(err)
	}
	// A record of an upstream hop is already on the stack: node, ports,
	// queue, egress time.
	h, err := intmd.NewHeader(intmd.InstrNodeID|intmd.InstrL1Ports|intmd.InstrQueue|intmd.InstrEgressTS, intmd.DSTxBytes|intmd.DSLinkRate, 3)
	if err != nil {
		t.Fatal(err)
	}
	up := []byte{0, 0, 0, 3, 0, 1, 0, 2, 5, 0, 0x27, 0x10, 0, 0, 0, 0, 0, 0, 0x30, 0x39, 0, 0, 0, 0, 0, 0, 0, 99, 0, 0x0f, 0x42, 0x40}
	h.Length += uint8(len(up) / 4)
	h.RemainingHops--
	pl := make([]byte, intmd.HeaderLen, 200)
	h.Put(pl)
	pl = append(pl, up...)
	fit := dataplanetest.Frame(t, 0, 1, packettest.Options{DstPort: 4790, Payload: pl, Size: 300})
	tight := dataplanetest.Frame(t, 0, 1, packettest.Options{DstPort: 4790, Payload: pl, Size: 1514 - 10})
	r.Send(0, fit, tight)
	r.Drain(1000)
	st, _ := m.Stop(full)
	ps := readPcapng(t, st.File, DefaultSnapLen)
	want := []string{
		"egress port b queue 0: sent unmarked; sojourn 0.000us; INT (switch clock virtual): added, 1 hops left; records, newest first: " +
			"{node 7, ports 0→1, queue 0: 1504 B, t 1000 ns, tx 0 B, 1000 Mbit/s} {node 3, ports 1→2, queue 5: 10000 B, t 12345 ns, tx 99 B, 1000 Mbit/s}",
		"egress port b queue 0: sent unmarked; sojourn 0.000us; INT (switch clock virtual): no room for this hop's record, 2 hops left, M (a hop had no room); " +
			"records, newest first: {node 3, ports 1→2, queue 5: 10000 B, t 12345 ns, tx 99 B, 1000 Mbit/s}",
	}
	if len(ps) != len(want) {
		t.Fatalf("%d packets captured, want %d", len(ps), len(want))
	}
	for i, p := range ps {
		if p.comment != want[i] {
			t.Errorf("packet %d's comment:\n got %q\nwant %q", i, p.comment, want[i])
		}
	}
	st, _ = m.Stop(snapped)
	ps = readPcapng(t, st.File, 64)
	if len(ps) != 2 || ps[0].comment != "egress port b queue 0: sent unmarked; sojourn 0.000us; INT (switch clock virtual): added; records beyond the snap length" {
		t.Errorf("snapped: %d packets, the first's comment %q", len(ps), ps[0].comment)
	}
}
