package udp

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/transport"
)

func TestCodepoint(t *testing.T) {
	for k, want := range map[transport.Kind]uint8{
		transport.KindPrague: ECT1, transport.KindDCTCP: ECT0, transport.KindDX: ECT0, transport.KindECNStar: ECT0,
	} {
		if got := Codepoint(k); got != want {
			t.Errorf("Codepoint(%v) = %d, want %d", k, got, want)
		}
	}
}

// A Prague sender's data leave with ECT(1) from a socket prepared with
// its Codepoint; every CE the pipe sets is echoed and counted, and
// Prague cuts its window for them; its Target reaches the controller.
func TestPragueSender(t *testing.T) {
	a, b := newPipe(Codepoint(transport.KindPrague), NotECT)
	k, marked := 0, 0
	a.filter = func(d *datagram) bool {
		k++
		if d.rx.ECN() != ECT1 {
			t.Errorf("data datagram %d left with ECN %d, want ECT(1)", k, d.rx.ECN())
		}
		if k%5 == 0 {
			d.rx.TOS |= CE
			marked++
		}
		return true
	}
	cfg := Config{Flow: 7, CC: transport.KindPrague, Target: 4 * time.Millisecond, Packets: 500, LogEvery: -1}
	s, err := NewSender(a, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := s.Controller().(*transport.Prague); !ok || p.Target != int64(cfg.Target) {
		t.Fatalf("controller %T %+v: want Prague with Target %v", s.Controller(), s.Controller(), cfg.Target)
	}
	r, err := NewReceiver(b, ReceiverConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
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
	f, st := r.Flows()[0], s.Stats()
	if f.Packets != cfg.Packets || f.CE != uint64(marked) || st.Marks != uint64(marked) || f.NotECT != 0 {
		t.Errorf("delivered %d, %d CE, %d not ECT; sender %d echoes; want %d, %d, 0, %d", f.Packets, f.CE, f.NotECT, st.Marks, cfg.Packets, marked, marked)
	}
	if c, _ := s.Controller().Reductions(); c == 0 {
		t.Error("Prague never cut its window for the echoed marks")
	}
}

func TestTargetOnlyForPrague(t *testing.T) {
	a, _ := newPipe(ECT0, NotECT)
	for _, cfg := range []Config{
		{CC: transport.KindDCTCP, Target: time.Millisecond},
		{CC: transport.KindPrague, Target: -time.Millisecond},
	} {
		if _, err := NewSender(a, nil, cfg); err == nil || !strings.Contains(err.Error(), "target") {
			t.Errorf("%v with target %v: %v; want an error naming the target", cfg.CC, cfg.Target, err)
		}
	}
}
