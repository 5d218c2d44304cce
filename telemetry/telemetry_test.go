package telemetry

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/internal/buildinfo"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

const (
	rate     = 1_000_000_000 // bit/s of port b
	frameLen = 1514
	wire     = frameLen + 4 + 20 // the Ethernet wire size the shaper charges: 1538 bytes
	burst    = 50
	kFrames  = 10 // the DCTCP cut-off K on port b, in frames
)

// rig is a two-port switch on memory ports in virtual time: everything
// received on a leaves by b, where a shaper at 1 Gbit/s builds a queue and
// DCTCP marks at K = 10 frames.
type rig struct {
	t     testing.TB
	clk   *timestamp.Virtual
	sw    *dataplane.Switch
	hosts []*memport.Port
	srv   *Server
}

func newRig(t testing.TB, samples int) *rig { return newCapRig(t, samples, 0) }

// newCapRig is newRig with a static cap of capB bytes on queue 1 of b
// instead of a Dynamic Threshold (0: none).
func newCapRig(t testing.TB, samples int, capB int64, change ...func(*dataplane.PortConfig)) *rig {
	t.Helper()
	r := &rig{t: t, clk: timestamp.NewVirtual(0)}
	port := func(name string, shaped int64, markers ...dataplane.MarkerSpec) dataplane.PortConfig {
		return dataplane.PortConfig{
			Name:      name,
			Scheduler: scheduler.Config{Kind: scheduler.DWRR, NumQueues: 2, LineRate: shaped, Overhead: scheduler.OverheadEthernet},
			Shaper:    scheduler.ShaperConfig{Rate: shaped, Bucket: 2500, Overhead: scheduler.OverheadEthernet}, // 001 §4.2
			Queues:    []buffer.QueueConfig{{Alpha: 1}, {Alpha: 1}},
			Enqueue:   markers,
			Worker:    -1,
		}
	}
	dctcp := dataplane.MarkerSpec{Name: "dctcp", New: func(q int) (marking.Marker, error) {
		return marking.NewRED(marking.CutOff(marking.MeasureQueue, marking.Bytes(kFrames*frameLen)), marking.Enqueue, q)
	}}
	pb := port("b", rate, dctcp)
	if capB > 0 {
		pb.Queues[1] = buffer.QueueConfig{Cap: capB}
	}
	for _, f := range change {
		f(&pb)
	}
	cfg := dataplane.Config{
		Pools:      []buffer.PoolConfig{{Size: 1_000_000}},
		Ports:      []dataplane.PortConfig{port("a", 0), pb},
		Forwarding: dataplane.Forwarding{Patches: []dataplane.Patch{{From: 0, To: 1}}},
	}
	devs := make([]ports.Port, 2)
	for i, name := range []string{"a", "b"} {
		sw, host, err := memport.Pair(name, "host-"+name, r.clk, memport.Link{})
		if err != nil {
			t.Fatal(err)
		}
		devs[i], r.hosts = sw, append(r.hosts, host)
	}
	sw, err := dataplane.New(cfg, devs, r.clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sw.Close() })
	r.sw = sw
	r.srv, err = New(sw, Options{Clock: r.clk, Samples: samples, SamplePeriod: 10 * time.Microsecond, PoolNames: []string{"shared"}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// sendBurst puts burst ECT(0) frames of DSCP 8 (class 1 → queue 1) on a.
func (r *rig) sendBurst() {
	f := packettest.UDP4(r.t, packettest.Options{DSCP: 8, ECN: packet.ECT0, Size: frameLen})
	ds := make([]*packet.Desc, burst)
	for i := range ds {
		ds[i] = &packet.Desc{Buf: append([]byte(nil), f...), Len: len(f)}
	}
	if n, err := r.hosts[0].Transmit(ds); n != burst || err != nil {
		r.t.Fatalf("host transmit: %d, %v", n, err)
	}
}

// run advances the clock in steps of dt for d, polling the switch and
// taking a sample after each step, and discarding what reaches the hosts.
func (r *rig) run(d, dt time.Duration) {
	rx := make([]*packet.Desc, 64)
	for i := range rx {
		rx[i] = &packet.Desc{Buf: make([]byte, 2048)}
	}
	for end := r.clk.Now() + int64(d); r.clk.Now() < end; {
		r.clk.Advance(dt)
		r.sw.Poll()
		r.srv.Sampler().Sample()
		for _, h := range r.hosts {
			for n, _ := h.Receive(rx); n > 0; n, _ = h.Receive(rx) {
			}
		}
	}
}

func get(t *testing.T, h http.Handler, url string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, url, nil)
	req.Host = "localhost:9090"
	h.ServeHTTP(rec, req)
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// The queue of port b drains at the shaped line rate: between two samples
// dt apart, C·dt/8 wire bytes leave, i.e. C·dt/8 · 1514/1538 buffered
// bytes, within one frame (the shaper sends whole frames on credit, and a
// backlogged port never saves credit; see scheduler.Shaper).
func TestQueuesSeriesFollowsLineRate(t *testing.T) {
	r := newRig(t, 4096)
	r.sendBurst()
	r.run(time.Millisecond, 10*time.Microsecond)

	res, body := get(t, r.srv.Handler(), "/queues?port=b")
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /queues: %d %s", res.StatusCode, body)
	}
	var s Series
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	if s.Clock != "virtual" {
		t.Errorf("series clock %q, want virtual", s.Clock)
	}
	if s.PeriodNS != 10_000 || len(s.Times) != 100 || len(s.Ports) != 1 || s.Ports[0].Name != "b" || len(s.Ports[0].Queues) != 2 {
		t.Fatalf("series shape: period %d, %d samples, ports %+v", s.PeriodNS, len(s.Times), s.Ports)
	}
	if len(s.Pools) != 1 || s.Pools[0].Name != "shared" {
		t.Errorf("pools = %+v", s.Pools)
	}
	q1 := s.Ports[0].Queues[1]
	for i, tm := range s.Times {
		if want := int64(i+1) * 10_000; tm != want {
			t.Fatalf("t[%d] = %d, want %d", i, tm, want)
		}
		if s.Ports[0].Queues[0][i] != 0 {
			t.Fatalf("queue 0 holds %d bytes at t[%d]; the burst is DSCP class 1", s.Ports[0].Queues[0][i], i)
		}
		if i > 0 && q1[i] > q1[i-1] {
			t.Fatalf("queue 1 grew from %d to %d at t[%d] with no arrivals", q1[i-1], q1[i], i)
		}
	}
	// At 10 µs the first poll has queued the whole burst and the shaper has
	// let out its full 2.5 KB bucket: two frames, the second on credit.
	if q1[0] < (burst-2)*frameLen || q1[0] > (burst-1)*frameLen {
		t.Errorf("queue 1 at 10us: %d bytes, want about %d", q1[0], (burst-1)*frameLen)
	}
	// Over 200 µs of backlog, the drained bytes match C·t.
	const span = 20 // samples
	drained := q1[5] - q1[5+span]
	want := float64(rate) * float64(span*10_000) / 8e9 * frameLen / wire
	if d := float64(drained) - want; d < -frameLen || d > frameLen {
		t.Errorf("drained %d bytes in %d µs, want %.0f ± one frame (C = 1 Gbit/s)", drained, span*10, want)
	}
	// 50 frames of 1538 wire bytes take 615 µs: empty by 1 ms.
	if last := q1[len(q1)-1]; last != 0 {
		t.Errorf("queue 1 holds %d bytes after 1 ms", last)
	}
	if s.Pools[0].Bytes[0] != q1[0] {
		t.Errorf("pool %d bytes, queue %d: the pool holds exactly the queue", s.Pools[0].Bytes[0], q1[0])
	}
}

func TestQueuesSinceLimitAndTruncation(t *testing.T) {
	r := newRig(t, 16)
	r.sendBurst()
	r.run(100*time.Microsecond, 10*time.Microsecond) // samples at 10..100 µs
	s, err := r.srv.Sampler().Series(50_000, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Times) != 5 || s.Times[0] != 60_000 || s.Next != 100_000 || s.Truncated {
		t.Errorf("since 50us: times %v next %d truncated %v", s.Times, s.Next, s.Truncated)
	}
	if s, _ := r.srv.Sampler().Series(s.Next, 0); len(s.Times) != 0 || s.Next != 100_000 {
		t.Errorf("since next: %d samples, next %d; want none, the same next", len(s.Times), s.Next)
	}
	if s, _ := r.srv.Sampler().Series(-1, 3); len(s.Times) != 3 || s.Times[0] != 80_000 {
		t.Errorf("limit 3: %v", s.Times)
	}
	r.run(100*time.Microsecond, 10*time.Microsecond) // 20 samples in a ring of 16
	s, _ = r.srv.Sampler().Series(30_000, 0)
	if !s.Truncated || len(s.Times) != 16 || s.Times[0] != 50_000 {
		t.Errorf("after wrap, since 30us: truncated %v, times %v", s.Truncated, s.Times)
	}
	if s, _ := r.srv.Sampler().Series(40_000, 0); s.Truncated {
		t.Error("since 40us: truncated, but only samples up to 40us were overwritten")
	}

	for url, code := range map[string]int{
		"/queues?since=abc":        http.StatusBadRequest,
		"/queues?limit=-1":         http.StatusBadRequest,
		"/queues?port=zz":          http.StatusNotFound,
		"/queues?port=a,b&limit=2": http.StatusOK,
		"/queues?port=a&port=b":    http.StatusOK,
		"/queues?since=150000":     http.StatusOK,
		"/nope":                    http.StatusNotFound,
		"/":                        http.StatusOK,
		"/metrics":                 http.StatusOK,
		"/stats":                   http.StatusOK,
	} {
		if res, body := get(t, r.srv.Handler(), url); res.StatusCode != code {
			t.Errorf("GET %s: %d %s, want %d", url, res.StatusCode, body, code)
		}
	}
	_, body := get(t, r.srv.Handler(), "/queues?port=a,b&limit=2")
	var two Series
	if err := json.Unmarshal([]byte(body), &two); err != nil || len(two.Ports) != 2 || len(two.Times) != 2 {
		t.Errorf("port=a,b&limit=2: %v %+v", err, two)
	}
}

// /stats and /metrics report what DCTCP did: with all 50 frames queued at
// once, frame i finds i frames ahead, so frames 10..49 are marked (a
// cut-off at K = 10 frames, 001 §2.2).
func TestStatsAndMetrics(t *testing.T) {
	r := newRig(t, 1024)
	r.sendBurst()
	r.run(time.Millisecond, 10*time.Microsecond)
	const marked = burst - kFrames

	res, body := get(t, r.srv.Handler(), "/stats")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /stats: %d", res.StatusCode)
	}
	var st StatsResponse
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	a, b := st.Ports[0], st.Ports[1]
	switch {
	case st.TimeNS != r.clk.Now() || len(st.PoolNames) != 1:
		t.Errorf("time %d pools %v", st.TimeNS, st.PoolNames)
	case st.Build == nil || *st.Build != buildinfo.Read():
		t.Errorf("build %+v, want this binary's and machine's", st.Build)
	case a.Name != "a" || a.RxPackets != burst || a.RxBytes != burst*frameLen:
		t.Errorf("port a: %+v", a)
	case b.TxPackets != burst || b.Queues[1].Enqueued != burst || b.Queues[1].Dequeued != burst:
		t.Errorf("port b: %+v", b)
	case b.Queues[1].MarkedEnq != marked || b.Queues[1].Peak < (burst-1)*frameLen:
		t.Errorf("port b queue 1: marked %d peak %d, want %d marked", b.Queues[1].MarkedEnq, b.Queues[1].Peak, marked)
	case len(b.Markers) != 1 || b.Markers[0].Name != "dctcp" || b.Markers[0].Marks != marked:
		t.Errorf("port b markers: %+v", b.Markers)
	case st.MACTable == nil || st.MACTable.Entries != 1 || a.MACs != 1 || b.MACs != 0:
		t.Errorf("mac table %+v, port a %d MACs, b %d", st.MACTable, a.MACs, b.MACs)
	case a.Device == nil || b.Device == nil || a.Device.RxPackets != burst || b.Device.TxPackets != burst:
		t.Errorf("device counters: port a %+v, b %+v; want a's device to have received %d, b's to have sent them", a.Device, b.Device, burst)
	}

	res, body = get(t, r.srv.Handler(), "/metrics")
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	metrics := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if line := sc.Text(); !strings.HasPrefix(line, "#") {
			if i := strings.LastIndexByte(line, ' '); i > 0 {
				metrics[line[:i]] = line[i+1:]
			}
		}
	}
	for series, want := range map[string]string{
		`ecnswitch_port_rx_packets_total{port="a"}`:                                fmt.Sprint(burst),
		`ecnswitch_port_tx_packets_total{port="b"}`:                                fmt.Sprint(burst),
		`ecnswitch_port_tx_bytes_total{port="b"}`:                                  fmt.Sprint(burst * frameLen),
		`ecnswitch_queue_marked_packets_total{port="b",queue="1",stage="enqueue"}`: fmt.Sprint(marked),
		`ecnswitch_queue_marked_packets_total{port="b",queue="1",stage="dequeue"}`: "0",
		`ecnswitch_queue_enqueued_packets_total{port="b",queue="1"}`:               fmt.Sprint(burst),
		`ecnswitch_marker_marks_total{marker="dctcp",port="b"}`:                    fmt.Sprint(marked),
		`ecnswitch_queue_bytes{port="b",queue="1"}`:                                "0",
		`ecnswitch_pool_size_bytes{pool="shared"}`:                                 "1e+06",
		`ecnswitch_queue_peak_bytes{port="b",queue="1"}`:                           fmt.Sprint(b.Queues[1].Peak),
		// The burst's one source MAC, learned on a.
		`ecnswitch_port_macs{port="a"}`:              "1",
		`ecnswitch_port_macs{port="b"}`:              "0",
		`ecnswitch_port_mac_limited_total{port="a"}`: "0",
		`ecnswitch_mac_table_slots`:                  "4096",
		`ecnswitch_mac_table_entries`:                "1",
		`ecnswitch_mac_table_full_total`:             "0",
		`ecnswitch_mac_table_port_limit`:             "1024",
		// The memory links' own counters.
		`ecnswitch_port_device_rx_packets_total{port="a"}`: fmt.Sprint(burst),
		`ecnswitch_port_device_tx_packets_total{port="b"}`: fmt.Sprint(burst),
		`ecnswitch_port_device_rx_dropped_total{port="a"}`: "0",
	} {
		if got, ok := metrics[series]; !ok || got != want {
			t.Errorf("%s = %q (present %v), want %s", series, got, ok, want)
		}
	}
	if _, ok := metrics["go_goroutines"]; !ok {
		t.Error("no Go runtime metrics")
	}
}

