package experiment

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/testbed"
	"github.com/ecnswitch/ecnswitch/testbed/testbedtest"
	"github.com/ecnswitch/ecnswitch/transport"
	"github.com/ecnswitch/ecnswitch/transport/udp"
)

// A short run of each congestion control through ecnswitch on the demo's
// testbed: every packet the receiver took is one its sender sent, the
// sender's cumulative ACK never passes what was delivered, the tap saw the
// flows' packets, and the port's marks reached the receiver (none on
// DX's). Rates are not asserted.
func TestDXFlowsThroughSwitch(t *testing.T) {
	b := testBed(t, dxOptions())
	// WorkerRX: the hosts' receive processing is not steered (RPS).
	for _, h := range b.hosts() {
		out, err := exec.Command("ip", "netns", "exec", h.Netns, "cat", "/sys/class/net/"+h.HostIf+"/queues/rx-0/rps_cpus").Output()
		if err != nil {
			t.Fatalf("%s: rps_cpus: %v", h.Name, err)
		}
		if m := strings.Trim(strings.TrimSpace(string(out)), "0,"); m != "" {
			t.Errorf("%s: rps_cpus %s, want 0: the hosts' receive processing stays on the worker's CPU", h.Name, strings.TrimSpace(string(out)))
		}
	}
	for _, cc := range []transport.Kind{transport.KindDX, transport.KindDCTCP} {
		// Paced at 100 Mbit/s each: light on the CPU the other packages'
		// tests share.
		r, err := runDXFlows(context.Background(), b, cc, dxHeadrooms[0], 2, 100e6, 300*time.Millisecond, 300*time.Millisecond)
		if err != nil {
			t.Fatalf("%s: %v", cc, err)
		}
		if len(r.senders) != 2 || len(r.received) != 2 {
			t.Fatalf("%s: %d senders, receiver saw %d flows; want 2, 2", cc, len(r.senders), len(r.received))
		}
		var marks, ce uint64
		for i, s := range r.senders {
			f := r.received[i]
			got := f.Packets + f.Duplicates + f.OutOfOrder
			if f.Flow != uint32(i+1) || f.Packets == 0 || got > s.Sent || s.Acked > f.Packets {
				t.Errorf("%s flow %d: sent %d, acked %d; receiver (flow %d) delivered %d, %d duplicates, %d out of order",
					cc, i+1, s.Sent, s.Acked, f.Flow, f.Packets, f.Duplicates, f.OutOfOrder)
			}
			if f.NotECT != 0 || f.Unstamped != 0 || s.Unstamped != 0 || s.Malformed != 0 {
				t.Errorf("%s flow %d: %d not ECT, %d unstamped at the receiver; %d unstamped, %d malformed ACKs",
					cc, i+1, f.NotECT, f.Unstamped, s.Unstamped, s.Malformed)
			}
			marks += s.Marks
			ce += f.CE
		}
		if marks > ce {
			t.Errorf("%s: senders saw %d CE echoes of %d CE packets", cc, marks, ce)
		}
		if len(r.sojourn) == 0 || slices.Min(r.sojourn) < 0 {
			t.Errorf("%s: the tap kept %d packets (min sojourn %d)", cc, len(r.sojourn), slices.Min(append(r.sojourn, 0)))
		}
		// Every mark the port set in the window reached the receiver; DX's
		// port has no marker.
		if r.marks > ce || cc == transport.KindDX && ce != 0 {
			t.Errorf("%s: the port marked %d packets in the window, the receiver saw %d CE", cc, r.marks, ce)
		}
		if cc == transport.KindDX && len(r.errs) == 0 {
			t.Errorf("dx: no sample matched a switch sojourn")
		}
	}
}

// testBed brings up the demo's testbed with o on a subnet and names of the
// test's own, as root (it skips otherwise), and takes it down when the
// test ends.
func testBed(t *testing.T, o demo.Options) *bed {
	t.Helper()
	testbedtest.SkipIfNotRoot(t)
	id, err := testbed.RandomID()
	if err != nil {
		t.Fatal(err)
	}
	b, down, err := Env{Subnet: testbedtest.Subnet(t, ""), ID: id}.up(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := down(); err != nil {
			t.Error(err)
		}
	})
	return b
}

