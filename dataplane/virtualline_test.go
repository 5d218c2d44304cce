package dataplane_test

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports/memport"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/virtualline.golden from a run polled every nanosecond")

// lineRecorder writes one line per packet event of the egress port: what
// left when (its virtual departure time and sojourn), marked or not and by
// whom, or what was dropped and why. Frames are named by host and
// sequence number (the UDP source port).
type lineRecorder struct{ buf bytes.Buffer }

func (r *lineRecorder) Record(ev *dataplane.Event) {
	f := ev.Frame
	host, seq := f[11], binary.BigEndian.Uint16(f[34:36])
	switch ev.Kind {
	case dataplane.EventEgress:
		ce := packet.ECN(f[15]&3) == packet.CE
		fmt.Fprintf(&r.buf, "egress h%d/%d q%d t=%d sojourn=%d ce=%v %s\n", host&15, seq, ev.Queue, ev.Time, ev.Sojourn, ce, ev.Marker)
	case dataplane.EventDrop:
		fmt.Fprintf(&r.buf, "drop h%d/%d q%d t=%d %s %s\n", host&15, seq, ev.Queue, ev.Time, ev.Drop, ev.Marker)
	}
}

// sendAt is one frame a host puts on its wire at a given time.
type sendAt struct {
	t     int64
	host  int
	frame []byte
}

// lineScenario is a congested egress port in virtual time: hosts 0 and 1
// send to host 2 over 10 Gbit/s wires, host 0 in bursts of 12 MTU frames
// every 150 µs into queue 0, host 1 frames of varying size at irregular
// gaps into queue 1; port c is shaped to 1 Gbit/s (2500-byte bucket) with
// DWRR over the two queues, a 40 KB pool with Dynamic Threshold, RED at
// enqueue (cut-off at 15 KB per queue), TCN at dequeue (60 µs), and a
// delay line of 20 µs plus up to 15 µs of jitter on queue 1. Some frames
// are Not-ECT, so markers drop them. Everything the scenario can make the
// egress path do happens: marks at both stages, marker drops, buffer
// drops, releases from the delay line, idle periods and backlog.
func lineScenario(t *testing.T, coalesce time.Duration) (*dataplanetest.Rig, []sendAt, *lineRecorder) {
	cfg := dataplanetest.Config(3, 2, 1_000_000_000, 40_000)
	cfg.Forwarding.NoLearning = true
	cfg.Forwarding.MACs = []dataplane.MACRule{{MAC: dataplanetest.HardwareAddr(2), Port: 2}}
	c := &cfg.Ports[2]
	c.Enqueue = []dataplane.MarkerSpec{{Name: "red", New: func(q int) (marking.Marker, error) {
		return marking.NewRED(marking.CutOff(marking.MeasureQueue, marking.Bytes(15_000)), marking.Enqueue, q)
	}}}
	c.Dequeue = []dataplane.MarkerSpec{{Name: "tcn", New: func(q int) (marking.Marker, error) {
		return marking.NewTCN(marking.TCNConfig{Threshold: 60_000}, marking.Dequeue, q)
	}}}
	c.Delay.PerQueue = map[int]dataplane.Delay{1: {Fixed: 20 * time.Microsecond, Jitter: 15 * time.Microsecond}}
	c.Delay.Seed = 7
	c.Coalesce = coalesce
	r := dataplanetest.New(t, cfg, memport.Link{Rate: 10_000_000_000, Overhead: 24})
	rec := &lineRecorder{}
	if err := r.Switch.AddTap(2, rec); err != nil {
		t.Fatal(err)
	}

	var sends []sendAt
	frame := func(host, seq, size int, dscp uint8, ecn packet.ECN) []byte {
		return dataplanetest.Frame(t, host, 2, packettest.Options{Size: size, DSCP: dscp, ECN: ecn, SrcPort: uint16(seq), DstPort: 9})
	}
	seq := 0
	for b := 0; b < 20; b++ {
		for i := 0; i < 12; i++ {
			ecn := packet.ECT0
			if seq%7 == 3 {
				ecn = packet.NotECT
			}
			sends = append(sends, sendAt{int64(b) * 150_000, 0, frame(0, seq, 1500, 0, ecn)})
			seq++
		}
	}
	x, at := uint32(12345), int64(0)
	for i := 0; i < 600; i++ {
		x = x*1664525 + 1013904223
		at += 1_000 + int64(x>>16)%19_000
		ecn := packet.ECT0
		if i%5 == 4 {
			ecn = packet.NotECT
		}
		sends = append(sends, sendAt{at, 1, frame(1, i, 200+(i*37)%1300, 8, ecn)})
	}
	return r, sends, rec
}

