package udp

import (
	"context"
	"encoding/binary"
	"net/netip"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/testbed/testbedtest"
	"github.com/ecnswitch/ecnswitch/transport"
)

// Real sockets, both ends on one testbed host (its own namespace, its own
// address): ECT(0) leaves through IP_TOS and is read back through
// IP_RECVTOS, and every datagram carries a kernel receive stamp.
func TestSockets(t *testing.T) {
	h := testbedtest.New(t, 1).Hosts()[0]
	rc, err := h.ListenUDP(0)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	rconn, err := Prepare(rc, NotECT)
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(rc.LocalAddr().(interface{ AddrPort() netip.AddrPort }).AddrPort().Port())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sc, err := h.DialUDP(ctx, netip.AddrPortFrom(h.IPv4, port), 0, ECT0)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	sconn, err := Prepare(sc, ECT0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Flow: 9, CC: transport.KindDX, Packets: 3000, Rate: 1e9}
	s, err := NewSender(sconn, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReceiver(rconn, ReceiverConfig{})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var rerr error
	wg.Go(func() { rerr = r.Run(rctx) })
	serr := s.Run(ctx)
	stop()
	wg.Wait()
	if serr != nil || rerr != nil || ctx.Err() != nil {
		t.Fatalf("sender: %v, receiver: %v, context: %v", serr, rerr, ctx.Err())
	}
	fs := r.Flows()
	if len(fs) != 1 {
		t.Fatalf("flows %+v, want one", fs)
	}
	f, st := fs[0], s.Stats()
	if f.Packets != cfg.Packets || st.Acked != cfg.Packets {
		t.Errorf("delivered %d, acked %d; want %d", f.Packets, st.Acked, cfg.Packets)
	}
	if f.NotECT != 0 || f.CE != 0 || f.Unstamped != 0 || st.Unstamped != 0 {
		t.Errorf("receiver: %d not ECT, %d CE, %d unstamped; sender: %d unstamped ACKs; want all 0", f.NotECT, f.CE, f.Unstamped, st.Unstamped)
	}
	if st.Samples == 0 || len(s.Log()) == 0 {
		t.Errorf("%d delay samples, %d log lines; want some", st.Samples, len(s.Log()))
	}
	if base, ok := s.delay.MinRTT(); !ok || base <= 0 {
		t.Errorf("base RTT %d (%v): want > 0", base, ok)
	}
}

// NDP over real sockets on one testbed host: a message of 500 packets
// arrives whole (no switch: nothing is trimmed), and readWaiting takes
// what waits on a real socket with MSG_DONTWAIT, and returns at once
// (EAGAIN) when nothing does.
func TestNDPSockets(t *testing.T) {
	h := testbedtest.New(t, 1).Hosts()[0]
	rc, err := h.ListenUDP(0)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	rconn, err := Prepare(rc, NotECT)
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(rc.LocalAddr().(interface{ AddrPort() netip.AddrPort }).AddrPort().Port())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sc, err := h.DialUDP(ctx, netip.AddrPortFrom(h.IPv4, port), 0, ECT0)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	sconn, err := Prepare(sc, ECT0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewNDPSender(sconn, nil, NDPConfig{Flow: 4, Packets: 500, Rate: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewNDPReceiver(rconn, NDPReceiverConfig{Rate: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var rerr error
	wg.Go(func() { rerr = r.Run(rctx) })
	serr := s.Run(ctx)
	stop()
	wg.Wait()
	if serr != nil || rerr != nil || ctx.Err() != nil {
		t.Fatalf("sender: %v, receiver: %v, context: %v", serr, rerr, ctx.Err())
	}
	fs, st := r.Flows(), s.Stats()
	if len(fs) != 1 || fs[0].Received != 500 || fs[0].Done == 0 || st.Acked != 500 || st.Done == 0 || st.Pulls == 0 {
		t.Fatalf("receiver %+v, sender %+v; want 500 packets received, acked and pulled", fs, st)
	}

	// Three datagrams wait on the receiver's socket.
	for range 3 {
		if _, err := sc.Write(make([]byte, HeaderLen)); err != nil {
			t.Fatal(err)
		}
	}
	ms := make([]ipv4.Message, batch)
	for i := range ms {
		ms[i].Buffers, ms[i].OOB = [][]byte{make([]byte, 65536)}, make([]byte, controlLen+64)
	}
	var bytes int
	for deadline := time.Now().Add(10 * time.Second); bytes < 3*HeaderLen && time.Now().Before(deadline); {
		if err := readWaiting(rconn, ms, func(n int) {
			for _, m := range ms[:n] {
				bytes += m.N
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if err := readWaiting(rconn, ms, func(int) { t.Error("read from an empty socket") }); err != nil || time.Since(start) > time.Second {
		t.Fatalf("readWaiting on an empty socket: %v after %v", err, time.Since(start))
	}
	if bytes != 3*HeaderLen {
		t.Fatalf("readWaiting took %d bytes, want %d", bytes, 3*HeaderLen)
	}
}

// With Config.TxStamps, t1 is the kernel's transmit stamp: every sample of
// a flow over a real socket carries one, and its RTT from the stamps is
// positive and no longer than the RTT with the sender's own send and
// receive paths left in (HostRTT).
func TestTxStamps(t *testing.T) {
	h := testbedtest.New(t, 1).Hosts()[0]
	rc, err := h.ListenUDP(0)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	rconn, err := Prepare(rc, NotECT)
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(rc.LocalAddr().(interface{ AddrPort() netip.AddrPort }).AddrPort().Port())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sc, err := h.DialUDP(ctx, netip.AddrPortFrom(h.IPv4, port), 0, ECT0)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	sconn, err := Prepare(sc, ECT0)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := EnableTxStamps(sc)
	if err != nil {
		t.Fatal(err)
	}
	var samples []DelaySample
	cfg := Config{Flow: 3, CC: transport.KindECNStar, Packets: 500, Rate: 50e6, Burst: 1, TxStamps: tx,
		OnSample: func(x DelaySample) { samples = append(samples, x) }}
	s, err := NewSender(sconn, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReceiver(rconn, ReceiverConfig{})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var rerr error
	wg.Go(func() { rerr = r.Run(rctx) })
	serr := s.Run(ctx)
	stop()
	wg.Wait()
	if serr != nil || rerr != nil {
		t.Fatalf("sender: %v, receiver: %v", serr, rerr)
	}
	st := s.Stats()
	if st.Samples == 0 || st.TxStamped < st.Samples*9/10 {
		t.Fatalf("%d of %d samples have a transmit stamp; want nearly all", st.TxStamped, st.Samples)
	}
	for i, x := range samples {
		if x.TxStamped && (x.RTT <= 0 || x.RTT > x.HostRTT) {
			t.Errorf("sample %d: RTT %d ns from the stamps, %d ns with the host's paths; want 0 < stamped ≤ host", i, x.RTT, x.HostRTT)
		}
	}
}

// parseTxStamp reads the software stamp and the send call's number out of
// an error queue message, and nothing out of one without both.
func TestParseTxStamp(t *testing.T) {
	put := func(b []byte, level, typ int32, data []byte) []byte {
		start := len(b)
		b = append(b, make([]byte, unix.CmsgSpace(len(data)))...)
		h := b[start:]
		if cmsgLenSize == 8 {
			binary.NativeEndian.PutUint64(h, uint64(unix.CmsgLen(len(data))))
		} else {
			binary.NativeEndian.PutUint32(h, uint32(unix.CmsgLen(len(data))))
		}
		binary.NativeEndian.PutUint32(h[cmsgLenSize:], uint32(level))
		binary.NativeEndian.PutUint32(h[cmsgLenSize+4:], uint32(typ))
		copy(h[unix.SizeofCmsghdr:], data)
		return b
	}
	ts := make([]byte, 48)
	binary.NativeEndian.PutUint64(ts, 12)
	binary.NativeEndian.PutUint64(ts[8:], 345)
	ee := make([]byte, 16)
	ee[4] = unix.SO_EE_ORIGIN_TIMESTAMPING
	binary.NativeEndian.PutUint32(ee[8:], unix.SCM_TSTAMP_SND)
	binary.NativeEndian.PutUint32(ee[12:], 77)
	oob := put(put(nil, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, ts), unix.IPPROTO_IP, unix.IP_RECVERR, ee)
	if id, stamp, ok := parseTxStamp(oob); !ok || id != 77 || stamp != 12_000_000_345 {
		t.Errorf("parseTxStamp = %d, %d, %v; want 77, 12000000345, true", id, stamp, ok)
	}
	if _, _, ok := parseTxStamp(put(nil, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, ts)); ok {
		t.Error("a stamp without its send call's number taken")
	}
	ee[4] = unix.SO_EE_ORIGIN_ICMP
	if _, _, ok := parseTxStamp(put(put(nil, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, ts), unix.IPPROTO_IP, unix.IP_RECVERR, ee)); ok {
		t.Error("an ICMP error taken for a stamp")
	}
	if _, _, ok := parseTxStamp(oob[:10]); ok {
		t.Error("a truncated message taken")
	}
}