func TestUDPData(t *testing.T) {
	frame := func(typ udp.Type) []byte {
		f := packettest.UDP4(t, packettest.Options{Size: 14 + 20 + 8 + udp.DefaultSize})
		(&udp.Header{Type: typ, Flow: 7, Seq: 1234}).Put(f[14+20+8:])
		return f
	}
	f := frame(udp.TypeData)
	if flow, seq, ok := udpData(f); !ok || flow != 7 || seq != 1234 {
		t.Errorf("udpData = %d, %d, %v; want 7, 1234, true", flow, seq, ok)
	}
	if _, _, ok := udpData(frame(udp.TypeAck)); ok {
		t.Error("udpData took an ACK for data")
	}
	if _, _, ok := udpData(f[:50]); ok {
		t.Error("udpData took a truncated frame")
	}
}

// An ACK covering packets 3–5 of flow 2 matches the switch's mean sojourn
// of those three, and nothing when the tap missed one of them.
func TestMeanSojourn(t *testing.T) {
	sj := map[uint64]int64{2<<48 | 3: 10, 2<<48 | 4: 20, 2<<48 | 5: 60, 1<<48 | 4: 1000, 2<<48 | 7: 5}
	if got, ok := meanSojourn(sj, 2, flowSample{seq: 5, n: 3}); !ok || got != 30 {
		t.Errorf("packets 3–5: %d, %v; want 30, true", got, ok)
	}
	if got, ok := meanSojourn(sj, 2, flowSample{seq: 5, n: 1}); !ok || got != 60 {
		t.Errorf("packet 5: %d, %v; want 60, true", got, ok)
	}
	for _, s := range []flowSample{{seq: 7, n: 2}, {seq: 1, n: 3}, {seq: 5, n: 0}} {
		if got, ok := meanSojourn(sj, 2, s); ok {
			t.Errorf("%+v: %d, true; want no match", s, got)
		}
	}
}

// The claims follow the runs: a DX queue a tenth of DCTCP's holds every
// delay claim; DX at 80% of DCTCP's busy fails the utilisation claim. The
// claims take DX at the smallest headroom whose run is comparable: with 2
// flows the first headroom's run is not (90% busy, and a queue as long as
// DCTCP's), the second's is.
func TestDXClaims(t *testing.T) {
	var runs []*dxRun
	for _, rate := range dxRates {
		for _, n := range dxFlows {
			for i, k := range dxKinds() {
				cc := k.cc
				r := &dxRun{rate: rate, cc: cc, headroom: k.headroom, flows: n, busy: 0.99}
				d := int64(10_000 * (i + 1))
				switch {
				case cc == transport.KindDCTCP:
					d = 100_000
				case n == 10:
					r.busy = 0.8
				case i == 0:
					r.busy, d = 0.9, 100_000
				}
				for i := range 100 {
					r.sojourn = append(r.sojourn, d+int64(i))
					r.at = append(r.at, int64(i)*1000)
				}
				runs = append(runs, r)
			}
		}
	}
	rep, err := dxReport(Env{Command: "test"}, demo.Options{Rate: demo.DefaultRate, Buffer: demo.DefaultBuffer}, time.Second, time.Second, runs)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Claims) != 7*len(dxRates) {
		t.Errorf("%d claims, want %d", len(rep.Claims), 7*len(dxRates))
	}
	for _, c := range rep.Claims {
		// Fig. 15's: the larger headroom's queue (20 µs) is shorter than
		// the smaller's (100 µs), which the claim must not call a hold.
		want := !strings.Contains(c.What, "utilisation, DX vs DCTCP, 10 flows") && !strings.Contains(c.What, "headroom")
		if c.Holds() != want {
			t.Errorf("%s: holds %v, want %v (ours %s)", c.What, c.Holds(), want, c.Ours)
		}
	}
	if err := rep.Write(t.TempDir()); err != nil {
		t.Fatal(err)
	}
}
