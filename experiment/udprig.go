package experiment

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/testbed"
	"github.com/ecnswitch/ecnswitch/transport/udp"
)

// wireFrame is a full frame on the wire, bytes (1514 and 24 of FCS,
// preamble, SFD and gap): the unit the UDP experiments show queues in.
const wireFrame = 1514 + 24

// udpRig is what dx and dx-steps run transport/udp's endpoints through:
// the switch of one scheme on a bed, a tap on the bottleneck port, and a
// receiver on h5.
type udpRig struct {
	sw  demo.Switch
	tap *sojournTap
	rcv *udp.Receiver
	dst netip.AddrPort // the receiver's
}

// withUDPRig starts the switch of scheme on b, taps its bottleneck port
// for window (keeping probe packets too, when probe is set), opens the
// receiver, runs f, and closes the receiver and stops the switch whatever
// f returns.
func (b *bed) withUDPRig(scheme string, window time.Duration, probe []byte, rcfg udp.ReceiverConfig, f func(g *udpRig) error) error {
	return b.withSwitch(scheme, func(sw demo.Switch) (err error) {
		g := &udpRig{sw: sw}
		tp, ok := sw.(tapper)
		if !ok {
			return errors.New("the switch takes no tap")
		}
		pps := float64(b.options().Rate) / (8 * wireFrame)
		g.tap = &sojournTap{probe: probe, recs: make([]tapRecord, int(pps*window.Seconds()*1.5)+1024)}
		if err := tp.AddTap(demo.Bottleneck, g.tap); err != nil {
			return err
		}
		rh := b.hosts()[demo.Bottleneck]
		rc, err := rh.ListenUDP(0)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, rc.Close()) }()
		rconn, err := udp.Prepare(rc, udp.NotECT)
		if err != nil {
			return err
		}
		if g.rcv, err = udp.NewReceiver(rconn, rcfg); err != nil {
			return err
		}
		g.dst = netip.AddrPortFrom(rh.IPv4, udpPort(rc))
		return f(g)
	})
}

// window opens the tap and the senders' sample gate on for d, and returns
// the bottleneck port's counters at its two ends and how long it was open.
func (g *udpRig) window(ctx context.Context, on *atomic.Bool, d time.Duration) (st0, st1 dataplane.PortStats, elapsed time.Duration, err error) {
	st0 = g.sw.Stats().Ports[demo.Bottleneck]
	start := time.Now()
	g.tap.on.Store(true)
	on.Store(true)
	err = sleep(ctx, d)
	g.tap.on.Store(false)
	on.Store(false)
	elapsed = time.Since(start)
	return st0, g.sw.Stats().Ports[demo.Bottleneck], elapsed, err
}

// stop stops the switch, before the rig's end: the tap is quiet once its
// workers stop, and its records can be read.
func (g *udpRig) stop() error { return g.sw.Stop() }

// dialSender dials dst from h (DSCP 0, ECT(0)) and returns a sender of
// cfg on the connection, which the caller closes when the sender is done.
func dialSender(ctx context.Context, h testbed.Host, dst netip.AddrPort, cfg udp.Config) (*udp.Sender, *net.UDPConn, error) {
	c, err := h.DialUDP(ctx, dst, demo.DSCP(0), packet.ECT0)
	if err != nil {
		return nil, nil, err
	}
	conn, err := udp.Prepare(c, udp.ECT0)
	if err != nil {
		return nil, nil, errors.Join(err, c.Close())
	}
	s, err := udp.NewSender(conn, nil, cfg)
	if err != nil {
		return nil, nil, errors.Join(err, c.Close())
	}
	return s, c, nil
}

// runEndpoints runs the receiver and the senders until stop, which ends
// the senders, lets their last ACKs arrive, ends the receiver and returns
// their errors.
func runEndpoints(ctx context.Context, rcv *udp.Receiver, senders []*udp.Sender) (stop func() error) {
	rctx, stopRcv := context.WithCancel(ctx)
	sctx, stopSnd := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make([]error, len(senders)+1)
	wg.Go(func() { errs[len(senders)] = rcv.Run(rctx) })
	for i, s := range senders {
		wg.Go(func() { errs[i] = s.Run(sctx) })
	}
	return func() error {
		stopSnd()
		time.Sleep(10 * time.Millisecond) // let the last ACKs arrive
		stopRcv()
		wg.Wait()
		return errors.Join(errs...)
	}
}

