package dataplane

import (
	"testing"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// rig is a switch on memory ports in virtual time: hosts[i] is the far end
// of switch port i.
type rig struct {
	tb    testing.TB
	clk   *timestamp.Virtual
	sw    *Switch
	hosts []*memport.Port
	rx    []*packet.Desc // receive scratch
}

func newRig(tb testing.TB, cfg Config, link memport.Link) *rig {
	tb.Helper()
	r := &rig{tb: tb, clk: timestamp.NewVirtual(0)}
	devs := make([]ports.Port, len(cfg.Ports))
	for i := range cfg.Ports {
		sw, host, err := memport.Pair(cfg.Ports[i].Name, "host", r.clk, link)
		if err != nil {
			tb.Fatal(err)
		}
		devs[i], r.hosts = sw, append(r.hosts, host)
	}
	sw, err := New(cfg, devs, r.clk, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sw.Close() })
	r.sw = sw
	for i := 0; i < 256; i++ {
		r.rx = append(r.rx, &packet.Desc{Buf: make([]byte, 2048)})
	}
	return r
}

// send puts frames on host h's link toward the switch; it returns how many
// the link took.
func (r *rig) send(h int, frames ...[]byte) int {
	ds := make([]*packet.Desc, len(frames))
	for i, f := range frames {
		ds[i] = &packet.Desc{Buf: f, Len: len(f)}
	}
	n, err := r.hosts[h].Transmit(ds)
	if err != nil {
		r.tb.Fatal(err)
	}
	return n
}

// recv drains what has arrived at host h and returns copies of the frames.
func (r *rig) recv(h int) [][]byte {
	var out [][]byte
	for {
		n, _ := r.hosts[h].Receive(r.rx)
		for _, d := range r.rx[:n] {
			out = append(out, append([]byte(nil), d.Frame()...))
		}
		if n < len(r.rx) {
			return out
		}
	}
}

// step advances the clock by ns in increments of dt, polling after each.
func (r *rig) step(ns, dt int64) {
	for end := r.clk.Now() + ns; r.clk.Now() < end; {
		r.clk.Set(min(end, r.clk.Now()+dt))
		r.sw.Poll()
	}
}

// portConfig returns a port with n DWRR queues of equal quantum, a
// Dynamic Threshold of α = 1 on each, and a shaper at rate (0: none).
func portConfig(name string, n int, rate int64) PortConfig {
	qs := make([]buffer.QueueConfig, n)
	for i := range qs {
		qs[i] = buffer.QueueConfig{Alpha: 1}
	}
	return PortConfig{
		Name:      name,
		Scheduler: scheduler.Config{Kind: scheduler.DWRR, NumQueues: n, LineRate: rate},
		Shaper:    scheduler.ShaperConfig{Rate: rate, Bucket: 2500},
		Queues:    qs,
		Worker:    -1,
	}
}

func basicConfig(nports, queues int, rate int64, pool int64) Config {
	c := Config{Pools: []buffer.PoolConfig{{Size: pool}}}
	for i := 0; i < nports; i++ {
		c.Ports = append(c.Ports, portConfig(string(rune('a'+i)), queues, rate))
	}
	return c
}

// drain polls in steps of dt until the switch holds nothing and every wire
// is empty; what arrives meanwhile is discarded, failing after a simulated second.
func (r *rig) drain(dt int64) {
	r.tb.Helper()
	for deadline := r.clk.Now() + 1_000_000_000; r.clk.Now() < deadline; {
		r.step(dt, dt)
		busy := r.sw.Account().Held > 0
		for i, h := range r.hosts {
			r.recv(i) // discarded; the host's counters keep the tally
			busy = busy || h.InFlight() > 0 || r.hostBacklog(i) > 0
		}
		if !busy {
			return
		}
	}
	r.tb.Fatalf("switch still holds %d packets after a second of draining", r.sw.Account().Held)
}
