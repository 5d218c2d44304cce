package integration

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/internal/race"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/testbed"
	"github.com/ecnswitch/ecnswitch/testbed/bulk"
)

// TestTCPGoodputAtShapedRate: one kernel TCP flow through a port shaped to
// R = 200 Mbit/s, with the shaper charging each frame its Ethernet wire
// size (max(len+4, 64) + 20: FCS, preamble and SFD, inter-frame gap; the
// MQ-ECN prototype's accounting, 001 §4.2), runs at R minus exactly the
// header overhead. A full segment carries MSS bytes of data in a frame of
//
//	MSS + TCP options (12: timestamps) + 20 TCP + 20 IPv4 + 14 Ethernet
//
// bytes, which costs that + 4 FCS + 8 preamble/SFD + 12 IFG on the wire, so
//
//	goodput = R · MSS / (MSS + 12 + 20 + 20 + 14 + 4 + 8 + 12)
//	        = 200 Mbit/s · 1448 / 1538 = 188.30 Mbit/s at MTU 1500,
//
// with MSS and the options read from the sender's socket (TCP_INFO). The
// queue has a DCTCP-style cut-off marker at K = 256 KB so that ECN, not
// loss, keeps the queue in check, and the queue is deep enough (10 ms at R)
// that the port never idles when the sending host is briefly off the CPU:
// the flow is shaper-bound. Two things are checked over 2 s windows after a
// 1 s warm-up, by the receiver's byte count and the port's TX counters:
//
//   - the port never exceeds R on the wire over the whole span measured,
//     at least three windows (plus the bucket, one frame and the counters'
//     lag, the shaper's bound: 200.69 Mbit/s over 6 s), so overhead
//     accounting is on: without it 1514-byte frames would leave at
//     200·1538/1514 = 203.2 Mbit/s;
//   - goodput / wire rate = MSS / (MSS + 90) within 0.5%, in the first
//     window that meets it, of at most six: the header overhead is exactly
//     the formula's. The receiver counts bytes a little after the port
//     sends them, so a window in which a loaded machine starves the flow
//     may drift.
//
// That the flow reaches R·MSS/(MSS+90) itself is a speed, which depends
// on the machine keeping up (beside four busy loops it ran at 75–95% of
// it, with the ratio exact in every window): the test logs it, and `make
// bench-tcp` measures it.
//
// Why windows, and a 256 KB bucket rather than the prototype's 2.5 KB (001
// §4.2): this machine has two cores shared with other work, and while they
// are oversubscribed the worker is off its CPU for milliseconds. A 2.5 KB
// bucket (100 µs at R) forfeits the credit of every such stall — up to 15%
// of the rate in trials, and 128 KB still lost 8–15% at a load average of
// 5 — while 256 KB (10 ms) lets the port catch up. The bucket cannot
// inflate the result: the shaper sends at most Bucket + one frame more than
// R·T/8 in any interval T (scheduler.Shaper), 0.8% of R over 2 s, which the
// first check enforces.
func TestTCPGoodputAtShapedRate(t *testing.T) {
	if race.Enabled {
		t.Skip("a rate measurement: the race detector slows the worker several-fold (79% of the rate in a trial)")
	}
	const (
		rate            = 200_000_000
		bucket          = 256 << 10
		k               = 256 << 10
		window          = 2 * time.Second
		windows         = 6
		minBoundWindows = 3                     // the wire bound is checked over at least 6 s
		counterLag      = 10 * time.Millisecond // how far the TX counters may trail departures
	)
	r := newRig(t, 2, func(hs []testbed.Host) dataplane.Config {
		cfg := baseConfig(hs, 1)
		p := &cfg.Ports[1]
		p.Queues[0] = buffer.QueueConfig{Cap: 1 << 20}
		p.Shaper = scheduler.ShaperConfig{Rate: rate, Bucket: bucket, Overhead: scheduler.OverheadEthernet}
		p.Scheduler.Overhead = scheduler.OverheadEthernet
		p.Scheduler.LineRate = rate
		p.Enqueue = []dataplane.MarkerSpec{{Name: "dctcp", New: func(nq int) (marking.Marker, error) {
			return marking.NewRED(marking.CutOff(marking.MeasureQueue, marking.Bytes(k)), marking.Enqueue, nq)
		}}}
		p.NonECT = marking.NonECTPass
		return cfg
	})
	h1, h2 := r.hosts[0], r.hosts[1]
	ln, err := h2.ListenTCP(0)
	if err != nil {
		t.Fatal(err)
	}
	rcv := bulk.Serve(ln)
	defer rcv.Close()
	dst := netip.AddrPortFrom(h2.IPv4, uint16(ln.Addr().(*net.TCPAddr).Port))

	conns := make(chan net.Conn, 1)
	dial := dialer(h1, dst, 0)
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_, err := bulk.Sender{
			Dial: func(ctx context.Context) (net.Conn, error) {
				c, err := dial(ctx)
				if err == nil {
					conns <- c
				}
				return c, err
			},
			Flows:    1,
			Duration: time.Second + windows*window + time.Second,
		}.Run(ctx)
		done <- err
	}()
	conn := <-conns
	time.Sleep(time.Second)
	mss, opts, err := segmentLayout(conn)
	if err != nil {
		t.Fatal(err)
	}
	const tcpIPEth, fcsPreambleIFG = 20 + 20 + 14, 4 + 8 + 12
	want := float64(rate) * float64(mss) / float64(mss+opts+tcpIPEth+fcsPreambleIFG)
	wantRatio := float64(mss) / float64(mss+opts+tcpIPEth+fcsPreambleIFG)

	wireBytes := func(p dataplane.PortStats) uint64 { return p.TxBytes + fcsPreambleIFG*p.TxPackets }
	start, pStart := time.Now(), r.port(h2)
	passed := false
	w := 1
	for ; w <= windows && (!passed || w <= minBoundWindows); w++ {
		b0, t0, p0 := rcv.Bytes(), time.Now(), r.port(h2)
		time.Sleep(window)
		b1, t1, p1 := rcv.Bytes(), time.Now(), r.port(h2)
		secs := t1.Sub(t0).Seconds()
		got := float64(b1-b0) * 8 / secs
		wire := float64(wireBytes(p1)-wireBytes(p0)) * 8 / secs
		t.Logf("window %d: MSS %d, options %d B: goodput %.2f Mbit/s of the expected %.2f (%.2f%%); wire %.2f Mbit/s; goodput/wire %.4f, formula %.4f",
			w, mss, opts, got/1e6, want/1e6, 100*got/want, wire/1e6, got/wire, wantRatio)
		ratio := got / wire
		passed = passed || ratio >= 0.995*wantRatio && ratio <= 1.005*wantRatio
	}
	// The shaper's bound over the whole measured span: the counters count
	// a frame when the worker hands it to the device, which trails its
	// departure from the virtual line by up to the coalescing window plus
	// however late the worker runs (3.6 ms measured on a quiet machine), so
	// a count may include departures from before the span began.
	end, pEnd := time.Now(), r.port(h2)
	secs := end.Sub(start).Seconds()
	wire := float64(wireBytes(pEnd)-wireBytes(pStart)) * 8 / secs
	if limit := float64(rate) + (float64(bucket+1538)*8+rate*counterLag.Seconds())/secs; wire > limit {
		t.Errorf("over %d windows the port sent %.2f Mbit/s on the wire, above the shaper's bound %.2f Mbit/s", w-1, wire/1e6, limit/1e6)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !passed {
		t.Errorf("in none of %d windows was goodput/wire within 0.5%% of MSS/(MSS+%d+%d+%d) = %.4f (see the log; load average %s)",
			windows, opts, tcpIPEth, fcsPreambleIFG, wantRatio, loadAverage())
	}
	if st := r.port(h2); st.Queues[0].MarkedEnq == 0 {
		t.Errorf("no CE marks at h2's port: the queue never reached K = %d B, so the flow was not shaper-bound", k)
	}
}

// loadAverage returns /proc/loadavg's first three fields, for failure
// messages of timing tests.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// segmentLayout returns the sender's MSS (tcpi_snd_mss: payload bytes per
// full segment) and the TCP option bytes each segment carries (12 when
// timestamps were negotiated, RFC 7323 §3).
func segmentLayout(c net.Conn) (mss, opts int, err error) {
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var info *unix.TCPInfo
	var ierr error
	if err := rc.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil {
		return 0, 0, err
	}
	if ierr != nil {
		return 0, 0, fmt.Errorf("TCP_INFO: %w", ierr)
	}
	if info.Options&tcpiOptTimestamps != 0 {
		opts = 12
	}
	return int(info.Snd_mss), opts, nil
}

// tcpiOptTimestamps is TCPI_OPT_TIMESTAMPS of linux/tcp.h: the connection
// negotiated the timestamps option.
const tcpiOptTimestamps = 1
