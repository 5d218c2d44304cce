package dataplane

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// pipePort is an idle port whose readiness is the read end of a pipe.
type pipePort struct{ r, w *os.File }

func (p *pipePort) Name() string                            { return "pipe" }
func (p *pipePort) Receive([]*packet.Desc) (int, error)     { return 0, nil }
func (p *pipePort) Transmit(ds []*packet.Desc) (int, error) { return len(ds), nil }
func (p *pipePort) Close() error                            { p.w.Close(); return p.r.Close() }
func (p *pipePort) PollFDs() []int                          { return []int{int(p.r.Fd())} }

var _ ports.FDPoller = (*pipePort)(nil)

// TestWaitPollsEveryPort checks that a worker owning several pollable ports
// sleeps on all their descriptors in one ppoll, so that readiness of the
// last port ends the wait at once, whatever the order.
func TestWaitPollsEveryPort(t *testing.T) {
	var devs []ports.Port
	cfg := Config{Pools: []buffer.PoolConfig{{Size: 1 << 20}}}
	for i := 0; i < 3; i++ {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		devs = append(devs, &pipePort{r, w})
		cfg.Ports = append(cfg.Ports, PortConfig{
			Scheduler: scheduler.Config{Kind: scheduler.DWRR, NumQueues: 1},
			Queues:    []buffer.QueueConfig{{Alpha: 1}},
		})
	}
	sw, err := New(cfg, devs, timestamp.NewVirtual(0), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	w := sw.workers[0]
	if len(w.pollfds) != 3 {
		t.Fatalf("worker polls %d descriptors, want one per port (3)", len(w.pollfds))
	}
	devs[2].(*pipePort).w.Write([]byte{1})
	w.wait(idleWait)
	if w.pollfds[2].Revents&unix.POLLIN == 0 || w.pollfds[0].Revents != 0 {
		t.Fatalf("revents %v: the wait did not see the third port become readable", w.pollfds)
	}
}
