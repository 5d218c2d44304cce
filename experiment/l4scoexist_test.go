package experiment

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// tcpFrame is an untagged IPv4 TCP frame from sport to dport with TOS tos.
func tcpFrame(sport, dport uint16, tos uint8) []byte {
	f := make([]byte, 14+20+20)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	f[14], f[15], f[14+9] = 0x45, tos, 6
	binary.BigEndian.PutUint16(f[34:], sport)
	binary.BigEndian.PutUint16(f[36:], dport)
	return f
}

func TestL4SClass(t *testing.T) {
	udp := tcpFrame(40000, l4sPortL, 1)
	udp[14+9] = 17
	badIHL := tcpFrame(40000, l4sPortL, 1)
	badIHL[14] = 0x44
	for _, c := range []struct {
		name  string
		frame []byte
		class int
		ok    bool
	}{
		{"scalable data", tcpFrame(40000, l4sPortL, 1), clsL, true},
		{"Classic data", tcpFrame(40000, l4sPortC, 2), clsC, true},
		{"scalable ACK", tcpFrame(l4sPortL, 40000, 1), 0, false},
		{"other port", tcpFrame(40000, 80, 2), 0, false},
		{"UDP", udp, 0, false},
		{"IHL below 5", badIHL, 0, false},
		{"short", tcpFrame(40000, l4sPortL, 1)[:36], 0, false},
	} {
		if class, ok := l4sClass(c.frame); class != c.class || ok != c.ok {
			t.Errorf("%s: class %d, %v; want %d, %v", c.name, class, ok, c.class, c.ok)
		}
	}
}

// The tap counts per class what the bottleneck sends and marks, and drops
// on any port, and keeps the delays of the bottleneck's packets; nothing
// while off, and what does not fit is counted as missed.
func TestL4STap(t *testing.T) {
	tap := &l4sTap{port: demo.Bottleneck, recs: make([]l4sRecord, 2)}
	ev := func(kind dataplane.EventKind, port int, f []byte, at, sojourn int64) *dataplane.Event {
		return &dataplane.Event{Kind: kind, Port: port, Frame: f, Time: at, Sojourn: sojourn}
	}
	l, lce, c := tcpFrame(1, l4sPortL, 1), tcpFrame(1, l4sPortL, 3), tcpFrame(1, l4sPortC, 2)
	tap.Record(ev(dataplane.EventEgress, demo.Bottleneck, l, 1, 100)) // off
	tap.on.Store(true)
	tap.Record(ev(dataplane.EventEgress, demo.Bottleneck, lce, 3, 300))
	tap.Record(ev(dataplane.EventEgress, 0, l, 4, 400)) // another port's egress
	tap.Record(ev(dataplane.EventEgress, demo.Bottleneck, c, 5, 500))
	tap.Record(ev(dataplane.EventDrop, 2, c, 6, -1))
	tap.Record(ev(dataplane.EventEgress, demo.Bottleneck, l, 7, 700)) // no room
	// Arrivals at 10 ms, 11 ms, 14 ms and 20 ms: gaps of 3 and 6 ms.
	for _, at := range []int64{10, 11, 14, 20} {
		tap.Record(ev(dataplane.EventIngress, int(at%3), l, at*int64(time.Millisecond), -1))
	}
	if tap.gaps.Load() != 2 || tap.gapNS.Load() != int64(9*time.Millisecond) || tap.longest.Load() != int64(6*time.Millisecond) {
		t.Errorf("gaps %d, %v in all, longest %v; want 2, 9ms, 6ms", tap.gaps.Load(), time.Duration(tap.gapNS.Load()), time.Duration(tap.longest.Load()))
	}
	if got := tap.records(); len(got) != 2 || got[0] != (l4sRecord{3, 300, clsL}) || got[1] != (l4sRecord{5, 500, clsC}) {
		t.Errorf("records %+v", got)
	}
	if tap.pkts[clsL].Load() != 2 || tap.marks[clsL].Load() != 1 || tap.pkts[clsC].Load() != 1 || tap.drops[clsC].Load() != 1 || tap.missed.Load() != 1 {
		t.Errorf("L %d sent, %d CE; C %d sent, %d dropped; %d missed; want 2, 1, 1, 1, 1",
			tap.pkts[clsL].Load(), tap.marks[clsL].Load(), tap.pkts[clsC].Load(), tap.drops[clsC].Load(), tap.missed.Load())
	}
}

