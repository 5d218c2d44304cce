package udp

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

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
