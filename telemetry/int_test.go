package telemetry

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/intmd"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// A port's INT is in /stats (int) and in /metrics: records added, packets
// without room for one, and the bytes its line sent, as its records carry
// them.
func TestINTStatsAndMetrics(t *testing.T) {
	r := &rig{t: t, clk: timestamp.NewVirtual(0)}
	cfg := dataplane.Config{
		Pools: []buffer.PoolConfig{{Size: 1_000_000}},
		Ports: []dataplane.PortConfig{
			{Name: "a", Scheduler: scheduler.Config{Kind: scheduler.DWRR, NumQueues: 1}, Queues: []buffer.QueueConfig{{Alpha: 1}}, Worker: -1},
			{Name: "b", Scheduler: scheduler.Config{Kind: scheduler.DWRR, NumQueues: 1, LineRate: rate}, Shaper: scheduler.ShaperConfig{Rate: rate, Bucket: 2500, Overhead: scheduler.OverheadEthernet},
				Queues: []buffer.QueueConfig{{Alpha: 1}}, Worker: -1, INT: &dataplane.INT{Port: 4790}},
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
	h, _ := intmd.NewHeader(intmd.HPCCInstructions, intmd.HPCCDSInstructions, 1)
	pl := make([]byte, intmd.HeaderLen)
	h.Put(pl)
	var ds []*packet.Desc
	for _, size := range []int{1000, 1000, frameLen} { // the last has no room below the MTU
		f := packettest.UDP4(t, packettest.Options{DstPort: 4790, Payload: pl, Size: size})
		ds = append(ds, &packet.Desc{Buf: f, Len: len(f)})
	}
	if n, _ := r.hosts[0].Transmit(ds); n != len(ds) {
		t.Fatalf("sent %d", n)
	}
	r.run(time.Millisecond, 10*time.Microsecond)

	_, body := get(t, r.srv.Handler(), "/stats")
	var st StatsResponse
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	in, tx := st.Ports[1].INT, uint64(2*(1000+24+24)+frameLen+24)
	if want := (dataplane.INTStats{Added: 2, NoRoom: 1, TxBytes: tx, Limit: frameLen}); in == nil || *in != want || st.Ports[0].INT != nil {
		t.Fatalf("/stats: port b's int %+v, port a's %+v; want %+v on b alone", in, st.Ports[0].INT, want)
	}
	_, body = get(t, r.srv.Handler(), "/metrics")
	for _, want := range []string{
		`ecnswitch_int_packets_total{outcome="added",port="b"} 2`,
		`ecnswitch_int_packets_total{outcome="no_room",port="b"} 1`,
		`ecnswitch_int_packets_total{outcome="hop_limit",port="b"} 0`,
		`ecnswitch_int_packets_total{outcome="malformed",port="b"} 0`,
		fmt.Sprintf(`ecnswitch_int_tx_bytes_total{port="b"} %d`, tx),
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, `ecnswitch_int_tx_bytes_total{port="a"}`) {
		t.Error("/metrics has INT series for port a, which has no INT")
	}
}