// summarize: medians and p99 by nearest rank per class, and the mean
// delay per 10 ms bin, NaN where a class sent nothing.
func TestL4SSummarize(t *testing.T) {
	const msec = int64(time.Millisecond)
	tap := &l4sTap{recs: make([]l4sRecord, 0, 8)}
	for i, r := range []l4sRecord{
		{0, 1 * msec, clsL}, {1 * msec, 3 * msec, clsL}, {2 * msec, 2 * msec, clsL},
		{5 * msec, 10 * msec, clsC}, {25 * msec, 20 * msec, clsC},
	} {
		tap.recs = append(tap.recs, r)
		tap.n.Store(int64(i + 1))
	}
	var r l4sRun
	r.summarize(tap)
	if r.med[clsL] != 2*time.Millisecond || r.p99[clsL] != 3*time.Millisecond || r.med[clsC] != 10*time.Millisecond || r.p99[clsC] != 20*time.Millisecond {
		t.Errorf("L %v / %v, C %v / %v; want 2ms / 3ms, 10ms / 20ms", r.med[clsL], r.p99[clsL], r.med[clsC], r.p99[clsC])
	}
	if len(r.bins[clsL]) != 1 || r.bins[clsL][0] != 2 {
		t.Errorf("L bins %v, want [2]", r.bins[clsL])
	}
	if c := r.bins[clsC]; len(c) != 3 || c[0] != 10 || !math.IsNaN(c[1]) || c[2] != 20 {
		t.Errorf("C bins %v, want [10 NaN 20]", c)
	}
}

// The switch: the bottleneck is a DualQ, a PI2 queue or a RED queue at
// DCTCP's K = C·RTT/7 (177,678 B at 995 Mbit/s and 10 ms), and the other
// ports hold the ACKs 10 ms.
func TestL4SConfig(t *testing.T) {
	o := demo.Options{Rate: demo.DefaultRate, Bucket: demo.DefaultBucket}
	ifaces := []string{"a", "b", "c", "d", "e"}
	if k := l4sK(o.Rate); k != 177_678 {
		t.Errorf("K = %d B, want 177678", k)
	}
	for _, s := range l4sSchemes {
		cfg, err := l4sConfig(o, ifaces, s, 1)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		for i, p := range cfg.Ports {
			want := l4sAckDelay
			if i == demo.Bottleneck {
				want = 0
			}
			if p.Delay.Fixed != want {
				t.Errorf("%s: port %d delay %v, want %v", s, i, p.Delay.Fixed, want)
			}
		}
		b := cfg.Ports[demo.Bottleneck]
		switch {
		case s == l4sDualQ && b.Scheduler.Kind != scheduler.DualQ:
			t.Errorf("dualq: bottleneck scheduler %v", b.Scheduler.Kind)
		case s == l4sPI2 && (len(b.Dequeue) != 1 || b.Dequeue[0].Name != "pi2"):
			t.Errorf("pi2: dequeue chain %+v", b.Dequeue)
		case s == l4sRED && (len(b.Enqueue) != 1 || len(b.Dequeue) != 0):
			t.Errorf("red: enqueue %+v, dequeue %+v", b.Enqueue, b.Dequeue)
		}
	}
	if _, err := l4sConfig(o, ifaces, "fifo", 1); err == nil {
		t.Error("scheme fifo accepted")
	}
}

// The rate equations at a 10 ms base RTT: W_L/W_C = 2/(k·1.22) = 0.82,
// times RTT_C/RTT_L = 25/10.5.
func TestL4SModelRatio(t *testing.T) {
	if got, want := l4sModelRatio(), 2/(2*1.22)*25/10.5; math.Abs(got-want) > 1e-12 {
		t.Errorf("model ratio %g, want %g", got, want)
	}
}

// canned is one run of scheme with mix: per-flow goodputs perL and perC,
// L and C delays (median, p99), marked fractions pL and pC of 100000
// packets each, and the port busy.
type canned struct {
	perL, perC             float64
	lmed, lp99, cmed, cp99 time.Duration
	pL, pC, busy           float64
}

func (c canned) run(scheme string, mix [2]int) *l4sRun {
	r := &l4sRun{scheme: scheme, mix: mix, rate: demo.DefaultRate, busy: c.busy, elapsed: 8 * time.Second}
	for range mix[clsL] {
		r.flows[clsL] = append(r.flows[clsL], c.perL)
	}
	for range mix[clsC] {
		r.flows[clsC] = append(r.flows[clsC], c.perC)
	}
	r.med, r.p99 = [2]time.Duration{c.lmed, c.cmed}, [2]time.Duration{c.lp99, c.cp99}
	r.pkts = [2]uint64{100_000, 100_000}
	r.marks = [2]uint64{uint64(c.pL * 100_000), uint64(c.pC * 100_000)}
	r.bins = [2][]float64{{0.3, 0.4}, {14, 15}}
	return r
}

