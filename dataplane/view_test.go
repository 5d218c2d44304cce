package dataplane

import (
	"reflect"
	"testing"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// fillView sets every field of the worker's view, whatever the previous
// packet left in it: a field it forgot would carry the last packet's
// value to a marker.
func TestFillViewSetsEveryField(t *testing.T) {
	r := &idlePort{}
	cfg := Config{
		Pools: []buffer.PoolConfig{{Size: 1 << 20}},
		Ports: []PortConfig{{
			Scheduler: scheduler.Config{Kind: scheduler.DWRR, NumQueues: 2},
			Queues:    []buffer.QueueConfig{{Alpha: 1}, {Alpha: 1}},
		}},
	}
	sw, err := New(cfg, []ports.Port{r}, timestamp.NewVirtual(0), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	w := sw.workers[0]
	p := w.ports[0]
	d := &packet.Desc{Len: 100, EnqTime: 7}

	all := &chainStage{needs: marking.NeedAll | marking.NeedPeer | marking.NeedHead, peers: []int{1, 0}}
	w.view = marking.View{}
	want := *w.fillView(p, d, 10, 1, all)
	if want.PeerQueue != 0 {
		t.Fatalf("PeerQueue %d, want 0: queue 1's peer", want.PeerQueue)
	}

	spoil := func() {
		junk := reflect.ValueOf(&w.view).Elem()
		for i := range junk.NumField() {
			f := junk.Field(i)
			switch f.Kind() {
			case reflect.Bool:
				f.SetBool(!f.Bool())
			case reflect.Int, reflect.Int64:
				f.SetInt(f.Int() + 12345)
			case reflect.Uint8:
				f.SetUint(f.Uint() ^ 3)
			default:
				t.Fatalf("View.%s is a %v: teach this test to spoil it", junk.Type().Field(i).Name, f.Kind())
			}
		}
	}
	spoil()
	if got := *w.fillView(p, d, 10, 1, all); got != want {
		t.Fatalf("after a spoiled view fillView gives\n%+v\nwant\n%+v", got, want)
	}
	// A chain that needs none of the costly fields finds them 0, not
	// the last packet's, and the rest as before.
	spoil()
	want.RoundTime, want.BusyWeightSum, want.PortBytes, want.PortPackets, want.QueueEmptySince, want.PortEmptySince = 0, 0, 0, 0, 0, 0
	want.PeerQueue, want.HeadSojourn = -1, 0
	if got := *w.fillView(p, d, 10, 1, &chainStage{}); got != want {
		t.Fatalf("needing nothing costly, after a spoiled view fillView gives\n%+v\nwant\n%+v", got, want)
	}
	// The head of a busy queue: queued at 3, it has waited 7 at 10.
	if !p.sched.Enqueue(&packet.Desc{Queue: 1, Len: 100, ECN: packet.ECT1}, 3) {
		t.Fatal("enqueue")
	}
	d.ECN = packet.CE
	if got := w.fillView(p, d, 10, 1, &chainStage{needs: marking.NeedHead}); got.HeadSojourn != 7 || got.ECN != packet.CE {
		t.Fatalf("HeadSojourn %d, ECN %v; want 7 and the packet's CE", got.HeadSojourn, got.ECN)
	}
}

// idlePort is an idle port with nothing to poll.
type idlePort struct{}

func (idlePort) Name() string                            { return "idle" }
func (idlePort) Receive([]*packet.Desc) (int, error)     { return 0, nil }
func (idlePort) Transmit(ds []*packet.Desc) (int, error) { return len(ds), nil }
func (idlePort) Close() error                            { return nil }