// runScenario plays the sends at their times, whatever the switch does,
// and polls the switch at the times next gives, until everything has left
// and the wires are empty.
func runScenario(t *testing.T, r *dataplanetest.Rig, sends []sendAt, next func(now int64) int64) {
	t.Helper()
	pending := sends
	pollAt := int64(0)
	for {
		now := r.Clock.Now()
		for len(pending) > 0 && pending[0].t <= now {
			if r.Send(pending[0].host, pending[0].frame) != 1 {
				t.Fatal("wire full")
			}
			pending = pending[1:]
		}
		if now >= pollAt {
			r.Switch.Poll()
			for h := range r.Hosts {
				r.Recv(h)
			}
			idle := len(pending) == 0 && r.Switch.Account().Held == 0
			for h := range r.Hosts {
				idle = idle && r.Ports[h].InFlight() == 0 && r.Hosts[h].InFlight() == 0
			}
			if idle {
				return
			}
			if now > 1_000_000_000 {
				t.Fatal("scenario did not drain in a simulated second")
			}
			pollAt = next(now)
		}
		to := pollAt
		if len(pending) > 0 {
			to = min(to, pending[0].t)
		}
		r.Clock.Set(to)
	}
}

// TestVirtualLineMatchesPerPacketShaper: the egress path's every decision —
// which packet leaves when, its sojourn, CE marks at both stages, drops by
// markers and the buffer — equals what the per-packet shaper of the first
// release did when polled at every nanosecond (testdata/virtualline.golden
// was recorded that way from that code, at commit "dataplane: record the
// per-packet shaper's decisions"), however seldom the worker polls and
// however long departed packets wait to be batched: polled at every event
// (every arrival and every instant the line has something due), polled
// only every 97 µs with a 50 µs coalescing window, and polled every 1 ms
// with a 1 ms window. Between polls the wires deliver arrivals with their
// own timestamps, which the worker uses as their arrival times.
func TestVirtualLineMatchesPerPacketShaper(t *testing.T) {
	nextArrival := func(r *dataplanetest.Rig, sends []sendAt, now int64) int64 {
		next := int64(1<<63 - 1)
		for _, p := range r.Ports {
			if a, ok := p.NextArrival(); ok {
				next = min(next, a)
			}
		}
		for _, s := range sends {
			if s.t > now {
				next = min(next, s.t)
				break
			}
		}
		return next
	}
	cases := []struct {
		name     string
		coalesce time.Duration
		next     func(r *dataplanetest.Rig, sends []sendAt, now int64) int64
	}{
		{"every event", -1, func(r *dataplanetest.Rig, sends []sendAt, now int64) int64 {
			return max(now+1, min(nextArrival(r, sends, now), r.Switch.NextEvent()))
		}},
		{"every 97µs, 50µs batches", 50 * time.Microsecond, func(_ *dataplanetest.Rig, _ []sendAt, now int64) int64 { return now + 97_000 }},
		{"every 1ms, 1ms batches", time.Millisecond, func(_ *dataplanetest.Rig, _ []sendAt, now int64) int64 { return now + 1_000_000 }},
	}
	if *updateGolden {
		cases = cases[:0]
		r, sends, rec := lineScenario(t, -1)
		sortSends(sends)
		runScenario(t, r, sends, func(now int64) int64 { return now + 1 })
		checkGolden(t, rec.buf.Bytes())
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, sends, rec := lineScenario(t, c.coalesce)
			sortSends(sends)
			runScenario(t, r, sends, func(now int64) int64 { return c.next(r, sends, now) })
			checkGolden(t, rec.buf.Bytes())
		})
	}
}

func sortSends(s []sendAt) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j].t < s[j-1].t; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func checkGolden(t *testing.T, got []byte) {
	t.Helper()
	const path = "testdata/virtualline.golden"
	if *updateGolden {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
		for i := range min(len(g), len(w)) {
			if !bytes.Equal(g[i], w[i]) {
				t.Fatalf("event %d differs from the per-packet shaper:\n got %s\nwant %s", i, g[i], w[i])
			}
		}
		t.Fatalf("%d events, want %d", len(g), len(w))
	}
}