// flowSample is one of a sender's delay samples: the mean queueing delay
// of the n packets up to seq, which one ACK covered.
type flowSample struct {
	seq   uint64
	n     int
	queue int64
}

// received returns the receiver's in-order bytes over all flows.
func received(r *udp.Receiver) uint64 {
	var b uint64
	for _, f := range r.Flows() {
		b += f.Bytes
	}
	return b
}

// warm waits warmup, then until every one of the n flows has delivered
// data and data is still arriving: a flow whose first packets were lost
// (to neighbour discovery, or a switch still learning) waits out a
// retransmission timeout, 1 s at first, which outlasts a short warm-up on
// a loaded machine. It gives up after warmTimeout.
func warm(ctx context.Context, rcv *udp.Receiver, n int, warmup time.Duration) error {
	if err := sleep(ctx, warmup); err != nil {
		return err
	}
	deadline := time.Now().Add(warmTimeout)
	for {
		before := received(rcv)
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
		flowing := 0
		for _, f := range rcv.Flows() {
			if f.Packets > 0 {
				flowing++
			}
		}
		if flowing == n && received(rcv) > before {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("warm-up: %d of %d flows delivered data within %v", flowing, n, warmup+warmTimeout)
		}
	}
}

// warmTimeout bounds how long warm waits for every flow after the warm-up.
const warmTimeout = 5 * time.Second

// sojournTap keeps the switch's queueing delay of every data packet of
// transport/udp the bottleneck port sends while on is set, with the
// packet's flow and sequence number, and of every UDP packet whose payload
// starts with probe (as flow 0); it runs on the worker, so it neither
// allocates nor locks, and drops what does not fit.
type sojournTap struct {
	on     atomic.Bool
	n      atomic.Int64
	missed atomic.Uint64
	probe  []byte
	probes atomic.Int64 // probe packets seen
	recs   []tapRecord
}

type tapRecord struct {
	t, sojourn int64
	flow       uint32
	seq        uint64
}

// Record implements dataplane.Tap.
func (t *sojournTap) Record(ev *dataplane.Event) {
	if ev.Kind != dataplane.EventEgress || !t.on.Load() {
		return
	}
	flow, seq, ok := udpData(ev.Frame)
	if !ok {
		if t.probe == nil || !isProbe(ev.Frame, t.probe) {
			return
		}
		t.probes.Add(1)
	}
	i := t.n.Add(1) - 1
	if i >= int64(len(t.recs)) {
		t.missed.Add(1)
		return
	}
	t.recs[i] = tapRecord{t: ev.Time, sojourn: ev.Sojourn, flow: flow, seq: seq}
}

// records returns what the tap kept; call it once the worker stopped.
func (t *sojournTap) records() []tapRecord {
	return t.recs[:min(t.n.Load(), int64(len(t.recs)))]
}

// udpData returns the flow and sequence number of an untagged IPv4 frame
// carrying a transport/udp data datagram.
func udpData(f []byte) (flow uint32, seq uint64, ok bool) {
	if len(f) < 14+20 || binary.BigEndian.Uint16(f[12:]) != 0x0800 || f[14+9] != 17 {
		return 0, 0, false
	}
	ihl := int(f[14]&0xf) * 4
	p := 14 + ihl + 8
	if ihl < 20 || len(f) < p+udp.HeaderLen || f[p] != 1<<4|byte(udp.TypeData) {
		return 0, 0, false
	}
	return binary.BigEndian.Uint32(f[p+2:]), binary.BigEndian.Uint64(f[p+6:]), true
}

// isProbe reports whether an untagged IPv4 frame carries a UDP payload
// starting with probe.
func isProbe(f, probe []byte) bool {
	if len(f) < 14+20 || binary.BigEndian.Uint16(f[12:]) != 0x0800 || f[14+9] != 17 {
		return false
	}
	p := 14 + int(f[14]&0xf)*4 + 8
	return len(f) >= p+len(probe) && bytes.Equal(f[p:p+len(probe)], probe)
}

// udpPort returns the local port of c.
func udpPort(c *net.UDPConn) uint16 { return c.LocalAddr().(*net.UDPAddr).AddrPort().Port() }
