package dataplane_test

import (
	"testing"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// thresholdLog wraps a marker and counts, per queue, the thresholds of the
// packets it marked.
type thresholdLog struct {
	m    marking.Marker
	seen map[int]map[int64]int
}

func (l *thresholdLog) Mark(v *marking.View) marking.Verdict {
	verdict := l.m.Mark(v)
	if verdict == marking.Mark {
		if l.seen[v.Queue] == nil {
			l.seen[v.Queue] = map[int64]int{}
		}
		l.seen[v.Queue][v.Threshold]++
	}
	return verdict
}

// TestMarkersSeePortWideWeights runs weight-dependent markers through the
// switch and checks the threshold each marked packet was compared with, so
// that the weights the worker puts in the View are the ones the papers
// divide by:
//
//   - PMSB under SP (003 §VI-A's three SP queues): weight_sum is "the sum of
//     all queues' weights in port p" (003 Table II), so each queue's filter
//     threshold is a third of port_threshold, not all of it (issue 11).
//   - The "minimum" per-queue threshold K_i = W_i/Σ_j W_j·K over all N queues
//     of the port (001 §2.2.2 Eq. 2), here SP-over-DWRR with a strict queue
//     of weight 2 above two DWRR queues of one MTU each: K/4, not K/2.
//   - MQ-ECN under WFQ (001 §3.4): K_i = w_i/w_sum·K with w_sum the weights
//     of the backlogged queues; weights 1 and 3, both backlogged: K/4 and
//     3K/4, where MQ-ECN used to fall back to K.
//
// Two hosts offer 2×C of ECT(0) frames into the shaped egress port, host 0
// into queue 0 and host 1 into queue hiQ.
func TestMarkersSeePortWideWeights(t *testing.T) {
	const (
		rate = 1_000_000_000
		pool = 1 << 20
		k    = 40_000
	)
	mtu := int64(scheduler.Overhead(0).Wire(1514))
	for _, tc := range []struct {
		name  string
		sched scheduler.Config
		hiQ   int
		new   func(queues int) (marking.Marker, error)
		want  map[int]int64 // queue → the threshold of every mark in it
	}{
		{"pmsb/sp", scheduler.Config{Kind: scheduler.SP, NumQueues: 3}, 2,
			func(n int) (marking.Marker, error) {
				return marking.NewPMSB(marking.PMSBConfig{PortThreshold: marking.Bytes(3 * k)}, marking.Enqueue, n)
			},
			map[int]int64{0: k}},
		{"minimum/sp-over-dwrr", scheduler.Config{Kind: scheduler.DWRR, Queues: []scheduler.QueueConfig{{}, {}, {Strict: true, Weight: 2}}}, 1,
			func(n int) (marking.Marker, error) {
				return marking.NewRED(marking.Minimum(marking.Bytes(k)), marking.Enqueue, n)
			},
			map[int]int64{0: k * mtu / (4 * mtu), 1: k * mtu / (4 * mtu)}},
		{"mqecn/wfq", scheduler.Config{Kind: scheduler.WFQ, Queues: []scheduler.QueueConfig{{Weight: 1}, {Weight: 3}}}, 1,
			func(n int) (marking.Marker, error) {
				return marking.NewMQECN(marking.MQECNConfig{KMin: marking.Bytes(k)}, marking.Enqueue, n)
			},
			map[int]int64{0: k / 4, 1: 3 * k / 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := dataplanetest.Config(3, tc.sched.NumQueues+len(tc.sched.Queues), rate, pool)
			cfg.Ports[2].Scheduler.Kind = tc.sched.Kind
			cfg.Ports[2].Scheduler.Queues = tc.sched.Queues
			cfg.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 2}, {From: 1, To: 2}}
			log := &thresholdLog{seen: map[int]map[int64]int{}}
			cfg.Ports[2].Enqueue = []dataplane.MarkerSpec{{Name: "under-test", New: func(n int) (marking.Marker, error) {
				m, err := tc.new(n)
				log.m = m
				return log, err
			}}}
			r := dataplanetest.New(t, cfg, memport.Link{Rate: rate})
			f := [][]byte{
				dataplanetest.Frame(t, 0, 2, packettest.Options{Size: 1500, ECN: packet.ECT0}),
				dataplanetest.Frame(t, 1, 2, packettest.Options{Size: 1500, ECN: packet.ECT0, DSCP: uint8(8 * tc.hiQ)}),
			}
			for r.Clock.Now() < 20_000_000 {
				for h := range 2 {
					for r.Backlog(h) < 32 && r.Send(h, f[h]) == 1 {
					}
				}
				r.Step(1_000, 1_000)
				r.Recv(2)
			}
			for q, want := range tc.want {
				if len(log.seen[q]) == 0 {
					t.Errorf("queue %d: no packet marked", q)
				}
				for thr, n := range log.seen[q] {
					if thr != want {
						t.Errorf("queue %d: %d packets marked at threshold %d B, want %d B", q, n, thr, want)
					}
				}
			}
		})
	}
}
