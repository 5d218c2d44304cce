package demo_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/node"
	"github.com/ecnswitch/ecnswitch/testbed"
	"github.com/ecnswitch/ecnswitch/testbed/testbedtest"
)

// options returns short-mode options on a subnet and ID of the test's own,
// with progress lines going to out.
func options(t *testing.T, out *bytes.Buffer) demo.Options {
	t.Helper()
	testbedtest.SkipIfNotRoot(t)
	id, err := testbed.RandomID()
	if err != nil {
		t.Fatal(err)
	}
	return demo.Options{
		Duration: 2 * time.Second,
		Warmup:   500 * time.Millisecond,
		Subnet:   testbedtest.Subnet(t, ""),
		ID:       id,
		Out:      out,
	}
}

// checkTornDown fails t if anything of testbed id is left: a namespace, a
// switch interface, the state file.
func checkTornDown(t *testing.T, id string) {
	t.Helper()
	for i := 1; i <= demo.Hosts; i++ {
		ns := testbed.DefaultPrefix + "-" + id + "-h" + string(rune('0'+i))
		if _, err := os.Stat(filepath.Join("/run/netns", ns)); err == nil {
			t.Errorf("namespace %s left behind", ns)
		}
	}
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if strings.Contains(l.Attrs().Name, id) {
			t.Errorf("interface %s left behind", l.Attrs().Name)
		}
	}
	if _, err := os.Stat(testbed.StatePath(testbed.DefaultStateDir, id)); err == nil {
		t.Errorf("state file of testbed %s left behind", id)
	}
}

// TestShortDemo runs every scheme for 2 s and checks that the table is
// made of sane numbers and that nothing is left behind.
//
// What must hold on any machine: every scheme ran, in order; both queues
// carried traffic and their shares add up to 1; the total goodput never
// exceeds what the shaper lets through (C·1448/1538 plus one bucket and
// one frame per window, scheduler.Shaper's bound) and agrees with the
// port's own wire rate (goodput = busy · C·1448/1538 within 5%: the
// receiver's count and the switch's count describe the same bytes); the
// port was congested (CE marks, queueing delay); per-queue marking on
// equal-quantum DWRR splits the link about 1:1 (001 §2.2.1), within ±15%
// for noise. How close the total comes to C depends on the CPU this
// machine gives the switch and the hosts' TCP (two cores shared with
// other work): it is logged, and only required to be a fair part of C.
func TestShortDemo(t *testing.T) {
	var out bytes.Buffer
	o := options(t, &out)
	res, err := node.Demo(context.Background(), o)
	t.Log("\n" + out.String())
	checkTornDown(t, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := res.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Log(table.String())

	if len(res.Schemes) != 3 {
		t.Fatalf("%d schemes ran, want 3", len(res.Schemes))
	}
	for i, name := range demo.Schemes() {
		s := res.Schemes[i]
		if s.Scheme != name {
			t.Errorf("scheme %d is %s, want %s", i, s.Scheme, name)
		}
		if !strings.Contains(table.String(), s.Title) {
			t.Errorf("the table lacks %s", s.Title)
		}
		total := s.Goodput()
		max := res.MaxGoodput() + float64(res.Bucket+1538)*8/s.Elapsed.Seconds()
		t.Logf("%s: %.1f Mbit/s = %.1f%% of C·1448/1538, port busy %.1f%%, shares %.3f : %.3f",
			s.Title, total/1e6, 100*total/res.MaxGoodput(), 100*s.Busy, s.Queues[0].Share, s.Queues[1].Share)
		if total > max {
			t.Errorf("%s: %.1f Mbit/s, more than the shaper lets through (%.1f)", s.Title, total/1e6, max/1e6)
		}
		if want := s.Busy * res.MaxGoodput(); math.Abs(total-want) > 0.05*want {
			t.Errorf("%s: goodput %.1f Mbit/s, but the port's wire rate implies %.1f", s.Title, total/1e6, want/1e6)
		}
		if sum := s.Queues[0].Share + s.Queues[1].Share; math.Abs(sum-1) > 1e-9 {
			t.Errorf("%s: shares add up to %v", s.Title, sum)
		}
		var marks uint64
		for q, qr := range s.Queues {
			if qr.Goodput <= 0 {
				t.Errorf("%s: queue %d carried nothing", s.Title, q+1)
			}
			if qr.Flows != res.Flows[q] {
				t.Errorf("%s: queue %d has %d flows, want %d", s.Title, q+1, qr.Flows, res.Flows[q])
			}
			if qr.MeanDelay <= 0 || qr.MeanDelay > 10*time.Millisecond {
				t.Errorf("%s: queue %d mean queueing delay %v", s.Title, q+1, qr.MeanDelay)
			}
			marks += qr.Marks
		}
		if marks == 0 {
			t.Errorf("%s: no CE marks: the bottleneck port never reached its threshold", s.Title)
		}
		// The shares are the scheduler's only while the port is the
		// bottleneck; a test machine busy with other work may starve the
		// worker, and the table then says "not comparable" instead.
		if name == demo.PerQueue {
			if s.Busy < demo.MinBusy {
				t.Logf("per-queue ECN: shares not checked: the port was busy %.1f%% of the time, under %.0f%%", 100*s.Busy, 100*demo.MinBusy)
			} else if math.Abs(s.Queues[0].Share-0.5) > 0.15 {
				t.Errorf("per-queue ECN: shares %.3f : %.3f at %.1f%% busy, want about 1:1", s.Queues[0].Share, s.Queues[1].Share, 100*s.Busy)
			}
		}
	}
	for _, want := range []string{"[1/3] per-port ECN", "[3/3] MQ-ECN", "tearing down"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("progress lacks %q", want)
		}
	}
}

