package demo

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/testbed"
)

// TestSchemeMarkers builds every scheme's switch and checks each marker
// against its paper's rule on two equal-quantum queues at K = 32 KB and
// C = 995 Mbit/s: where it runs, and what it marks just below and at its
// threshold. The thresholds are K (standard), K/2 (minimum, PMSB's filter,
// MQ-ECN with both queues busy at T_round = 2·MTU/C) and K/C in time
// (TCN, ECN♯).
func TestSchemeMarkers(t *testing.T) {
	o, err := Options{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	hosts := make([]testbed.Host, Hosts)
	for i := range hosts {
		hosts[i].SwitchIf = "sw" + string(rune('1'+i))
	}
	k := o.K
	rtt := (k*8e9 + o.Rate - 1) / o.Rate // K/C in ns
	const mtu = 1514
	view := func(queue, port, sojourn int64) marking.View {
		return marking.View{
			Now: 1e9, EnqTime: 1e9 - sojourn, Len: mtu, Queue: 1,
			QueueBytes: queue, PortBytes: port,
			Quantum: mtu, Weight: mtu, WeightSum: 2 * mtu, BusyWeightSum: 2 * mtu,
			RoundTime: 2 * mtu * 8e9 / o.Rate, LineRate: o.Rate,
		}
	}
	if len(AllSchemes()) != 9 {
		t.Errorf("AllSchemes() = %v: the cases below and TestCoDelScheme cover 9", AllSchemes())
	}
	for _, c := range []struct {
		scheme        string
		dequeue       bool
		below, at     marking.View // the first is not marked, the second is
		belowS, atS   string
		alsoUnmarked  *marking.View
		alsoUnmarkedS string
	}{
		{scheme: PerPort, below: view(0, k-1, 0), at: view(0, k, 0), belowS: "port K−1, queue 0", atS: "port K, queue 0"},
		{scheme: PerQueue, below: view(k-1, 2*k, 0), at: view(k, k, 0), belowS: "queue K−1, port 2K", atS: "queue K"},
		{scheme: QueueMinimum, below: view(k/2-1, 2*k, 0), at: view(k/2, k/2, 0), belowS: "queue K/2−1", atS: "queue K/2"},
		{scheme: MQECN, below: view(k/2-mtu, 2*k, 0), at: view(k/2+mtu, k/2+mtu, 0), belowS: "queue K/2−MTU", atS: "queue K/2+MTU"},
		{scheme: PMSB, below: view(k/2-1, 2*k, 0), at: view(k/2, k, 0), belowS: "queue K/2−1, port 2K", atS: "queue K/2, port K",
			alsoUnmarked: ptr(view(k, k-1, 0)), alsoUnmarkedS: "queue K, port K−1"},
		{scheme: PMSBDequeue, dequeue: true, below: view(k/2-1, 2*k, 0), at: view(k/2, k, 0), belowS: "queue K/2−1, port 2K", atS: "queue K/2, port K",
			alsoUnmarked: ptr(view(k, k-1, 0)), alsoUnmarkedS: "queue K, port K−1"},
		{scheme: TCN, dequeue: true, below: view(2*k, 2*k, rtt), at: view(0, 0, rtt+1), belowS: "sojourn K/C, queue 2K", atS: "sojourn K/C + 1 ns"},
		{scheme: ECNSharp, dequeue: true, below: view(2*k, 2*k, rtt-1), at: view(0, 0, rtt+1), belowS: "sojourn K/C − 1 ns", atS: "sojourn K/C + 1 ns"},
	} {
		t.Run(c.scheme, func(t *testing.T) {
			cfg, err := switchConfig(o, hosts, c.scheme)
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.Ports) != Hosts {
				t.Fatalf("%d ports, want %d", len(cfg.Ports), Hosts)
			}
			p := cfg.Ports[bottleneck]
			specs, other := p.Enqueue, p.Dequeue
			if c.dequeue {
				specs, other = other, specs
			}
			if len(specs) != 1 || len(other) != 0 {
				t.Fatalf("enqueue %d, dequeue %d markers: want one, at dequeue = %v", len(p.Enqueue), len(p.Dequeue), c.dequeue)
			}
			m, err := specs[0].New(2)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Mark(ptr(c.below)); got != marking.Pass {
				t.Errorf("%s: %v, want pass", c.belowS, got)
			}
			if c.alsoUnmarked != nil {
				if got := m.Mark(c.alsoUnmarked); got != marking.Pass {
					t.Errorf("%s: %v, want pass", c.alsoUnmarkedS, got)
				}
			}
			if got := m.Mark(ptr(c.at)); got != marking.Mark {
				t.Errorf("%s: %v, want mark", c.atS, got)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestSchemeNames: a preset of a registered scheme is named and titled
// as marking's registry names it, the registry's aliases (the demo's
// former mq-ecn and ecn-sharp) still select it, and its marker sits at a
// stage the registry allows.
func TestSchemeNames(t *testing.T) {
	in := []string{"mq-ecn", "ecn-sharp", PerPort}
	o, err := Options{Schemes: in}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{marking.SchemeMQECN, marking.SchemeECNSharp, PerPort}; !slices.Equal(o.Schemes, want) {
		t.Errorf("Schemes %v became %v, want %v", in, o.Schemes, want)
	}
	if in[0] != "mq-ecn" {
		t.Errorf("withDefaults changed the caller's Schemes: %v", in)
	}
	if got := Title("ecn-sharp"); got != "ECN♯" {
		t.Errorf("Title(ecn-sharp) = %q, want ECN♯", got)
	}
	o, _ = Options{}.withDefaults()
	hosts := make([]testbed.Host, Hosts)
	for _, name := range AllSchemes() {
		if Title(name) == "" {
			t.Errorf("%s has no title", name)
		}
		s, registered := marking.Lookup(name)
		if !registered {
			continue
		}
		if s.Name != name || Title(name) != s.Title {
			t.Errorf("preset %q (%q) is the registry's %q (%q)", name, Title(name), s.Name, s.Title)
		}
		cfg, err := switchConfig(o, hosts, name)
		if err != nil {
			t.Fatal(err)
		}
		p := cfg.Ports[bottleneck]
		for _, st := range []struct {
			stage marking.Stage
			specs []dataplane.MarkerSpec
		}{{marking.Enqueue, p.Enqueue}, {marking.Dequeue, p.Dequeue}} {
			if len(st.specs) > 0 && !s.Stages.Has(st.stage) {
				t.Errorf("%s marks at %v; the registry allows %v", name, st.stage, s.Stages)
			}
		}
	}
}

// TestClasses: classes become queues — DSCP(q) selects queue q, each
// queue gets its class's weight and strictness under the chosen scheduler
// on every port, and the config is one the dataplane accepts.
func TestClasses(t *testing.T) {
	hosts := make([]testbed.Host, Hosts)
	for i := range hosts {
		hosts[i].SwitchIf = "sw" + string(rune('1'+i))
	}
	seen := map[uint8]bool{}
	for q := range MaxClasses {
		if d := DSCP(q); d > 63 || seen[d] {
			t.Errorf("DSCP(%d) = %d: repeated or not a DSCP", q, d)
		}
		seen[DSCP(q)] = true
	}
	if DSCP(0) != DSCPQueue1 || DSCP(1) != DSCPQueue2 {
		t.Errorf("DSCP(0), DSCP(1) = %d, %d: want the demo's %d, %d", DSCP(0), DSCP(1), DSCPQueue1, DSCPQueue2)
	}
	for _, kind := range []scheduler.Kind{scheduler.DWRR, scheduler.WFQ, scheduler.SP} {
		o, err := Options{Scheduler: kind, Classes: []Class{
			{Flows: 2, Senders: []int{0}, Strict: kind != scheduler.SP},
			{Flows: 1, Senders: []int{1, 2}, Weight: 2},
			{Flows: 3, Senders: []int{3}, Weight: 1},
		}}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if got := o.flows(); !slices.Equal(got, []int{2, 1, 3}) {
			t.Errorf("flows %v", got)
		}
		cfg, err := switchConfig(o, hosts, PMSB)
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%v: the dataplane rejects the config: %v", kind, err)
		}
		for q := range 3 {
			if cfg.Classifier.DSCP[DSCP(q)] != q {
				t.Errorf("%v: DSCP %d → queue %d, want %d", kind, DSCP(q), cfg.Classifier.DSCP[DSCP(q)], q)
			}
		}
		for i, p := range cfg.Ports {
			s := p.Scheduler
			if s.Kind != kind || len(s.Queues) != 3 || len(p.Queues) != 3 ||
				s.Queues[1].Weight != 2 || s.Queues[0].Strict != (kind != scheduler.SP) || s.Queues[2].Strict {
				t.Errorf("%v: port %d scheduler %+v, %d buffer queues", kind, i, s, len(p.Queues))
			}
		}
	}
	// The default is the demo's: h1's flow in queue 1, h2–h4's in queue 2.
	o, err := Options{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Classes) != 2 || o.Classes[0].Flows != 1 || !slices.Equal(o.Classes[0].Senders, []int{0}) ||
		o.Classes[1].Flows != 4 || !slices.Equal(o.Classes[1].Senders, []int{1, 2, 3}) || o.Scheduler != scheduler.DWRR {
		t.Errorf("default classes %+v, scheduler %v", o.Classes, o.Scheduler)
	}
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Flows: [2]int{1, 1}, Classes: []Class{{Flows: 1, Senders: []int{0}}}}, "give one or the other"},
		{Options{Classes: make([]Class, 9)}, "9 classes: want at most 8"},
		{Options{Classes: []Class{{Flows: 0, Senders: []int{0}}}}, "classes[0].flows 0 outside [1, 64]"},
		{Options{Classes: []Class{{Flows: 1}}}, "classes[0].senders: empty"},
		{Options{Classes: []Class{{Flows: 1, Senders: []int{4}}}}, "classes[0].senders: host 4 outside [0, 3]"},
		{Options{Classes: []Class{{Flows: 1, Senders: []int{0}, Weight: -1}}}, "classes[0].weight -1 outside"},
		{Options{Classes: []Class{{Flows: 1, Senders: []int{0}, Rate: 2e9}}}, "classes[0].rate 2000000000 bit/s outside [0, rate = 995000000]"},
	} {
		if err := c.o.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want %q", c.o, err, c.want)
		}
	}
}

