package bulk_test

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/testbed/bulk"
)

// checkLeaks fails the test if goroutines started during it outlive it.
func checkLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		for range 200 {
			if runtime.NumGoroutine() <= before {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		buf := make([]byte, 1<<16)
		t.Errorf("goroutines: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
	})
}

func serve(t *testing.T) *bulk.Receiver {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return bulk.Serve(ln)
}

func dialer(addr net.Addr) func(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr.String()) }
}

func waitDone(t *testing.T, r *bulk.Receiver, n int) []bulk.Flow {
	t.Helper()
	for range 500 {
		fs := r.Flows()
		done := 0
		for _, f := range fs {
			if f.Done {
				done++
			}
		}
		if done == n {
			return fs
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("flows %+v; want %d done", r.Flows(), n)
	return nil
}

// TestGoodputMatchesSent: every byte a flow wrote is read by the receiver,
// flow by flow, once the flows end.
func TestGoodputMatchesSent(t *testing.T) {
	checkLeaks(t)
	r := serve(t)
	s := bulk.Sender{Dial: dialer(r.Addr()), Flows: 3, Duration: 150 * time.Millisecond, WriteSize: 1000}
	start := time.Now()
	res, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < s.Duration || took > s.Duration+2*time.Second {
		t.Errorf("Run took %v; want about %v", took, s.Duration)
	}
	got := map[string]int64{}
	for _, f := range waitDone(t, r, 3) {
		got[f.Remote] = f.Bytes
	}
	var sum int64
	for _, f := range res.Flows {
		if f.Bytes == 0 || got[f.Local] != f.Bytes || !f.Done {
			t.Errorf("flow %s: sent %d (done %v), received %d", f.Local, f.Bytes, f.Done, got[f.Local])
		}
		sum += f.Bytes
	}
	if len(res.Flows) != 3 || sum != res.Bytes || r.Bytes() != res.Bytes {
		t.Errorf("%d flows, sum %d, Result.Bytes %d, Receiver.Bytes %d", len(res.Flows), sum, res.Bytes, r.Bytes())
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestCancelEndsRun: with no Duration, cancelling the context ends the
// transfer promptly and normally.
func TestCancelEndsRun(t *testing.T) {
	checkLeaks(t)
	r := serve(t)
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	res, err := bulk.Sender{Dial: dialer(r.Addr()), Flows: 2}.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Run took %v after cancel at 100ms", took)
	}
	if res.Bytes == 0 {
		t.Error("nothing sent")
	}
	waitDone(t, r, 2)
	if r.Bytes() != res.Bytes {
		t.Errorf("received %d; sent %d", r.Bytes(), res.Bytes)
	}
}

// TestDialFailureClosesOpenedFlows: a failed dial ends Run with an error
// and closes the flows already opened.
func TestDialFailureClosesOpenedFlows(t *testing.T) {
	checkLeaks(t)
	r := serve(t)
	defer r.Close()
	dial, calls := dialer(r.Addr()), 0
	s := bulk.Sender{Flows: 3, Duration: time.Second, Dial: func(ctx context.Context) (net.Conn, error) {
		if calls++; calls == 3 {
			return nil, errors.New("refused")
		}
		return dial(ctx)
	}}
	if _, err := s.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "dial flow 3") {
		t.Fatalf("Run = %v; want the third dial's error", err)
	}
	waitDone(t, r, 2)
}

// TestReceiverCloseResetsSenders: closing the receiver under load ends the
// sender's flows with an error, and nothing leaks.
func TestReceiverCloseResetsSenders(t *testing.T) {
	checkLeaks(t)
	r := serve(t)
	time.AfterFunc(100*time.Millisecond, func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := bulk.Sender{Dial: dialer(r.Addr()), Flows: 2}.Run(ctx)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("Run = %v (ctx %v); want a write error from the reset flows", err, ctx.Err())
	}
}

func TestSenderValidates(t *testing.T) {
	d := func(context.Context) (net.Conn, error) { return nil, errors.New("unused") }
	for _, c := range []struct {
		s    bulk.Sender
		want string
	}{
		{bulk.Sender{Dial: d}, "Flows 0"},
		{bulk.Sender{Flows: 1}, "Dial is nil"},
		{bulk.Sender{Dial: d, Flows: 1, Duration: -1}, "Duration"},
		{bulk.Sender{Dial: d, Flows: 1, WriteSize: -1}, "WriteSize"},
	} {
		if _, err := c.s.Run(context.Background()); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Run(%+v) = %v; want %q", c.s, err, c.want)
		}
	}
}
