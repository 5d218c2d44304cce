// Package dataplanetest holds test doubles for the switch, as wireguard-go's
// tuntest does for TUN devices: a Rig that runs a dataplane.Switch on memory
// ports in virtual time, a generator port that receives a template frame
// forever and a sink port that takes everything, for benchmarks.
package dataplanetest

import (
	"net"
	"testing"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// Rig is a switch on memory ports in virtual time: Hosts[i] is the far end
// of switch port i, Ports[i] the switch's own end.
type Rig struct {
	TB     testing.TB
	Clock  *timestamp.Virtual
	Switch *dataplane.Switch
	Hosts  []*memport.Port
	Ports  []*memport.Port

	rx []*packet.Desc // receive scratch
}

// New builds a switch from cfg with one memory link per port, starting the
// clock at 0, and closes it in tb's cleanup.
func New(tb testing.TB, cfg dataplane.Config, link memport.Link) *Rig {
	tb.Helper()
	r := &Rig{TB: tb, Clock: timestamp.NewVirtual(0)}
	devs := make([]ports.Port, len(cfg.Ports))
	for i := range cfg.Ports {
		sw, host, err := memport.Pair(cfg.Ports[i].Name, "host", r.Clock, link)
		if err != nil {
			tb.Fatal(err)
		}
		devs[i] = sw
		r.Ports, r.Hosts = append(r.Ports, sw), append(r.Hosts, host)
	}
	sw, err := dataplane.New(cfg, devs, r.Clock, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sw.Close() })
	r.Switch = sw
	for i := 0; i < 256; i++ {
		r.rx = append(r.rx, &packet.Desc{Buf: make([]byte, 2048)})
	}
	return r
}

// Send puts frames on host h's link toward the switch and returns how many
// the link took.
func (r *Rig) Send(h int, frames ...[]byte) int {
	r.TB.Helper()
	ds := make([]*packet.Desc, len(frames))
	for i, f := range frames {
		ds[i] = &packet.Desc{Buf: f, Len: len(f)}
	}
	n, err := r.Hosts[h].Transmit(ds)
	if err != nil {
		r.TB.Fatal(err)
	}
	return n
}

// Recv drains what has arrived at host h by now and returns copies.
func (r *Rig) Recv(h int) [][]byte {
	var out [][]byte
	for {
		n, _ := r.Hosts[h].Receive(r.rx)
		for _, d := range r.rx[:n] {
			out = append(out, append([]byte(nil), d.Frame()...))
		}
		if n < len(r.rx) {
			return out
		}
	}
}

// Backlog returns the frames on host h's wire toward the switch.
func (r *Rig) Backlog(h int) int { return r.Ports[h].InFlight() }

// Step advances the clock by ns in increments of dt, polling after each.
func (r *Rig) Step(ns, dt int64) {
	for end := r.Clock.Now() + ns; r.Clock.Now() < end; {
		r.Clock.Set(min(end, r.Clock.Now()+dt))
		r.Switch.Poll()
	}
}

// Drain polls in steps of dt until the switch holds nothing and every wire
// is empty, discarding what the hosts receive (their counters keep the
// tally); it fails the test after a simulated second.
func (r *Rig) Drain(dt int64) {
	r.TB.Helper()
	for deadline := r.Clock.Now() + 1_000_000_000; r.Clock.Now() < deadline; {
		r.Step(dt, dt)
		busy := r.Switch.Account().Held > 0
		for i, h := range r.Hosts {
			r.Recv(i)
			busy = busy || h.InFlight() > 0 || r.Backlog(i) > 0
		}
		if !busy {
			return
		}
	}
	r.TB.Fatalf("switch still holds %d packets after a second of draining", r.Switch.Account().Held)
}

// PortConfig returns a port with n DWRR queues of equal quantum, a Dynamic
// Threshold of α = 1 on each, and a 2500-byte shaper at rate (0: none).
func PortConfig(name string, n int, rate int64) dataplane.PortConfig {
	qs := make([]buffer.QueueConfig, n)
	for i := range qs {
		qs[i] = buffer.QueueConfig{Alpha: 1}
	}
	return dataplane.PortConfig{
		Name:      name,
		Scheduler: scheduler.Config{Kind: scheduler.DWRR, NumQueues: n, LineRate: rate},
		Shaper:    scheduler.ShaperConfig{Rate: rate, Bucket: 2500},
		Queues:    qs,
		Worker:    -1,
	}
}

// Config returns a switch of nports ports named a, b, c, … made by
// PortConfig, over one pool of poolBytes.
func Config(nports, queues int, rate, poolBytes int64) dataplane.Config {
	c := dataplane.Config{Pools: []buffer.PoolConfig{{Size: poolBytes}}}
	for i := 0; i < nports; i++ {
		c.Ports = append(c.Ports, PortConfig(string(rune('a'+i)), queues, rate))
	}
	return c
}

// MAC returns the MAC address of the host on port i: 02:00:00:00:00:1i.
func MAC(i int) packet.MAC { return packet.MAC{0x02, 0, 0, 0, 0, 0x10 + byte(i)} }

// HardwareAddr returns MAC(i) as a net.HardwareAddr, the form of static MAC rules.
func HardwareAddr(i int) net.HardwareAddr {
	m := MAC(i)
	return m[:]
}

// Frame returns a UDP/IPv4 frame from the host on port from to the host on
// port to, shaped by o.
func Frame(tb testing.TB, from, to int, o packettest.Options) []byte {
	tb.Helper()
	o.SrcMAC, o.DstMAC = MAC(from), MAC(to)
	return packettest.UDP4(tb, o)
}

// Gen is a port that receives copies of Frame forever, like a NIC under
// line-rate load writing frames into the switch's arena; with Frames set,
// copies of those in turn instead. N counts them.
type Gen struct {
	Frame  []byte
	Frames [][]byte
	N      int
}

var _ ports.Port = (*Gen)(nil)

// Name returns "gen".
func (g *Gen) Name() string { return "gen" }

// Receive fills every descriptor with a copy of Frame, or of the next of
// Frames.
func (g *Gen) Receive(ds []*packet.Desc) (int, error) {
	for i, d := range ds {
		f := g.Frame
		if len(g.Frames) > 0 {
			f = g.Frames[(g.N+i)%len(g.Frames)]
		}
		d.Len = copy(d.Buf, f)
		d.RxTime = 0
	}
	g.N += len(ds)
	return len(ds), nil
}

// Transmit discards ds.
func (g *Gen) Transmit(ds []*packet.Desc) (int, error) { return len(ds), nil }

// Close does nothing.
func (g *Gen) Close() error { return nil }

// Sink is a port that takes every frame and counts it, like a TX ring the
// hardware drains faster than the switch fills it.
type Sink struct{ N, Bytes int }

var _ ports.Port = (*Sink)(nil)

// Name returns "sink".
func (s *Sink) Name() string { return "sink" }

// Receive receives nothing.
func (s *Sink) Receive([]*packet.Desc) (int, error) { return 0, nil }

// Transmit counts ds.
func (s *Sink) Transmit(ds []*packet.Desc) (int, error) {
	for _, d := range ds {
		s.Bytes += d.Len
	}
	s.N += len(ds)
	return len(ds), nil
}

// Close does nothing.
func (s *Sink) Close() error { return nil }
