package telemetry

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// A DualQ port's coupled AQM is in /stats (dualq) and in /metrics
// (ecnswitch_dualq_*, and its members' votes as markers): bursts of L4S
// and Classic packets into a 1 Gbit/s DualQ port whose PI2 updates every
// millisecond from a 100 µs target build p′ and step marks.
func TestDualQStatsAndMetrics(t *testing.T) {
	r := &rig{t: t, clk: timestamp.NewVirtual(0)}
	cfg := dataplane.Config{
		Pools: []buffer.PoolConfig{{Size: 1_000_000}},
		Ports: []dataplane.PortConfig{
			{Name: "a", Scheduler: scheduler.Config{Kind: scheduler.DWRR, NumQueues: 1}, Queues: []buffer.QueueConfig{{Alpha: 1}}, Worker: -1},
			{Name: "b", Scheduler: scheduler.Config{Kind: scheduler.DualQ, LineRate: rate}, Shaper: scheduler.ShaperConfig{Rate: rate, Bucket: 2500},
				Queues: []buffer.QueueConfig{{Alpha: 1}, {Alpha: 1}}, Worker: -1,
				DualQ: dataplane.DualQ{AQM: marking.DualPI2Config{Target: 100_000, TUpdate: 1_000_000, StepThresh: 50_000}}},
		},
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
	if r.srv, err = New(sw, Options{Clock: r.clk, Samples: 64, SamplePeriod: 10 * time.Microsecond}); err != nil {
		t.Fatal(err)
	}
	var ds []*packet.Desc
	for i := range burst {
		e := packet.ECT1
		if i%2 == 1 {
			e = packet.ECT0
		}
		f := packettest.UDP4(t, packettest.Options{ECN: e, Size: frameLen})
		ds = append(ds, &packet.Desc{Buf: f, Len: len(f)})
	}
	for range 4 { // a burst every 2 ms: every update finds a queue
		if n, _ := r.hosts[0].Transmit(ds); n != burst {
			t.Fatalf("sent %d", n)
		}
		r.run(2*time.Millisecond, 10*time.Microsecond)
	}

	_, body := get(t, r.srv.Handler(), "/stats")
	var st StatsResponse
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	q := st.Ports[1].DualQ
	if q == nil || st.Ports[0].DualQ != nil || q.Updates == 0 || q.Prob == 0 || q.StepMarks == 0 || !strings.Contains(body, `"dualq": {`) {
		t.Fatalf("/stats: port b's dualq %+v, port a's %+v; want updates, p′ and step marks on b alone", q, st.Ports[0].DualQ)
	}
	_, body = get(t, r.srv.Handler(), "/metrics")
	for _, want := range []string{
		fmt.Sprintf(`ecnswitch_dualq_updates_total{port="b"} %d`, q.Updates),
		fmt.Sprintf(`ecnswitch_dualq_probability{port="b",which="base"} %g`, q.Prob),
		fmt.Sprintf(`ecnswitch_dualq_probability{port="b",which="classic"} %g`, q.ProbC),
		fmt.Sprintf(`ecnswitch_dualq_probability{port="b",which="l4s"} %g`, q.ProbL),
		fmt.Sprintf(`ecnswitch_dualq_classic_delay_seconds{port="b"} %g`, float64(q.DelayC)/1e9),
		`ecnswitch_dualq_overloaded{port="b"} 0`,
		`ecnswitch_dualq_overloads_total{port="b"} 0`,
		fmt.Sprintf(`ecnswitch_marker_marks_total{marker="%s",port="b"} %d`, marking.DualPI2Step, q.StepMarks),
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, `ecnswitch_dualq_updates_total{port="a"}`) {
		t.Error("/metrics has DualQ series for port a, which is no DualQ")
	}
}