// TestCoDelScheme: CoDel runs at dequeue with the given target and
// interval (000 §5.2's by default), marking once the sojourn time has
// stayed above target for an interval, never below it.
func TestCoDelScheme(t *testing.T) {
	hosts := make([]testbed.Host, Hosts)
	for _, c := range []struct {
		cfg              marking.CoDelConfig
		target, interval int64
	}{
		{marking.CoDelConfig{}, marking.CoDelDefaultTarget, marking.CoDelDefaultInterval},
		{marking.CoDelConfig{Target: 854_000, Interval: 2_010_000}, 854_000, 2_010_000},
	} {
		o, err := Options{CoDel: c.cfg, HostDelay: []time.Duration{time.Millisecond}}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := switchConfig(o, hosts, CoDel)
		if err != nil {
			t.Fatal(err)
		}
		p := cfg.Ports[bottleneck]
		if len(p.Enqueue) != 0 || len(p.Dequeue) != 1 {
			t.Fatalf("enqueue %d, dequeue %d markers", len(p.Enqueue), len(p.Dequeue))
		}
		if cfg.Ports[0].Delay.Fixed != time.Millisecond || p.Delay.Fixed != 0 {
			t.Errorf("host delays %v, %v: want 1ms towards h1 only", cfg.Ports[0].Delay.Fixed, p.Delay.Fixed)
		}
		run := func(sojourn int64) (first int64) {
			m, err := p.Dequeue[0].New(2)
			if err != nil {
				t.Fatal(err)
			}
			for now := int64(1e9); now < 1e9+4*c.interval; now += 10_000 {
				v := marking.View{Now: now, EnqTime: now - sojourn, Len: 1514, QueueBytes: 64 << 10, PortBytes: 64 << 10, LineRate: o.Rate}
				if m.Mark(&v) == marking.Mark {
					return now - 1e9
				}
			}
			return -1
		}
		if got := run(c.target - 1000); got != -1 {
			t.Errorf("target %d ns: sojourn below it marked at +%d ns", c.target, got)
		}
		if got := run(c.target + 1000); got < c.interval-10_000 || got > c.interval+20_000 {
			t.Errorf("target %d ns: sojourn above it first marked at +%d ns, want after the %d ns interval", c.target, got, c.interval)
		}
	}
	if err := (Options{HostDelay: make([]time.Duration, Hosts+1)}).Validate(); err == nil || !strings.Contains(err.Error(), "host_delay: 6 entries") {
		t.Errorf("6 host delays: %v", err)
	}
	if err := (Options{HostDelay: []time.Duration{-1}}).Validate(); err == nil || !strings.Contains(err.Error(), "host_delay[0] -1ns outside") {
		t.Errorf("negative host delay: %v", err)
	}
}

