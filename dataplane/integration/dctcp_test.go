package integration

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/testbed"
	"github.com/ecnswitch/ecnswitch/testbed/dctcp"
)

// TestDCTCPHoldsQueueNearK: one DCTCP flow (the kernel's, or
// testbed/dctcp's BPF one) from h1 to h2 through a port shaped to
// 100 Mbit/s that marks every packet finding ≥ K = 30 KB queued (the
// cut-off marking DCTCP prescribes: Alizadeh et al., SIGCOMM 2010, §3.1;
// 001 §2.2). DCTCP's answer to marks is in proportion to them, so the
// queue stays near K: for one flow it oscillates between about
// K − ½√(2(C·RTT + K)) and K + 1 packets (DCTCP §3.3), here K − 3 and
// K + 1. Over a second after slow start the median
// packet finds a queue within [K/2, K + 1 packet], and 99% find at most
// K + 8 packets: the ACK clock's bursts (a delayed ACK acknowledges two
// segments; AF_XDP delivers batches, larger when the machine is loaded)
// add a few packets to the fluid model's overshoot. Measured, alone and
// beside another package's tests: medians of K − 6.6 to K − 4.7 packets
// (the histogram's buckets are about 2 packets wide here), 99th
// percentiles of K + 1.8 packets at most, maxima of K + 2.7 to 5.4. Every TCP
// packet, SYN included, enters the switch ECT(0), so none meets the
// marker's Not-ECT drop, and none is dropped. The fraction of packets
// the kernel counted as marked (tcp_info's delivered_ce/delivered) is the
// fraction the switch marked ± 0.05 (measured: within 0.012), and α, read
// from the BPF program, tracks the marked fraction F of each window: their
// means over the second agree within 0.03 (measured: within 0.007).
// The worker runs in the real-time class, so that a loaded machine does
// not hold packets in its RX ring, where the marker cannot see them.
func TestDCTCPHoldsQueueNearK(t *testing.T) {
	const (
		rate   = 100_000_000
		k      = 30_000
		frame  = 1514 // a full-sized frame
		warmup = 300 * time.Millisecond
		span   = time.Second
	)
	r := newRig(t, 2, func(hs []testbed.Host) dataplane.Config {
		cfg := baseConfig(hs, 1)
		// The virtual line measures the queue from when the worker
		// received each packet: a worker that a loaded machine leaves
		// waiting for its CPU holds packets in the RX ring, where no
		// marker sees them, and the queue measured falls below K. In the
		// real-time class it runs when packets arrive (Config.Priority).
		cfg.Priority = 10
		p := &cfg.Ports[1]
		p.Queues[0] = buffer.QueueConfig{Cap: 1 << 20}
		p.Shaper = scheduler.ShaperConfig{Rate: rate, Bucket: 2500, Overhead: scheduler.OverheadEthernet}
		p.Scheduler.Overhead = scheduler.OverheadEthernet
		p.Scheduler.LineRate = rate
		p.Enqueue = []dataplane.MarkerSpec{{Name: "dctcp", New: func(nq int) (marking.Marker, error) {
			return marking.NewRED(marking.CutOff(marking.MeasureQueue, marking.Bytes(k)), marking.Enqueue, nq)
		}}}
		return cfg
	}, func(o *testbed.Options) { o.CongestionControl = dctcp.Name })
	h1, h2 := r.hosts[0], r.hosts[1]
	bpf := r.tb.HoldsDCTCP()
	var tally tcpTally
	for port := range 2 {
		if err := r.sw.AddTap(port, &tally); err != nil {
			t.Fatal(err)
		}
	}

	ln, err := h2.ListenTCP(0)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 1<<16)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := h1.DialTCP(ctx, netip.AddrPortFrom(h2.IPv4, uint16(ln.Addr().(*net.TCPAddr).Port)), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if cc := connCC(t, c); cc != dctcp.Name {
		t.Fatalf("the flow runs %s, want dctcp", cc)
	}
	stop := make(chan struct{})
	wrote := make(chan error, 1)
	go func() {
		buf := make([]byte, 64<<10)
		for {
			select {
			case <-stop:
				wrote <- nil
				return
			default:
			}
			if _, err := c.Write(buf); err != nil {
				wrote <- err
				return
			}
		}
	}()

	time.Sleep(warmup)
	type snap struct {
		q     dataplane.QueueStats
		info  *unix.TCPInfo
		alpha dctcp.Stats
	}
	take := func() snap {
		s := snap{q: r.port(h2).Queues[0], info: connInfo(t, c)}
		if bpf {
			var err error
			if s.alpha, err = dctcp.ReadStats(c.(syscall.Conn), dctcp.Options{}); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	r.sw.ResetSojourn()
	s0 := take()
	time.Sleep(span)
	s1 := take()
	close(stop)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if s1.info.Options&tcpiOptECN == 0 {
		t.Fatal("the connection did not negotiate ECN")
	}

	// The queue, as the packets found it: sojourn on the virtual line is
	// the bytes ahead at rate C.
	q := s1.q
	bytesAt := func(ns int64) int64 { return ns * rate / 8 / 1e9 }
	p50, p99, peak := bytesAt(q.Sojourn.P50), bytesAt(q.Sojourn.P99), bytesAt(q.Sojourn.Max)
	enq := q.Enqueued - s0.q.Enqueued
	marked := q.MarkedEnq - s0.q.MarkedEnq
	fSwitch := float64(marked) / float64(enq)
	t.Logf("queue over %v: p50 %d B, p99 %d B, max %d B (K = %d B); %d packets, %.3f marked; drops %v",
		span, p50, p99, peak, k, enq, fSwitch, q.Drops)
	if enq < 1000 {
		t.Fatalf("only %d packets in %v: too few to judge the queue", enq, span)
	}
	if p50 < k/2 || p50 > k+frame {
		t.Errorf("median queue %d B: want within [K/2, K + 1 packet] = [%d, %d] B", p50, k/2, k+frame)
	}
	if p99 > k+8*frame {
		t.Errorf("99th percentile of the queue %d B: want at most K + 8 packets = %d B", p99, k+8*frame)
	}
	// The hosts' own Not-ECT packets (MLD reports, flooded to h2's port)
	// may meet the marker above K and be dropped: the port's policy is
	// RED's (NonECTDrop). None of them is TCP.
	for _, port := range []int{0, 1} {
		if err := r.sw.RemoveTap(port, &tally); err != nil {
			t.Fatal(err)
		}
	}
	notECT, tcpDrops := tally.in[packet.NotECT].Load(), tally.tcpDrops.Load()
	t.Logf("TCP packets into the switch by ECN: Not-ECT %d, ECT(1) %d, ECT(0) %d, CE %d; drops: TCP %d, other %d (port counters %v)",
		notECT, tally.in[packet.ECT1].Load(), tally.in[packet.ECT0].Load(), tally.in[packet.CE].Load(), tcpDrops, tally.otherDrops.Load(), q.Drops)
	if notECT != 0 || tcpDrops != 0 {
		t.Errorf("%d TCP packets entered Not-ECT and %d were dropped: with dctcp every TCP packet is ECT(0), SYN included, and the queue stays far below its %d B", notECT, tcpDrops, 1<<20)
	}

	dDelivered := s1.info.Delivered - s0.info.Delivered
	fTCP := float64(s1.info.Delivered_ce-s0.info.Delivered_ce) / float64(dDelivered)
	t.Logf("marked fraction: switch %.3f, tcp_info %.3f", fSwitch, fTCP)
	if d := fTCP - fSwitch; d > 0.05 || d < -0.05 {
		t.Errorf("the sender counted %.3f of its packets as marked, the switch marked %.3f", fTCP, fSwitch)
	}
	if !bpf {
		t.Log("the kernel's own dctcp: α is not published (inet_diag's DCTCPINFO has it)")
		return
	}
	w := s1.alpha.Windows - s0.alpha.Windows
	meanAlpha := (s1.alpha.MeanAlpha*float64(s1.alpha.Windows) - s0.alpha.MeanAlpha*float64(s0.alpha.Windows)) / float64(w)
	meanF := (s1.alpha.MeanFraction*float64(s1.alpha.Windows) - s0.alpha.MeanFraction*float64(s0.alpha.Windows)) / float64(w)
	t.Logf("α over %d windows: mean %.3f, last %.3f; mean F per window %.3f; the kernel's invalid ssthresh repaired %d times",
		w, meanAlpha, s1.alpha.Alpha, meanF, s1.alpha.Repairs-s0.alpha.Repairs)
	if w < 50 {
		t.Fatalf("only %d α updates in %v: too few to judge α", w, span)
	}
	// α is the windows' marked fraction F smoothed by g: over hundreds of
	// windows their means agree. (The windows' mean F is the switch's
	// fraction only while windows are alike: on a loaded machine the small
	// windows after a stall, more often marked, weigh as much as full
	// ones, and their mean was 0.16 against a fraction of 0.05.)
	if d := meanAlpha - meanF; d > 0.03 || d < -0.03 {
		t.Errorf("mean α %.3f; want the windows' mean marked fraction %.3f ± 0.03", meanAlpha, meanF)
	}
	if meanF <= 0 {
		t.Errorf("no window saw a mark, yet the switch marked %.3f", fSwitch)
	}
}

// tcpTally counts, from the switch's taps, the TCP packets entering it by
// ECN codepoint and the packets it dropped, TCP or not. Record runs on the
// worker: atomics only.
type tcpTally struct {
	in                   [4]atomic.Uint64
	tcpDrops, otherDrops atomic.Uint64
}

func (c *tcpTally) Record(ev *dataplane.Event) {
	d := ev.Desc
	tcp := (d.L3 == packet.L3IPv4 || d.L3 == packet.L3IPv6) && d.Proto == unix.IPPROTO_TCP
	switch {
	case ev.Kind == dataplane.EventIngress && tcp:
		c.in[d.ECN&3].Add(1)
	case ev.Kind == dataplane.EventDrop && tcp:
		c.tcpDrops.Add(1)
	case ev.Kind == dataplane.EventDrop:
		c.otherDrops.Add(1)
	}
}

// tcpiOptECN is tcp_info's "ECN was negotiated" option bit
// (TCPI_OPT_ECN, uapi linux/tcp.h).
const tcpiOptECN = 8

// connCC returns c's congestion control.
func connCC(t *testing.T, c net.Conn) string {
	t.Helper()
	var cc string
	err := rawControl(c, func(fd int) (err error) {
		cc, err = unix.GetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// connInfo returns c's tcp_info.
func connInfo(t *testing.T, c net.Conn) *unix.TCPInfo {
	t.Helper()
	var info *unix.TCPInfo
	err := rawControl(c, func(fd int) (err error) {
		info, err = unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func rawControl(c net.Conn, fn func(fd int) error) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return errors.New("no file descriptor")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
