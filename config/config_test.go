package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/ports/afxdp"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

const examplePath = "../examples/ecnswitch.yaml"

// build makes a switch of cfg on memory ports, as the daemon does on AF_XDP
// ports, so that dataplane.New's own checks run too.
func build(t *testing.T, cfg *Config) *dataplane.Switch {
	t.Helper()
	dc, err := cfg.Dataplane()
	if err != nil {
		t.Fatal(err)
	}
	clk := timestamp.NewVirtual(0)
	devs := make([]ports.Port, len(dc.Ports))
	for i := range devs {
		a, _, err := memport.Pair(dc.Ports[i].Name, "host", clk, memport.Link{})
		if err != nil {
			t.Fatal(err)
		}
		devs[i] = a
	}
	sw, err := dataplane.New(dc, devs, clk, nil)
	if err != nil {
		t.Fatalf("dataplane.New: %v", err)
	}
	t.Cleanup(func() { sw.Close() })
	return sw
}

func mustParse(t *testing.T, y string) *Config {
	t.Helper()
	c, err := Parse([]byte(y))
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	return c
}

// marker builds port p's marker m's member s for a port of nq queues.
func marker(t *testing.T, c *Config, p, m, s int) marking.Marker {
	t.Helper()
	mk, err := c.Ports[p].Markers[m].Specs[s].New(c.Switch.Ports[p].Scheduler.NumQueues)
	if err != nil {
		t.Fatal(err)
	}
	return mk
}