// Drops are labelled by reason: a burst into a queue capped at 20 frames
// keeps 20 and drops the other 30 at the static cap; DCTCP marks the 10 of
// the 20 that found K = 10 frames ahead of them.
func TestMetricsDropReasons(t *testing.T) {
	r := newCapRig(t, 16, 20*frameLen)
	r.sendBurst()
	r.run(time.Millisecond, 10*time.Microsecond)
	_, body := get(t, r.srv.Handler(), "/metrics")
	for _, want := range []string{
		`ecnswitch_queue_drops_total{port="b",queue="1",reason="static_cap"} 30`,
		`ecnswitch_port_drops_total{port="b",reason="static_cap"} 30`,
		`ecnswitch_queue_marked_packets_total{port="b",queue="1",stage="enqueue"} 10`,
		`ecnswitch_port_tx_packets_total{port="b"} 20`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// Trims are counted per port and per queue, on the queue that refused
// them: a burst of 50 into a queue capped at 20 frames trims 30 onto
// queue 0, which has room for 12 of their 106-byte headers; the queue's
// drops count all 30 refusals, the port's only the 18 headers dropped.
func TestMetricsTrims(t *testing.T) {
	r := newCapRig(t, 16, 20*frameLen, func(pc *dataplane.PortConfig) {
		pc.Queues[0] = buffer.QueueConfig{Cap: 12 * 106}
		pc.Trim = &dataplane.Trim{Queue: 0, DSCP: 46}
	})
	r.sendBurst()
	r.run(time.Millisecond, 10*time.Microsecond)
	_, body := get(t, r.srv.Handler(), "/metrics")
	for _, want := range []string{
		`ecnswitch_queue_trimmed_packets_total{port="b",queue="1"} 30`,
		`ecnswitch_queue_trim_dropped_packets_total{port="b",queue="1"} 18`,
		`ecnswitch_queue_trimmed_packets_total{port="b",queue="0"} 0`,
		`ecnswitch_port_trimmed_packets_total{port="b"} 30`,
		`ecnswitch_port_trim_dropped_packets_total{port="b"} 18`,
		`ecnswitch_queue_drops_total{port="b",queue="1",reason="static_cap"} 30`,
		`ecnswitch_queue_drops_total{port="b",queue="0",reason="static_cap"} 18`,
		`ecnswitch_port_drops_total{port="b",reason="static_cap"} 18`,
		`ecnswitch_port_tx_packets_total{port="b"} 32`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestServerStartAndShutdown(t *testing.T) {
	r := newRig(t, 16)
	srv, err := New(r.sw, Options{Listen: "127.0.0.1:0", Clock: r.clk, Samples: 64, SamplePeriod: 50 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	srv.Handle("GET /capture/status", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "idle") }))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err == nil {
		t.Error("second Start: no error")
	}
	base := "http://" + srv.Addr()
	for path, want := range map[string]string{"/capture/status": "idle", "/": "GET /capture/status"} {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if !strings.Contains(string(b), want) {
			t.Errorf("GET %s = %q, want %q in it", path, b, want)
		}
	}
	// The sampler runs on its own: within a second of wall time it has samples.
	deadline := time.Now().Add(time.Second)
	for {
		s, _ := srv.Sampler().Series(-1, 0)
		if len(s.Times) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no samples after a second")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A second server on the same address fails at Start, naming the key.
	other, _ := New(r.sw, Options{Listen: srv.Addr(), Clock: r.clk, Samples: 2})
	if err := other.Start(); err == nil || !strings.Contains(err.Error(), "telemetry.listen") {
		t.Errorf("Start on a used address: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(base + "/stats"); err == nil {
		t.Error("server still answers after Shutdown")
	}
}

func TestSamplerOptions(t *testing.T) {
	r := newRig(t, 16)
	mmu := r.sw.Buffer()
	for _, tc := range []struct {
		names  []string
		period time.Duration
		n      int
	}{
		{[]string{"a"}, time.Millisecond, 16},
		{[]string{"a", "b"}, time.Nanosecond, 16},
		{[]string{"a", "b"}, time.Millisecond, 1},
		{[]string{"a", "b"}, time.Millisecond, MaxSamples + 1},
	} {
		if _, err := NewSampler(mmu, tc.names, nil, r.clk, tc.period, tc.n); err == nil {
			t.Errorf("NewSampler(%v, %v, %d): no error", tc.names, tc.period, tc.n)
		}
	}
}

// Sample allocates nothing: it runs every 100 µs for as long as the switch runs.
func TestSampleAllocs(t *testing.T) {
	r := newRig(t, 1024)
	if n := testing.AllocsPerRun(100, r.srv.Sampler().Sample); n != 0 {
		t.Errorf("Sample allocates %v times", n)
	}
}

// BenchmarkSample measures one sampler tick over 2 ports × 2 queues and a pool.
func BenchmarkSample(b *testing.B) {
	r := newRig(b, 65536)
	s := r.srv.Sampler()
	b.ReportAllocs()
	for b.Loop() {
		s.Sample()
	}
}

// fill takes n samples dt apart.
func (r *rig) fill(n int, dt time.Duration) {
	for range n {
		r.clk.Advance(dt)
		r.srv.Sampler().Sample()
	}
}

// A port named again and again is one port: the request costs map
// lookups, not a copy of the ring per repetition (issue 12: 2000 names
// once made 2000 copies of 4096 × 2 queues, 131 MB, under the sampler's
// lock).
func TestQueuesRepeatedPortIsOnePort(t *testing.T) {
	r := newRig(t, 4096)
	r.fill(4096, 10*time.Microsecond)
	url := "/queues?port=" + strings.Repeat("b,", 2000) + "&port=b&port=a,b"

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, body := get(t, r.srv.Handler(), url)
	runtime.ReadMemStats(&after)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d %.200s", res.StatusCode, body)
	}
	var s Series
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Ports) != 2 || s.Ports[0].Name != "a" || s.Ports[1].Name != "b" || len(s.Times) != 4096 {
		t.Fatalf("got %d ports, %d samples; want a and b once each, 4096 samples", len(s.Ports), len(s.Times))
	}
	// One copy of the window (4096 × 6 int64: 200 KB) and the response
	// body; the allocation bound is loose, the old code's 131 MB is not.
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Errorf("GET with 2000 repeated names allocated %d MB", got>>20)
	}
	if res, _ := get(t, r.srv.Handler(), "/queues?port="+strings.Repeat("b,", 100)+"zz"); res.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown name after known ones: %d, want 404", res.StatusCode)
	}
}

// A response carries at most MaxWindowValues values; the rest comes with
// since = next, each sample exactly once, in order.
func TestQueuesPagesAtMaxValues(t *testing.T) {
	const n = 65536
	r := newRig(t, n)
	r.fill(n, time.Microsecond)
	row := 1 + 2*2 + 1 // time, 2 ports × 2 queues, 1 pool
	var times []int64
	since, pages := int64(-1), 0
	for more := true; more; pages++ {
		res, body := get(t, r.srv.Handler(), fmt.Sprintf("/queues?since=%d", since))
		var s Series
		if err := json.Unmarshal([]byte(body), &s); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("page %d: %d %v", pages, res.StatusCode, err)
		}
		if v := len(s.Times) * row; v > MaxWindowValues {
			t.Fatalf("page %d: %d values, more than %d", pages, v, MaxWindowValues)
		}
		if s.Truncated || len(s.Ports) != 2 || len(s.Ports[1].Queues[1]) != len(s.Times) || len(s.Pools[0].Bytes) != len(s.Times) {
			t.Fatalf("page %d: truncated %v, ports %d, columns of %d and %d for %d times", pages, s.Truncated, len(s.Ports), len(s.Ports[1].Queues[1]), len(s.Pools[0].Bytes), len(s.Times))
		}
		times = append(times, s.Times...)
		since, more = s.Next, s.More
		if pages > 10 {
			t.Fatal("no end to the pages")
		}
	}
	if want := (n + MaxWindowValues/row - 1) / (MaxWindowValues / row); pages != want {
		t.Errorf("%d pages, want %d", pages, want)
	}
	if len(times) != n {
		t.Fatalf("%d samples over all pages, want %d", len(times), n)
	}
	for i, tm := range times {
		if want := int64(i+1) * 1000; tm != want {
			t.Fatalf("t[%d] = %d, want %d", i, tm, want)
		}
	}
	// Series, for Go callers, is bounded the same way.
	if s, _ := r.srv.Sampler().Series(-1, 0); !s.More || len(s.Times) != MaxWindowValues/row {
		t.Errorf("Series: %d samples, more %v", len(s.Times), s.More)
	}
}