// TestDemoCancelled: cancelling the context in the middle of a scheme — as
// Ctrl-C does in the command — stops the flows and the switch and tears the
// testbed down, and Run returns the context's error.
func TestDemoCancelled(t *testing.T) {
	var out bytes.Buffer
	o := options(t, &out)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	res, err := node.Demo(ctx, o)
	t.Log("\n" + out.String())
	checkTornDown(t, o.ID)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run returned %v, want the context's error", err)
	}
	if res == nil || len(res.Schemes) != 0 {
		t.Errorf("result %+v: want no finished scheme", res)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Run took %v to stop after its context was cancelled at 2 s", d)
	}
}

// TestOptionsRejected: bad options name the option and its range, before
// anything is created.
func TestOptionsRejected(t *testing.T) {
	for _, c := range []struct {
		o    demo.Options
		want string
	}{
		{demo.Options{Duration: time.Millisecond}, "duration 1ms: want at least 100ms"},
		{demo.Options{Schemes: []string{"per-port", "red"}}, `schemes[1] "red": want one of per-port, per-queue, mqecn`},
		{demo.Options{K: 200 << 10}, "k 204800 bytes outside [1, buffer = 98304]"},
		{demo.Options{Flows: [2]int{1, 0}}, "flows[1] 0 outside [1, 64]"},
		{demo.Options{Rate: 10}, "rate 10 bit/s outside"},
		{demo.Options{Delay: -time.Second}, "delay -1s outside [0, 1s]"},
	} {
		err := c.o.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want an error containing %q", c.o, err, c.want)
		}
		if _, err := demo.Run(context.Background(), c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Run(%+v) = %v, want %q", c.o, err, c.want)
		}
	}
	if err := (demo.Options{}).Validate(); err != nil {
		t.Errorf("the zero Options are invalid: %v", err)
	}
	if _, err := demo.Run(context.Background(), demo.Options{}); err == nil || !strings.Contains(err.Error(), "Options.Start is nil") {
		t.Errorf("Run without Start = %v, want an error naming Options.Start", err)
	}
}