// TestFillCountsTheWindow checks that a scheme's drops and its flows'
// retransmits both count the measured window only: losses of the
// warm-up's slow start (here 10 drops, 12 retransmits) show in neither,
// so the table never pairs a window's zero drops with earlier
// retransmits.
func TestFillCountsTheWindow(t *testing.T) {
	o, err := Options{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	q := func(drops uint64) dataplane.QueueStats {
		return dataplane.QueueStats{Drops: map[string]uint64{"pool_full": drops}}
	}
	start := time.Unix(100, 0)
	w := window{
		bytes0: []int64{0, 0}, bytes1: []int64{1 << 20, 1 << 20},
		port0: dataplane.PortStats{Queues: []dataplane.QueueStats{q(10), q(0)}},
		port1: dataplane.PortStats{Queues: []dataplane.QueueStats{q(13), q(0)}},
		retx0: []uint64{12, 0}, retx1: []uint64{15, 0},
		start: start, end: start.Add(time.Second),
	}
	res := SchemeResult{Queues: make([]QueueResult, 2)}
	res.fill(o, w)
	for i, want := range [][2]uint64{{3, 3}, {0, 0}} {
		if got := res.Queues[i]; got.Drops != want[0] || got.Retrans != want[1] {
			t.Errorf("queue %d: %d drops, %d retransmits; want %d, %d", i+1, got.Drops, got.Retrans, want[0], want[1])
		}
	}
}