func TestExampleLoadsAndBuilds(t *testing.T) {
	c, err := Load(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	sw := build(t, c)
	st := sw.Stats()
	if len(st.Ports) != 3 || st.Ports[2].Name != "p3" || len(st.Ports[0].Queues) != 8 {
		t.Fatalf("switch ports = %+v", st.Ports)
	}
	if len(st.Pools) != 1 || st.Pools[0].Size != 2_000_000 {
		t.Errorf("pools = %+v, want one of 2MB", st.Pools)
	}
	d1, d2, d3 := c.Ports[0], c.Ports[1], c.Ports[2]
	p1, p3 := c.Switch.Ports[0], c.Switch.Ports[2]
	if d1.Interface != "ens1f0" || d2.AFXDP.Attach != afxdp.AttachNative || d1.AFXDP.Attach != afxdp.AttachAuto {
		t.Errorf("interfaces/afxdp: %q %v %v", d1.Interface, d1.AFXDP.Attach, d2.AFXDP.Attach)
	}
	if err := d2.AFXDP.Validate(); err != nil {
		t.Errorf("afxdp options of p2: %v", err)
	}
	if p1.Shaper.Rate != 995e6 || p1.Scheduler.LineRate != 995e6 || p1.Shaper.Bucket != 2500 {
		t.Errorf("p1 shaper %+v, scheduler rate %d", p1.Shaper, p1.Scheduler.LineRate)
	}
	if !p1.Scheduler.Queues[7].Strict || p1.Scheduler.Queues[6].Strict || p1.Queues[7].Reserve != 10_000 || p1.Queues[0].Alpha != 1 {
		t.Errorf("port_defaults not merged: sched %+v buffer %+v", p1.Scheduler.Queues, p1.Queues)
	}
	if c.Switch.Classifier.DSCP[46] != 7 {
		t.Errorf("classifier dscp 46 → %d, want 7", c.Switch.Classifier.DSCP[46])
	}
	// p3 replaces the default marker list: MQ-ECN at enqueue, TCN at dequeue.
	if len(d3.Markers) != 2 || d3.Markers[0].Scheme != "mqecn" || d3.Markers[1].Stage != marking.Dequeue {
		t.Errorf("p3 markers = %+v", d3.Markers)
	}
	// per_dscp_class 1 (DSCP 8–15) classifies into queue 1.
	if d := p3.Delay.PerQueue[1]; d.Fixed != 70*time.Microsecond || d.Jitter != 10*time.Microsecond {
		t.Errorf("p3 delay per queue = %+v", p3.Delay.PerQueue)
	}
	if fw := c.Switch.Forwarding; len(fw.Prefixes) != 1 || fw.Prefixes[0].Port != 2 || fw.MACs[0].Port != 2 {
		t.Errorf("forwarding = %+v", fw)
	}
}

// The example's dctcp k = {lambda: 1, rtt: 100us} must resolve with the
// port's rate: K = λ·C·RTT = 995e6 × 100e-6 / 8 = 12437 bytes (001 §2.2
// Eq. 1), a cut-off.
func TestExampleThresholdResolvesWithPortRate(t *testing.T) {
	c, err := Load(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	m := marker(t, c, 0, 0, 0)
	const k = 995_000_000 * 100_000 / 8_000_000_000 // ⌊C·RTT/8⌋ bytes
	for _, tc := range []struct {
		bytes int64
		want  marking.Verdict
	}{{k - 1, marking.Pass}, {k, marking.Mark}, {k + 1500, marking.Mark}} {
		v := marking.View{QueueBytes: tc.bytes, LineRate: 995e6, Len: 1500}
		if got := m.Mark(&v); got != tc.want {
			t.Errorf("queue %d bytes: %v, want %v", tc.bytes, got, tc.want)
		}
	}
}

func TestDataplaneReturnsFreshSlices(t *testing.T) {
	c := mustParse(t, "ports: [{name: a, scheduler: {queues: {0: {weight: 2}}}}, {name: b}]\nforwarding: {patches: [{from: a, to: b}]}")
	dc, _ := c.Dataplane()
	dc.Ports[0].Scheduler.Queues[0].Weight = 9
	dc.Ports[0].Queues[0].Alpha = 9
	dc.Forwarding.Patches[0].To = 0
	if sw := c.Switch; sw.Ports[0].Scheduler.Queues[0].Weight != 2 || sw.Ports[0].Queues[0].Alpha != 1 || sw.Forwarding.Patches[0].To != 1 {
		t.Error("Dataplane shares slices with the Config")
	}
	if _, err := (&Config{}).Dataplane(); err == nil {
		t.Error("Dataplane of an empty Config: no error")
	}
}

func TestDefaults(t *testing.T) {
	c := mustParse(t, "ports: [{name: p1}]")
	p, dev, sw := c.Switch.Ports[0], c.Ports[0], c.Switch
	switch {
	case sw.Workers != 1 || sw.Frames != 16384 || sw.FrameSize != 2048 || sw.Batch != 64 || sw.Spin != 16 || c.LogLevel != "info":
		t.Errorf("switch defaults: %+v", c)
	case !reflect.DeepEqual(c.Telemetry, Telemetry{Enabled: true, Listen: "127.0.0.1:9090", QueueSamplePeriod: 100 * time.Microsecond, QueueSamples: 65536}):
		t.Errorf("telemetry defaults: %+v", c.Telemetry)
	case c.Control != (Control{Socket: "/run/ecnswitch/ecnswitch.sock"}):
		t.Errorf("control defaults: %+v", c.Control)
	case c.Capture.Quota != 4<<30 || c.Capture.RingMemory != 256<<20:
		t.Errorf("capture defaults: %+v", c.Capture)
	case len(c.Pools) != 1 || c.Pools[0] != "default" || len(sw.Pools) != 1 || sw.Pools[0].Size != 2_000_000:
		t.Errorf("pool defaults: %+v %+v", c.Pools, sw.Pools)
	case sw.Forwarding.NoLearning || sw.Forwarding.AgeTime != 300*time.Second || sw.Forwarding.TableSize != 4096 ||
		sw.Forwarding.MACLimit != 1024 || sw.Forwarding.FloodRate != 10_000 || sw.Forwarding.FloodBurst != 1000:
		t.Errorf("forwarding defaults: %+v", sw.Forwarding)
	case dev.Interface != "p1" || p.Worker != -1 || p.NonECT != marking.NonECTDrop || p.Pool != 0:
		t.Errorf("port defaults: %+v", p)
	case p.Scheduler.Kind != scheduler.DWRR || p.Scheduler.NumQueues != 8 || p.Scheduler.MTU != 1514 || p.Scheduler.LineRate != 0:
		t.Errorf("scheduler defaults: %+v", p.Scheduler)
	case p.Shaper != (scheduler.ShaperConfig{Overhead: scheduler.OverheadEthernet}):
		t.Errorf("shaper defaults: %+v (unshaped, no bucket)", p.Shaper)
	case len(p.Queues) != 8 || p.Queues[3].Alpha != 1 || p.Queues[3].Cap != 0 || p.Queues[3].Reserve != 0:
		t.Errorf("buffer defaults: %+v", p.Queues)
	case dev.AFXDP.FrameSize != 2048 || dev.AFXDP.Frames != 4096 || dev.AFXDP.TxBudget != 256 || dev.AFXDP.Attach != afxdp.AttachAuto:
		t.Errorf("afxdp defaults: %+v", dev.AFXDP)
	}
	if err := dev.AFXDP.Validate(); err != nil {
		t.Errorf("default afxdp options do not validate: %v", err)
	}
	build(t, c)

	if c := mustParse(t, "busy_poll: true\nports: [{name: p1}]"); c.Switch.Spin != -1 {
		t.Errorf("busy_poll: spin = %d, want -1", c.Switch.Spin)
	}
}

// The bucket defaults to the rate × 20 µs, at least 2.5 KB (001 §4.2).
func TestBucketDefault(t *testing.T) {
	for _, tc := range []struct {
		rate string
		want int64
	}{{"100Mbit", 2500}, {"1Gbit", 2500}, {"10Gbit", 25000}, {"100Gbit", 250000}} {
		c := mustParse(t, fmt.Sprintf("ports: [{name: p, rate: %s}]", tc.rate))
		if got := c.Switch.Ports[0].Shaper.Bucket; got != tc.want {
			t.Errorf("rate %s: bucket %d, want %d", tc.rate, got, tc.want)
		}
	}
}

// TestEgressBatchingKeys: coalesce unset takes the dataplane's default,
// 0 means no batching (the dataplane's negative), other values pass
// through; transmit and live_min reach the AF_XDP options, inherited from
// port_defaults like every port key.
func TestEgressBatchingKeys(t *testing.T) {
	c := mustParse(t, `
port_defaults: {coalesce: 100us, afxdp: {transmit: xdp, live_min: 8}}
ports: [{name: a}, {name: b, coalesce: 0}, {name: c, coalesce: 2ms, afxdp: {transmit: socket}}]`)
	want := []time.Duration{100 * time.Microsecond, -1, 2 * time.Millisecond}
	tx := []afxdp.TxPath{afxdp.TxXDP, afxdp.TxXDP, afxdp.TxSocket}
	for i, p := range c.Switch.Ports {
		if p.Coalesce != want[i] || c.Ports[i].AFXDP.Transmit != tx[i] || c.Ports[i].AFXDP.LiveMin != 8 {
			t.Errorf("port %s: coalesce %v, transmit %v, live_min %d; want %v, %v, 8",
				p.Name, p.Coalesce, c.Ports[i].AFXDP.Transmit, c.Ports[i].AFXDP.LiveMin, want[i], tx[i])
		}
	}
	if r := mustParse(t, "ports: [{name: a, afxdp: {rx_timestamp: on}}, {name: b, afxdp: {rx_timestamp: off}}, {name: c}]"); r.Ports[0].AFXDP.RxStamp != afxdp.RxStampOn ||
		r.Ports[1].AFXDP.RxStamp != afxdp.RxStampOff || r.Ports[2].AFXDP.RxStamp != afxdp.RxStampAuto {
		t.Errorf("rx_timestamp on, off, unset gave %v, %v, %v", r.Ports[0].AFXDP.RxStamp, r.Ports[1].AFXDP.RxStamp, r.Ports[2].AFXDP.RxStamp)
	}
	if r := mustParse(t, "ports: [{name: a, afxdp: {tx_timestamp: on}}, {name: b}]"); !r.Ports[0].AFXDP.TxStamps || r.Ports[1].AFXDP.TxStamps {
		t.Errorf("tx_timestamp on, unset gave %v, %v", r.Ports[0].AFXDP.TxStamps, r.Ports[1].AFXDP.TxStamps)
	}
	if d := mustParse(t, "ports: [{name: a}]"); d.Switch.Ports[0].Coalesce != dataplane.DefaultCoalesce || d.Ports[0].AFXDP.Transmit != afxdp.TxAuto {
		t.Errorf("defaults: coalesce %v, transmit %v; want %v and auto",
			d.Switch.Ports[0].Coalesce, d.Ports[0].AFXDP.Transmit, dataplane.DefaultCoalesce)
	}
}

func TestPortDefaultsMerge(t *testing.T) {
	c := mustParse(t, `
afxdp: {mode: generic, frames: 8192}
port_defaults:
  rate: 1Gbit
  afxdp: {frames: 16384}
  scheduler: {kind: wrr, queues: {0: {weight: 3}, 1: {weight: 5}}}
  buffer: {alpha: 2, queues: {1: {cap: 50KB}}}
  markers: {enqueue: [{scheme: dctcp, k: 30KB}], dequeue: [{scheme: tcn}]}
ports:
  - name: a
  - name: b
    rate: 10Gbit
    afxdp: {mode: native}
    scheduler: {queues: {1: {weight: 7}}}
    buffer: {queues: {1: {alpha: 4}}}
    markers: {enqueue: []}
`)
	a, b := c.Switch.Ports[0], c.Switch.Ports[1]
	da, db := c.Ports[0], c.Ports[1]
	if a.Shaper.Rate != 1e9 || b.Shaper.Rate != 10e9 {
		t.Errorf("rates %d %d", a.Shaper.Rate, b.Shaper.Rate)
	}
	if da.AFXDP.Attach != afxdp.AttachGeneric || db.AFXDP.Attach != afxdp.AttachNative || da.AFXDP.Frames != 16384 || db.AFXDP.Frames != 16384 {
		t.Errorf("afxdp: a %v/%d b %v/%d", da.AFXDP.Attach, da.AFXDP.Frames, db.AFXDP.Attach, db.AFXDP.Frames)
	}
	if a.Scheduler.Kind != scheduler.WRR || a.Scheduler.Queues[1].Weight != 5 || b.Scheduler.Queues[1].Weight != 7 || b.Scheduler.Queues[0].Weight != 3 {
		t.Errorf("scheduler queues: a %+v b %+v", a.Scheduler.Queues, b.Scheduler.Queues)
	}
	if a.Queues[1].Cap != 50_000 || a.Queues[1].Alpha != 0 || a.Queues[0].Alpha != 2 || b.Queues[1].Alpha != 4 || b.Queues[1].Cap != 0 {
		t.Errorf("buffer: a %+v b %+v", a.Queues, b.Queues)
	}
	if len(da.Markers) != 2 || len(db.Markers) != 1 || db.Markers[0].Scheme != "tcn" {
		t.Errorf("markers: a %d, b %+v", len(da.Markers), db.Markers)
	}
	build(t, c)
}

// BCC's pool thresholds derived from the config's buffer model must match
// 002 §V-A's evaluation: C = 100 Gbit/s, RTT = 80 µs, λ = 0.72, S_min = 128
// KB, B = 3 MB, α = 4, N = 8, h = 8 µs give B_R = C·RTT·(1+λ) − S_min =
// 1.592 MB, K_max = B − B_R/α = 2.602 MB and K_min = K_max − C·N·h =
// 1.802 MB (002 §IV-C Eq. 2–3).
func TestBCCDerivesFromBufferModel(t *testing.T) {
	var b strings.Builder
	b.WriteString("pools: [{name: sp, size: 3MB}]\nport_defaults:\n  rate: 100Gbit\n  queues: 1\n  pool: sp\n")
	b.WriteString("  buffer: {alpha: 4, reserve: 128KB}\n  markers: {enqueue: [{scheme: bcc, rtt: 80us, lambda: 0.72}]}\nports:\n")
	for i := range 8 {
		fmt.Fprintf(&b, "  - name: p%d\n", i)
	}
	c := mustParse(t, b.String())
	mk := c.Ports[0].Markers[0]
	if len(mk.Specs) != 2 || mk.Specs[0].Name != marking.BCCPortMember || mk.Specs[1].Name != marking.BCCPoolMember {
		t.Fatalf("bcc specs = %+v", mk.Specs)
	}
	pool := marker(t, c, 0, 0, 1)
	const kmax, kmin = 3_000_000 - (1_720_000-128_000)/4, 3_000_000 - (1_720_000-128_000)/4 - 800_000
	for _, tc := range []struct {
		pool int64
		want marking.Verdict
	}{{kmin - 1, marking.Pass}, {kmax, marking.Mark}, {kmax + 10_000, marking.Mark}} {
		v := marking.View{PoolBytes: tc.pool, PoolSize: 3_000_000, LineRate: 100e9, Len: 1500}
		if got := pool.Mark(&v); got != tc.want {
			t.Errorf("pool %d bytes: %v, want %v (K_min %d, K_max %d)", tc.pool, got, tc.want, kmin, kmax)
		}
	}
	// The port member is a cut-off at λ·C·RTT = 0.72 × 1 MB on the port.
	port := marker(t, c, 0, 0, 0)
	for _, tc := range []struct {
		port int64
		want marking.Verdict
	}{{719_999, marking.Pass}, {720_000, marking.Mark}} {
		v := marking.View{PortBytes: tc.port, LineRate: 100e9, Len: 1500}
		if got := port.Mark(&v); got != tc.want {
			t.Errorf("port %d bytes: %v, want %v", tc.port, got, tc.want)
		}
	}
	build(t, c)
}

// dctcp split: queue i of weights w is marked at K_i = w_i/Σw·K (001
// §2.2.2 Eq. 2).
func TestDCTCPSplit(t *testing.T) {
	c := mustParse(t, "ports: [{name: p, queues: 2, scheduler: {queues: {0: {weight: 1}, 1: {weight: 3}}}, markers: {enqueue: [{scheme: dctcp, k: 40KB, split: true}]}}]")
	m := marker(t, c, 0, 0, 0)
	for _, tc := range []struct {
		queue  int
		weight int64
		bytes  int64
		want   marking.Verdict
	}{{0, 1, 9_999, marking.Pass}, {0, 1, 10_000, marking.Mark}, {1, 3, 29_999, marking.Pass}, {1, 3, 30_000, marking.Mark}} {
		v := marking.View{Queue: tc.queue, QueueBytes: tc.bytes, Weight: tc.weight, WeightSum: 4, Len: 1500}
		if got := m.Mark(&v); got != tc.want {
			t.Errorf("queue %d at %d bytes: %v, want %v", tc.queue, tc.bytes, got, tc.want)
		}
	}
}

// count: turns original RED's count correction on or off (Floyd and
// Jacobson 1993; BCC's pool RED has it on by default, 002 §IV-B). With it
// on, at p_b = 1/20 no gap between marks exceeds 19 packets; with it off,
// gaps are geometric and some do.
func TestREDCountKey(t *testing.T) {
	for _, tc := range []struct {
		yaml    string
		counted bool
	}{
		{"{scheme: red, measure: port, kmin: 100KB, kmax: 200KB, pmax: 0.1}", false},
		{"{scheme: red, measure: port, kmin: 100KB, kmax: 200KB, pmax: 0.1, count: false}", false},
		{"{scheme: red, measure: port, kmin: 100KB, kmax: 200KB, pmax: 0.1, count: true}", true},
		{"{scheme: bcc, port_threshold: 1MB, kmin: 100KB, kmax: 200KB, pmax: 0.1}", true},
		{"{scheme: bcc, port_threshold: 1MB, kmin: 100KB, kmax: 200KB, pmax: 0.1, count: false}", false},
	} {
		c := mustParse(t, "ports: [{name: p, markers: {enqueue: ["+tc.yaml+"]}}]")
		specs := c.Ports[0].Markers[0].Specs
		m := marker(t, c, 0, 0, len(specs)-1) // bcc: the pool member
		longest, last := 0, 0
		for i := range 20000 {
			v := marking.View{PortBytes: 150_000, PoolBytes: 150_000, QueueBytes: 1500, Len: 1500}
			if m.Mark(&v) == marking.Mark {
				longest, last = max(longest, i-last), i
			}
		}
		if counted := longest <= 19; counted != tc.counted {
			t.Errorf("%s: longest gap between marks %d packets, want count correction %v", tc.yaml, longest, tc.counted)
		}
	}
	if _, err := Parse([]byte("ports: [{name: p, markers: {enqueue: [{scheme: red, k: 1KB, count: 3}]}}]")); err == nil {
		t.Error("count: 3 accepted, want a boolean")
	}
}

func TestEverySchemeBuilds(t *testing.T) {
	c := mustParse(t, `
ports:
  - name: p
    rate: 10Gbit
    markers:
      enqueue:
        - {scheme: red, kmin: 20pkt, kmax: 60pkt, pmax: 0.2, weight: 0.002}
        - {scheme: dctcp, name: dctcp-port, measure: port, rtt: 80us, lambda: 0.72}
        - {scheme: mqecn, rtt: 100us}
        - {scheme: pmsb, port_threshold: 100KB}
        - {scheme: bcc, rtt: 80us}
        - {scheme: ecnsharp, name: ecnsharp-ql, queue_length: true}
      dequeue:
        - {scheme: tcn, lambda: 1, rtt: 150us}
        - {scheme: codel, target: 85us, interval: 200us}
        - {scheme: ecnsharp}
        - {scheme: pmsb, name: pmsb-deq, port_threshold: "0.5*C*RTT(100us)"}
`)
	var got []string
	for _, m := range c.Ports[0].Markers {
		for _, s := range m.Specs {
			got = append(got, s.Name)
		}
	}
	want := "red dctcp-port mqecn pmsb bcc-port bcc-pool ecnsharp-ql tcn codel ecnsharp pmsb-deq"
	if strings.Join(got, " ") != want {
		t.Errorf("members %v, want %s", got, want)
	}
	sw := build(t, c)
	names := map[string]bool{}
	for _, mc := range sw.Stats().Ports[0].Markers {
		names[mc.Name] = true
	}
	for _, n := range strings.Fields(want) {
		if !names[n] {
			t.Errorf("switch has no marker counter %q", n)
		}
	}
}

// Every error a config yields, flattened.
func errorsOf(err error) []*Error {
	var out []*Error
	var es Errors
	if errors.As(err, &es) {
		return es
	}
	var e *Error
	if errors.As(err, &e) {
		out = append(out, e)
	}
	return out
}

// errorKeys returns the keys err names, in order, joined by spaces.
func errorKeys(err error) string {
	var keys []string
	for _, e := range errorsOf(err) {
		keys = append(keys, e.Key)
	}
	return strings.Join(keys, " ")
}

func TestBadConfigs(t *testing.T) {
	const two = "ports: [{name: p1}, {name: p2}]\n"
	for _, tc := range []struct {
		name, yaml, key, msg string
	}{
		{"unknown top-level key", "bogus: 1\n" + two, "bogus", "unknown key; allowed here: log_level, workers"},
		{"unknown port key", "ports: [{name: p1, rat: 1Gbit}]", "ports[0].rat", "unknown key; allowed here: name, interface"},
		{"unknown nested key", "telemetry: {listne: x}\n" + two, "telemetry.listne", "unknown key"},
		{"unknown key in port_defaults", "port_defaults: {scheduler: {knd: sp}}\n" + two, "port_defaults.scheduler.knd", "unknown key"},
		{"wrong type", "workers: two\n" + two, "workers", `"two" is not an integer`},
		{"wrong type bool", "ports: [{name: p1, afxdp: {force: maybe}}]", "ports[0].afxdp.force", `"maybe" is not true or false`},
		{"mapping for a list", "ports: {name: p1}", "ports", "a mapping is not a list"},
		{"rate out of range", "ports: [{name: p1}, {name: p2, rate: 5Tbit}]", "ports[1].rate", `"5Tbit" outside [1Mbit, 400Gbit]`},
		{"rate too low", "ports: [{name: p1, rate: 500Kbit}]", "ports[0].rate", `"500Kbit" outside [1Mbit, 400Gbit]`},
		{"rate bad unit", "ports: [{name: p1, rate: 5GB}]", "ports[0].rate", `unknown unit "GB"`},
		{"size bad unit", "pools: [{name: a, size: 3 bananas}]\n" + two, "pools[0].size", "unknown unit"},
		{"size not whole", "pools: [{name: a, size: 1.5B}]\n" + two, "pools[0].size", "not a whole number of bytes"},
		{"duration without unit", "telemetry: {queue_sample_period: 100}\n" + two, "telemetry.queue_sample_period", "no unit"},
		{"period out of range", "telemetry: {queue_sample_period: 100ns}\n" + two, "telemetry.queue_sample_period", `"100ns" outside [1µs, 10s]`},
		{"listen not host:port", "telemetry: {listen: localhost}\n" + two, "telemetry.listen", "not host:port"},
		{"samples too many for memory", "telemetry: {queue_samples: 16777216}\n" + two, "telemetry.queue_samples", "exceed"},
		{"bad threshold", "ports: [{name: p1, markers: {enqueue: [{scheme: dctcp, k: 30 bananas}]}}]", "ports[0].markers.enqueue[0].k", "not a threshold"},
		{"bad threshold map key", "ports: [{name: p1, rate: 1Gbit, markers: {enqueue: [{scheme: dctcp, k: {lambda: 1, rt: 100us}}]}}]", "ports[0].markers.enqueue[0].k.rt", "allowed: lambda, rtt"},
		{"threshold map without rtt", "ports: [{name: p1, rate: 1Gbit, markers: {enqueue: [{scheme: dctcp, k: {lambda: 1}}]}}]", "ports[0].markers.enqueue[0].k", "needs rtt"},
		{"rate-dependent threshold on an unshaped port", "ports: [{name: p1, markers: {enqueue: [{scheme: dctcp, k: 100us}]}}]", "ports[0].markers.enqueue[0].k", "the port is unshaped; set ports[0].rate"},
		{"standard threshold needs rate", "ports: [{name: p1, markers: {enqueue: [{scheme: dctcp, rtt: 100us}]}}]", "ports[0].markers.enqueue[0]", "needs the port's rate"},
		{"unknown scheme", "ports: [{name: p1, markers: {enqueue: [{scheme: dctpc, k: 30KB}]}}]", "ports[0].markers.enqueue[0].scheme", `"dctpc" is not a scheme; want one of red, dctcp`},
		{"missing scheme", "ports: [{name: p1, markers: {enqueue: [{k: 30KB}]}}]", "ports[0].markers.enqueue[0].scheme", "missing"},
		{"key of another scheme", "ports: [{name: p1, markers: {enqueue: [{scheme: dctcp, kmin: 30KB}]}}]", "ports[0].markers.enqueue[0].kmin", "not a key of scheme dctcp"},
		{"dequeue-only scheme at enqueue", "ports: [{name: p1, markers: {enqueue: [{scheme: tcn, threshold: 100us}]}}]", "ports[0].markers.enqueue[0].scheme", "move it to markers.dequeue"},
		{"codel at enqueue", "ports: [{name: p1, markers: {enqueue: [{scheme: codel}]}}]", "ports[0].markers.enqueue[0].scheme", "move it to markers.dequeue"},
		{"enqueue-only scheme at dequeue", "ports: [{name: p1, rate: 1Gbit, markers: {dequeue: [{scheme: mqecn, rtt: 100us}]}}]", "ports[0].markers.dequeue[0].scheme", "move it to markers.enqueue"},
		{"kmin above kmax", "ports: [{name: p1, markers: {enqueue: [{scheme: red, kmin: 40KB, kmax: 30KB}]}}]", "ports[0].markers.enqueue[0].kmin", "above kmax"},
		{"k with kmin", "ports: [{name: p1, markers: {enqueue: [{scheme: red, k: 40KB, kmin: 30KB}]}}]", "ports[0].markers.enqueue[0].k", "give k or kmin and kmax"},
		{"lambda out of range", "ports: [{name: p1, rate: 1Gbit, markers: {enqueue: [{scheme: dctcp, rtt: 100us, lambda: 20}]}}]", "ports[0].markers.enqueue[0].lambda", "20 outside (0, 16]"},
		{"pmax out of range", "ports: [{name: p1, markers: {enqueue: [{scheme: red, kmin: 1KB, kmax: 2KB, pmax: 1.5}]}}]", "ports[0].markers.enqueue[0].pmax", "1.5 outside (0, 1]"},
		{"codel target not below interval", "ports: [{name: p1, markers: {dequeue: [{scheme: codel, target: 3ms, interval: 2ms}]}}]", "ports[0].markers.dequeue[0].target", "must be below interval"},
		{"two markers one name", "ports: [{name: p1, markers: {enqueue: [{scheme: dctcp, k: 1KB}, {scheme: dctcp, k: 2KB}]}}]", "ports[0].markers.enqueue[1].scheme", `name "dctcp" is already used`},
		{"marker type error", "ports: [{name: p1, markers: {enqueue: [{scheme: red, kmin: 1KB, weight: heavy}]}}]", "ports[0].markers.enqueue[0].weight", `"heavy" is not a number`},
		{"marker not a mapping", "ports: [{name: p1, markers: {enqueue: [dctcp]}}]", "ports[0].markers.enqueue[0]", "not a marker"},
		{"patch to a missing port", "forwarding: {patches: [{from: p1, to: p9}]}\n" + two, "forwarding.patches[0].to", `"p9" is not a port; ports are p1, p2`},
		{"mac rule to a missing port", "forwarding: {macs: [{mac: '02:00:00:00:00:01', port: x}]}\n" + two, "forwarding.macs[0].port", `"x" is not a port`},
		{"bad mac", "forwarding: {macs: [{mac: '02:00', port: p1}]}\n" + two, "forwarding.macs[0].mac", "not a 6-byte MAC"},
		{"bad prefix", "forwarding: {prefixes: [{prefix: 198.18.0.0/33, port: p1}]}\n" + two, "forwarding.prefixes[0].prefix", "not an IP prefix"},
		{"patch to itself", "forwarding: {patches: [{from: p1, to: p1}]}\n" + two, "forwarding.patches[0].to", "patched to itself"},
		{"negative mac limit", "forwarding: {mac_limit: -1}\n" + two, "forwarding.mac_limit", "-1 outside [0, 16777216]"},
		{"flood rate too high", "forwarding: {flood_rate: 2000000000}\n" + two, "forwarding.flood_rate", "2000000000 outside [0, 1000000000]"},
		{"flood burst 0", "forwarding: {flood_burst: 0}\n" + two, "forwarding.flood_burst", "0 outside [1, 1048576]"},
		{"missing pool", "ports: [{name: p1, pool: nope}]", "ports[0].pool", `"nope" is not a pool; pools are default`},
		{"pool without size", "pools: [{name: a}]\n" + two, "pools[0].size", "missing"},
		{"duplicate pool", "pools: [{name: a, size: 1MB}, {name: a, size: 1MB}]\n" + two, "pools[1].name", "already names pools[0]"},
		{"duplicate port name", "ports: [{name: p1}, {name: p1, interface: x}]", "ports[1].name", `"p1" already names ports[0]`},
		{"duplicate interface", "ports: [{name: p1, interface: eth0}, {name: p2, interface: eth0}]", "ports[1].interface", "already driven by ports[0]"},
		{"interface too long", "ports: [{name: p1, interface: averyverylonginterface}]", "ports[0].interface", "1 to 15 bytes"},
		{"missing port name", "ports: [{interface: eth0}]", "ports[0].name", "missing"},
		{"no ports", "workers: 1\n", "ports", "none configured"},
		{"too many queues", "ports: [{name: p1, queues: 65}]", "ports[0].queues", "65 outside [1, 64]"},
		{"scheduler kind", "ports: [{name: p1, scheduler: {kind: fifo}}]", "ports[0].scheduler.kind", `"fifo" is not one of sp, wrr, dwrr, wfq`},
		{"scheduler queue index", "ports: [{name: p1, queues: 2, scheduler: {queues: {2: {weight: 1}}}}]", "ports[0].scheduler.queues.2", "queue 2 outside [0, 1]"},
		{"dwrr quantum below mtu", "ports: [{name: p1, scheduler: {queues: {0: {quantum: 1000}}}}]", "ports[0].scheduler.queues.0.quantum", `"1000" outside [1538, 16MiB]`},
		{"quantum on a strict queue", "ports: [{name: p1, scheduler: {queues: {0: {strict: true, quantum: 3000}}}}]", "ports[0].scheduler.queues.0.quantum", "strict"},
		{"weight out of range", "ports: [{name: p1, scheduler: {kind: wfq, queues: {0: {weight: 0}}}}]", "ports[0].scheduler.queues.0.weight", "0 outside [1, 65536]"},
		{"beta out of range", "ports: [{name: p1, scheduler: {beta: 1}}]", "ports[0].scheduler.beta", "1 outside (0, 1)"},
		{"alpha with cap", "ports: [{name: p1, buffer: {alpha: 2, cap: 10KB}}]", "ports[0].buffer.alpha", "not both"},
		{"alpha out of range", "ports: [{name: p1, buffer: {queues: {3: {alpha: 300}}}}]", "ports[0].buffer.queues.3.alpha", "300 outside (0, 256]"},
		{"cap above pool", "pools: [{name: a, size: 1MB}]\nports: [{name: p1, buffer: {cap: 2MB}}]", "ports[0].buffer.cap", `"2MB" outside [0, 1MB]`},
		{"bucket too big", "ports: [{name: p1, bucket: 1GB}]", "ports[0].bucket", "outside [0, 256MiB]"},
		{"overhead", "ports: [{name: p1, overhead: ip}]", "ports[0].overhead", `"ip" is not one of ethernet, none`},
		{"non_ect", "ports: [{name: p1, non_ect: mark}]", "ports[0].non_ect", `"mark" is not one of drop, pass`},
		{"delay too long", "ports: [{name: p1, delay: {fixed: 2s}}]", "ports[0].delay.fixed", `"2s" outside [0, 1s]`},
		{"coalesce too long", "ports: [{name: p1, coalesce: 11ms}]", "ports[0].coalesce", `"11ms" outside [0, 10ms]`},
		{"coalesce negative", "ports: [{name: p1, coalesce: -1us}]", "ports[0].coalesce", "outside [0, 10ms]"},
		{"transmit", "ports: [{name: p1, afxdp: {transmit: kernel}}]", "ports[0].afxdp.transmit", `"kernel" is not one of`},
		{"live_min", "ports: [{name: p1, afxdp: {live_min: 300}}]", "ports[0].afxdp.live_min", "300 outside [1, 256]"},
		{"rx_timestamp", "ports: [{name: p1, afxdp: {rx_timestamp: ptp}}]", "ports[0].afxdp.rx_timestamp", `"ptp" is not one of`},
		{"rx_timestamp with xdp", "ports: [{name: p1, afxdp: {rx_timestamp: on, transmit: xdp}}]", "ports[0].afxdp.rx_timestamp", "BPF_PROG_RUN cannot run the device-bound program"},
		{"tx_timestamp", "ports: [{name: p1, afxdp: {tx_timestamp: hw}}]", "ports[0].afxdp.tx_timestamp", `"hw" is not one of`},
		{"tx_timestamp with xdp", "ports: [{name: p1, afxdp: {tx_timestamp: on, transmit: xdp}}]", "ports[0].afxdp.tx_timestamp", "no completion to stamp"},
		{"rx_timestamp generic", "ports: [{name: p1, afxdp: {rx_timestamp: on, mode: generic}}]", "ports[0].afxdp.rx_timestamp", "attaches natively"},
		{"delay negative", "ports: [{name: p1, delay: {jitter: -1us}}]", "ports[0].delay.jitter", "outside [0, 1s]"},
		{"delay distribution", "ports: [{name: p1, delay: {jitter: 1us, distribution: pareto}}]", "ports[0].delay.distribution", `"pareto" is not one of uniform, normal, exponential`},
		{"per_queue index", "ports: [{name: p1, delay: {per_queue: {9: {fixed: 1us}}}}]", "ports[0].delay.per_queue.9", "queue 9 outside [0, 7]"},
		{"per_dscp_class out of range", "ports: [{name: p1, delay: {per_dscp_class: {8: {fixed: 1us}}}}]", "ports[0].delay.per_dscp_class.8", "class 8 outside [0, 7]"},
		{"per_dscp_class split over queues", "classifier: {dscp: {8: 3}}\nports: [{name: p1, delay: {per_dscp_class: {1: {fixed: 1us}}}}]", "ports[0].delay.per_dscp_class.1", "go to 2 different queues"},
		{"per_dscp_class clashes with per_queue", "ports: [{name: p1, delay: {per_queue: {1: {fixed: 2us}}, per_dscp_class: {1: {fixed: 1us}}}}]", "ports[0].delay.per_dscp_class.1", "per_queue already sets"},
		{"classifier dscp key", "classifier: {dscp: {64: 1}}\n" + two, "classifier.dscp.64", "DSCP 64 outside [0, 63]"},
		{"classifier queue beyond ports", "classifier: {dscp: {46: 9}}\n" + two, "classifier.dscp.46", "queue 9 outside [0, 7]"},
		{"classifier pcp", "classifier: {pcp: {8: 1}}\n" + two, "classifier.pcp.8", "PCP 8 outside [0, 7]"},
		{"frames not a power of two", "frames: 1000\n" + two, "frames", "1000 is not a power of two in [64, 4194304]"},
		{"workers", "workers: 65\n" + two, "workers", "65 outside [1, 64]"},
		{"worker beyond workers", "workers: 2\nports: [{name: p1, worker: 2}]", "ports[0].worker", "2 outside [-1, 1]"},
		{"spin with busy_poll", "spin: 10\nbusy_poll: true\n" + two, "spin", "busy_poll"},
		{"duplicate cpu", "cpus: [1, 1]\n" + two, "cpus[1]", "listed twice"},
		{"log level", "log_level: loud\n" + two, "log_level", `"loud" is not one of debug, info, warn, error`},
		{"mtu above frame_size", "ports: [{name: p1, mtu: 3000}]", "ports[0].mtu", "above frame_size 2048"},
		{"afxdp frame size", "afxdp: {frame_size: 3000}\n" + two, "afxdp.frame_size", "3000 is not 2048 or 4096"},
		{"afxdp usable frame above switch frame", "afxdp: {frame_size: 4096}\n" + two, "afxdp.frame_size", "raise frame_size to at least 3840"},
		{"afxdp ring", "ports: [{name: p1, afxdp: {rx_ring: 100}}]", "ports[0].afxdp.rx_ring", "100 is not a power of two in [64, 65536]"},
		{"afxdp tx ring above completion ring", "afxdp: {tx_ring: 4096, frames: 8192}\n" + two, "afxdp.tx_ring", "above completion_ring 2048"},
		{"afxdp completion ring", "afxdp: {tx_ring: 4096, completion_ring: 2048, frames: 8192}\n" + two, "afxdp.completion_ring", "below tx_ring 4096"},
		{"afxdp frames below rings", "afxdp: {fill_ring: 4096}\n" + two, "afxdp.fill_ring", "fill_ring + tx_ring = 6144 exceed frames 4096"},
		{"afxdp zerocopy generic", "afxdp: {mode: generic, zerocopy: 'on'}\n" + two, "afxdp.zerocopy", "needs the program attached natively"},
		{"afxdp mode", "port_defaults: {afxdp: {mode: turbo}}\n" + two, "port_defaults.afxdp.mode", `"turbo" is not one of auto, native, generic`},
		{"port_defaults name", "port_defaults: {name: x}\n" + two, "port_defaults.name", "not allowed in port_defaults"},
		{"port_defaults bad rate", "port_defaults: {rate: 5Tbit}\n" + two, "port_defaults.rate", `"5Tbit" outside [1Mbit, 400Gbit]`},
		{"duplicate key", "ports: [{name: p1, rate: 1Gbit, rate: 2Gbit}]", "ports[0].rate", "given twice"},
		{"bcc with only caps", "ports: [{name: p1, rate: 1Gbit, buffer: {cap: 10KB}, markers: {enqueue: [{scheme: bcc, rtt: 100us}]}}]", "ports[0].markers.enqueue[0]", "every queue of pool \"default\" has a static cap"},
		{"ecnsharp bytes without queue_length", "ports: [{name: p1, markers: {dequeue: [{scheme: ecnsharp, ins_target_bytes: 30KB}]}}]", "ports[0].markers.dequeue[0].ins_target_bytes", "needs queue_length"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil {
				t.Fatalf("no error for\n%s", tc.yaml)
			}
			var all []string
			for _, e := range errorsOf(err) {
				if e.Key == tc.key && strings.Contains(e.Msg, tc.msg) {
					return
				}
				all = append(all, fmt.Sprintf("%q: %s", e.Key, e.Msg))
			}
			t.Errorf("want key %q with %q; got:\n%s", tc.key, tc.msg, strings.Join(all, "\n"))
		})
	}
}

func TestErrorFormat(t *testing.T) {
	_, err := Parse([]byte("ports:\n  - name: p1\n  - name: p2\n    rate: 5Tbit\n"))
	want := `ports[1].rate: "5Tbit" outside [1Mbit, 400Gbit] (or 0 for unshaped) (line 4)`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
	// Every problem is reported, in file order.
	_, err = Parse([]byte("workers: 0\nframes: 3\nports:\n  - name: p1\n    queues: 0\n"))
	var keys []string
	for _, e := range errorsOf(err) {
		keys = append(keys, e.Key)
	}
	if strings.Join(keys, " ") != "workers frames ports[0].queues" {
		t.Errorf("keys %v, want workers frames ports[0].queues", keys)
	}
	_, err = Load("testdata/does-not-exist.yaml")
	if err == nil || !strings.Contains(err.Error(), "does-not-exist.yaml") {
		t.Errorf("Load of a missing file: %v", err)
	}
}

// An error in port_defaults is reported once, at port_defaults, however
// many ports inherit it.
func TestPortDefaultsErrorOnce(t *testing.T) {
	_, err := Parse([]byte("port_defaults:\n  markers: {enqueue: [{scheme: red, kmin: 1KB, weight: heavy}]}\n  rate: 5Tbit\nports: [{name: a}, {name: b}, {name: c}]\n"))
	if got := errorKeys(err); got != "port_defaults.markers.enqueue[0].weight port_defaults.rate" {
		t.Errorf("errors at %v, want each once at port_defaults:\n%v", got, err)
	}
}

func TestSyntaxAndEmpty(t *testing.T) {
	for _, tc := range []struct{ yaml, msg string }{
		{"", "empty"},
		{"ports: [", "did not find"},
		{"- a\n- b\n", "at the top level"},
		{"ports: [{name: p1}]\n---\nworkers: 2\n", "second YAML document"},
	} {
		_, err := Parse([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.msg)
		}
	}
}

func TestDelayDistribution(t *testing.T) {
	for name, want := range map[string]dataplane.Distribution{
		"": dataplane.Uniform, "uniform": dataplane.Uniform, "normal": dataplane.Normal, "exponential": dataplane.Exponential,
	} {
		y := "ports: [{name: p1, delay: {fixed: 70us, jitter: 20us}}]"
		if name != "" {
			y = "ports: [{name: p1, delay: {fixed: 70us, jitter: 20us, distribution: " + name + "}}]"
		}
		c := mustParse(t, y)
		if d := c.Switch.Ports[0].Delay; d.Distribution != want || d.Fixed != 70*time.Microsecond || d.Jitter != 20*time.Microsecond {
			t.Errorf("distribution %q: delay %+v, want %v", name, d, want)
		}
	}
}

// mac_limit and flood_rate 0 turn the limits off; the dataplane reads
// that as a negative limit.
func TestForwardingLimits(t *testing.T) {
	c := mustParse(t, "ports: [{name: p1}]\nforwarding: {mac_limit: 0, flood_rate: 0}\n")
	if f := c.Switch.Forwarding; f.MACLimit >= 0 || f.FloodRate >= 0 {
		t.Errorf("limits 0: %+v, want both off (negative)", f)
	}
	c = mustParse(t, "ports: [{name: p1}]\nforwarding: {mac_limit: 8, flood_rate: 500, flood_burst: 20}\n")
	if f := c.Switch.Forwarding; f.MACLimit != 8 || f.FloodRate != 500 || f.FloodBurst != 20 {
		t.Errorf("limits: %+v", f)
	}
}
