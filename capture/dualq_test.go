package capture

import (
	"path/filepath"
	"regexp"
	"testing"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

var (
	dualMarkedRE = regexp.MustCompile(`^egress port c queue ([01]): marked CE by (dualpi2-[a-z]+) \(value \d+, threshold \d+\); sojourn \d+\.\d{3}us$`)
	dualDropRE   = regexp.MustCompile(`^drop port c queue ([01]): dropped \(([a-z_]+)\)( by (dualpi2-[a-z]+) \(value \d+, threshold \d+\); sojourn \d+\.\d{3}us)?$`)
)

// A DualQ port's captures say which part of the coupled AQM decided: the
// L4S queue's step or its coupled marking, the Classic queue's (p′)², or
// the drops of overload (RFC 9332 §4.2.3). Two unresponsive senders, L4S
// and Classic, each at the port's rate, push a DualQ port with a fast PI2
// into overload; every mark and AQM drop the switch counts is in the
// captures, named by the member that made it, and only the members of
// the packet's queue appear.
func TestDualQCaptureNamesTheAQM(t *testing.T) {
	cfg := dataplane.Config{Pools: []buffer.PoolConfig{{Size: 200_000}}}
	cfg.Ports = []dataplane.PortConfig{dataplanetest.PortConfig("a", 1, congRate), dataplanetest.PortConfig("b", 1, congRate), dataplanetest.PortConfig("c", 1, congRate)}
	cfg.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 2}, {From: 1, To: 2}}
	c := &cfg.Ports[2]
	c.Scheduler = scheduler.Config{Kind: scheduler.DualQ, LineRate: congRate}
	c.Queues = []buffer.QueueConfig{{Alpha: 1}, {Alpha: 1}}
	c.DualQ.AQM = marking.DualPI2Config{Target: 1_000_000, TUpdate: 1_000_000, Alpha: 2, Beta: 20}
	r := dataplanetest.New(t, cfg, memport.Link{Rate: congRate})

	dir := t.TempDir()
	m := New(r.Switch, r.Clock, Options{Dir: dir, Wall: fixedWall})
	marked, err := m.Start(Spec{Port: "c", Filter: Marked, Path: "marked.pcapng"})
	if err != nil {
		t.Fatal(err)
	}
	dropped, err := m.Start(Spec{Port: "c", Filter: Dropped, Path: "drops.pcapng"})
	if err != nil {
		t.Fatal(err)
	}
	l := dataplanetest.Frame(t, 0, 2, packettest.Options{Size: congSize, ECN: packet.ECT1})
	cl := dataplanetest.Frame(t, 1, 2, packettest.Options{Size: congSize, ECN: packet.ECT0})
	for range 2000 {
		r.Send(0, l)
		r.Send(1, cl)
	}
	r.Drain(congDT)
	for _, id := range []int{marked, dropped} {
		if st, err := m.Stop(id); err != nil || st.SkippedRingFull != 0 || st.LostWriteError != 0 {
			t.Fatalf("capture %d: %+v, %v", id, st, err)
		}
	}

	stats := r.Switch.Stats().Ports[2]
	byMember := map[string][2]int{} // name → packets of queue 0 and 1
	for _, p := range readFile(t, PCAPNG, filepath.Join(dir, "marked.pcapng"), DefaultSnapLen) {
		g := dualMarkedRE.FindStringSubmatch(p.comment)
		if g == nil {
			t.Fatalf("marked packet's comment %q", p.comment)
		}
		n := byMember[g[2]]
		n[g[1][0]-'0']++
		byMember[g[2]] = n
	}
	aqmDrops := [2]int{}
	for _, p := range readFile(t, PCAPNG, filepath.Join(dir, "drops.pcapng"), DefaultSnapLen) {
		g := dualDropRE.FindStringSubmatch(p.comment)
		if g == nil {
			t.Fatalf("dropped packet's comment %q", p.comment)
		}
		if g[2] != "dequeue_marker" {
			continue // the buffer's
		}
		if g[4] != marking.DualPI2Overload {
			t.Errorf("an AQM drop by %s: %q; on this traffic only overload drops", g[4], p.comment)
		}
		aqmDrops[g[1][0]-'0']++
	}
	t.Logf("marks by member and queue %v; AQM drops by queue %v; %+v", byMember, aqmDrops, *stats.DualQ)

	step, coupled, classic := byMember[marking.DualPI2Step], byMember[marking.DualPI2Coupled], byMember[marking.DualPI2Classic]
	if step[1] == 0 || coupled[1] == 0 || classic[0] == 0 || step[0]+coupled[0]+classic[1] != 0 || len(byMember) != 3 {
		t.Errorf("marks by member and queue %v: want step and coupled in the L4S queue (1), classic in the Classic queue (0), and nothing else", byMember)
	}
	l4s, cq := stats.Queues[scheduler.DualQL4S], stats.Queues[scheduler.DualQClassic]
	if uint64(step[1]+coupled[1]) != l4s.MarkedDeq || uint64(classic[0]) != cq.MarkedDeq {
		t.Errorf("captured marks L4S %d, Classic %d; the switch counted %d and %d", step[1]+coupled[1], classic[0], l4s.MarkedDeq, cq.MarkedDeq)
	}
	if aqmDrops[0] == 0 || aqmDrops[1] == 0 || uint64(aqmDrops[0]) != cq.Drops["marker"] || uint64(aqmDrops[1]) != l4s.Drops["marker"] || stats.DualQ.Overloads == 0 {
		t.Errorf("captured AQM drops %v; the switch counted Classic %d, L4S %d, %d overloads; want overload drops in both", aqmDrops, cq.Drops["marker"], l4s.Drops["marker"], stats.DualQ.Overloads)
	}
}