// cannedRuns are three runs of every scheme and mix: per-flow rates that
// fill 95% of the port with the scalable flows 1.2× the Classic ones in
// the DualQ, its L queue at 0.3 / 1.2 ms and C queue at 14 ms, p_L 3%
// and p_C 0.01% (p_L/(k·√p_C) = 1.5); PI2's scalable packets at 14 ms;
// RED's scalable flows 5× the Classic ones. Every claim holds on them;
// edit changes the DualQ's 4 : 4 runs.
func cannedRuns(edit func(*canned)) []*l4sRun {
	maxG := float64(demo.DefaultRate) * 1448 / 1538
	var runs []*l4sRun
	for range 3 {
		for _, s := range l4sSchemes {
			for _, mix := range l4sMixes {
				ratio := map[string]float64{l4sDualQ: 1.2, l4sPI2: 0.8, l4sRED: 5}[s]
				perC := 0.95 * maxG / (ratio*float64(mix[clsL]) + float64(mix[clsC]))
				c := canned{perL: ratio * perC, perC: perC, lmed: 300 * time.Microsecond, lp99: 1200 * time.Microsecond,
					cmed: 14 * time.Millisecond, cp99: 20 * time.Millisecond, pL: 0.03, pC: 0.0001, busy: 0.97}
				if s == l4sPI2 {
					c.lmed = 14 * time.Millisecond
				}
				if s == l4sDualQ && mix == [2]int{4, 4} && edit != nil {
					edit(&c)
				}
				runs = append(runs, c.run(s, mix))
			}
		}
	}
	return runs
}

func TestL4SClaims(t *testing.T) {
	good := l4sClaims(cannedRuns(nil))
	if len(good) != 11 {
		t.Fatalf("%d claims, want 11", len(good))
	}
	for _, c := range good {
		if !c.Holds() || !c.Comparable() || len(c.Loads) != 3 {
			t.Errorf("%s: %s (ours %s, rule %s, %d runs); want it to hold on the canned runs", c.What, c.Verdict(), c.Ours, c.Rule, len(c.Loads))
		}
	}
	for _, c := range []struct {
		name  string
		edit  func(*canned)
		fails []string // the claims that must not hold, by a part of What
	}{
		{"scalable flows starve", func(c *canned) { s := c.perL + c.perC; c.perL, c.perC = s/6, 5*s/6 }, []string{"DualQ, 4 : 4 flows: per-flow rate"}},
		{"L queue 3 ms", func(c *canned) { c.lp99 = 3 * time.Millisecond }, []string{"L queue's p99"}},
		{"C queue off target", func(c *canned) { c.cmed = 5 * time.Millisecond }, []string{"C queue's median"}},
		{"L queue as slow as C", func(c *canned) { c.lmed = 2 * time.Millisecond }, []string{"L queue's median delay against"}},
		{"no coupling", func(c *canned) { c.pL = 0.001 }, []string{"marked fraction"}},
		{"no Classic marks", func(c *canned) { c.pC = 0 }, []string{"marked fraction"}},
		{"idle port", func(c *canned) { c.perL, c.perC = c.perL/2, c.perC/2 }, []string{"total goodput"}},
	} {
		claims := l4sClaims(cannedRuns(c.edit))
		for _, cl := range claims {
			want := !containsAny(cl.What, c.fails)
			if cl.Holds() != want {
				t.Errorf("%s: %q %s (ours %s, rule %s); want holds = %v", c.name, cl.What, cl.Verdict(), cl.Ours, cl.Rule, want)
			}
		}
	}
	// A run below 95% busy makes the claims on it not comparable.
	runs := cannedRuns(func(c *canned) { c.busy = 0.6 })
	for _, cl := range l4sClaims(runs) {
		if strings.Contains(cl.What, "DualQ, 4 : 4") && cl.Comparable() {
			t.Errorf("%q comparable on a run 60%% busy", cl.What)
		}
	}
}

func containsAny(s string, parts []string) bool {
	for _, p := range parts {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// The report has a table per scheme, a row per mix, and a delay plot per
// mix, which it draws.
func TestL4SReport(t *testing.T) {
	rep, err := l4sReport(Env{Now: func() time.Time { return time.Unix(0, 0) }}, demo.Options{Rate: demo.DefaultRate, Bucket: demo.DefaultBucket},
		time.Second, 8*time.Second, cannedRuns(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Tables) != len(l4sSchemes) || len(rep.Tables[0].Rows) != len(l4sMixes) || len(rep.Plots) != len(l4sMixes) {
		t.Fatalf("%d tables of %d rows, %d plots", len(rep.Tables), len(rep.Tables[0].Rows), len(rep.Plots))
	}
	if row := rep.Tables[0].Rows[3]; row[0] != "4 : 4" || row[3] != "1.20 (each of 3 runs)" && row[3] != "1.20 (1.20–1.20 over 3 runs)" {
		t.Errorf("DualQ 4 : 4 row %q", row)
	}
	dir := t.TempDir()
	if err := rep.Write(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "delay-4to4.png")); err != nil {
		t.Error(err)
	}
	if _, err := l4sReport(Env{}, demo.Options{}, time.Second, time.Second, cannedRuns(nil)[:5]); err == nil {
		t.Error("a report with runs missing rendered")
	}
}
