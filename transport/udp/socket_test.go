package udp

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/ipv4"

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