// blockingWriter is a ResponseWriter whose Write blocks until release is
// closed: a client that does not read.
type blockingWriter struct {
	h       http.Header
	writing chan struct{}
	release chan struct{}
	once    sync.Once
}

func (w *blockingWriter) Header() http.Header { return w.h }
func (w *blockingWriter) WriteHeader(int)     {}
func (w *blockingWriter) Write(b []byte) (int, error) {
	w.once.Do(func() { close(w.writing) })
	<-w.release
	return len(b), nil
}

// The response is written after the copy, not under the sampler's lock: a
// client that stops reading does not stop the sampler.
func TestQueuesSlowClientDoesNotBlockSampler(t *testing.T) {
	r := newRig(t, 4096)
	r.fill(4096, time.Microsecond)
	w := &blockingWriter{h: http.Header{}, writing: make(chan struct{}), release: make(chan struct{})}
	served := make(chan struct{})
	go func() {
		defer close(served)
		req := httptest.NewRequest(http.MethodGet, "/queues", nil)
		req.Host = "127.0.0.1"
		r.srv.Handler().ServeHTTP(w, req)
	}()
	<-w.writing
	sampled := make(chan struct{})
	go func() {
		r.fill(10, time.Microsecond)
		close(sampled)
	}()
	select {
	case <-sampled:
	case <-time.After(10 * time.Second):
		t.Error("Sample blocked while a /queues response was being written")
	}
	close(w.release)
	<-served
	<-sampled
}
