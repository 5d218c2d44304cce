package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// A DualQ port in YAML: tc-dualpi2's keys in the scheduler section land
// in the scheduler's and the port's DualQ config, defaults where absent,
// and the switch builds with the coupled AQM at the head of the port's
// dequeue chain.
func TestDualQConfig(t *testing.T) {
	c := mustParse(t, `
ports:
  - name: a
  - name: l4s
    rate: 1Gbit
    scheduler:
      kind: dualq
      target: 5ms
      tupdate: 8ms
      alpha: 0.3
      beta: 6.4
      coupling_factor: 3
      step_thresh: 500us
      min_qlen_step: 2
      drop_on_overload: false
      ecn_mask: any_ect
      classic_protection: 25
      dscp: {45: l4s, 46: classic}
      seed: 7
    markers:
      dequeue: [{scheme: tcn, threshold: 10ms}]
  - name: dflt
    scheduler: {kind: dualq, step_thresh: 10pkt, classic_protection: 0, tshift: 30ms}
forwarding: {patches: [{from: a, to: l4s}]}
`)
	p := c.Switch.Ports[1]
	wantSched := scheduler.Config{Kind: scheduler.DualQ, NumQueues: 2, MTU: scheduler.DefaultMTU, Overhead: scheduler.OverheadEthernet, LineRate: 1e9, ClassicProtection: 25}
	if p.Scheduler.Kind != wantSched.Kind || p.Scheduler.NumQueues != 2 || p.Scheduler.ClassicProtection != 25 || p.Scheduler.TShift != 0 || len(p.Queues) != 2 {
		t.Errorf("scheduler %+v with %d buffer queues; want %+v", p.Scheduler, len(p.Queues), wantSched)
	}
	want := dataplane.DualQ{
		AQM: marking.DualPI2Config{Target: 5e6, TUpdate: 8e6, Alpha: 0.3, Beta: 6.4, Coupling: 3,
			StepThresh: 500_000, MinQlenStep: 2, Overflow: true, Seed: 7},
		ECNMask: marking.ECNMaskAny,
		DSCP:    map[uint8]int{45: scheduler.DualQL4S, 46: scheduler.DualQClassic},
	}
	if fmt.Sprint(p.DualQ) != fmt.Sprint(want) {
		t.Errorf("dualq %+v\nwant   %+v", p.DualQ, want)
	}
	d := c.Switch.Ports[2]
	if d.DualQ.AQM != (marking.DualPI2Config{StepPackets: 10}) || d.DualQ.ECNMask != marking.ECNMaskL4S || d.DualQ.DSCP != nil ||
		d.Scheduler.ClassicProtection != scheduler.NoClassicProtection || d.Scheduler.TShift != 30e6 {
		t.Errorf("defaults: %+v, %+v", d.DualQ, d.Scheduler)
	}
	sw := build(t, c)
	var names []string
	for _, m := range sw.Stats().Ports[1].Markers {
		names = append(names, m.Name)
	}
	if got := strings.Join(names, " "); got != "dualpi2-step dualpi2-coupled dualpi2-classic dualpi2-overload tcn" {
		t.Errorf("port l4s's markers: %s", got)
	}
	if st := sw.Stats().Ports[1].DualQ; st == nil || st.Prob != 0 {
		t.Errorf("DualQ stats %+v", st)
	}
}

func TestDualQConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, key, msg string
	}{
		{"a dualq key on dwrr", "ports: [{name: p, scheduler: {target: 5ms}}]", "ports[0].scheduler.target", "a key of scheduler kind dualq, not dwrr"},
		{"queues", "ports: [{name: p, queues: 4, scheduler: {kind: dualq}}]", "ports[0].queues", "4 for scheduler kind dualq"},
		{"per-queue settings", "ports: [{name: p, scheduler: {kind: dualq, queues: {0: {weight: 2}}}}]", "ports[0].scheduler.queues", "weights come from classic_protection"},
		{"target", "ports: [{name: p, scheduler: {kind: dualq, target: 11s}}]", "ports[0].scheduler.target", `"11s" outside (0, 10s]`},
		{"beta", "ports: [{name: p, scheduler: {kind: dualq, beta: 0}}]", "ports[0].scheduler.beta", "0 outside (0, 1000000]"},
		{"coupling", "ports: [{name: p, scheduler: {kind: dualq, coupling_factor: 0.5}}]", "ports[0].scheduler.coupling_factor", "0.5 outside [1, 255]"},
		{"step", "ports: [{name: p, scheduler: {kind: dualq, step_thresh: 3 bananas}}]", "ports[0].scheduler.step_thresh", "want a time (1ms) or packets (5pkt)"},
		{"ramp in packets", "ports: [{name: p, scheduler: {kind: dualq, step_thresh: 5pkt, ramp_range: 1ms}}]", "ports[0].scheduler.ramp_range", "needs step_thresh as a time"},
		{"ecn_mask", "ports: [{name: p, scheduler: {kind: dualq, ecn_mask: none}}]", "ports[0].scheduler.ecn_mask", `"none" is not one of l4s_ect, any_ect`},
		{"classic_protection", "ports: [{name: p, scheduler: {kind: dualq, classic_protection: 101}}]", "ports[0].scheduler.classic_protection", "101 outside [0, 100]"},
		{"tshift", "ports: [{name: p, scheduler: {kind: dualq, tshift: 2s}}]", "ports[0].scheduler.tshift", `"2s" outside [0, 1s]`},
		{"dscp class", "ports: [{name: p, scheduler: {kind: dualq, dscp: {45: fast}}}]", "ports[0].scheduler.dscp.45", `"fast" is not one of classic, l4s`},
		{"dscp code", "ports: [{name: p, scheduler: {kind: dualq, dscp: {64: l4s}}}]", "ports[0].scheduler.dscp.64", "DSCP 64 outside [0, 63]"},
		{"t_idle", "ports: [{name: p, scheduler: {kind: dualq, t_idle: 1ms}}]", "ports[0].scheduler.t_idle", "not dualq"},
		{"memlimit", "ports: [{name: p, scheduler: {kind: dualq, memlimit: 1MB}}]", "ports[0].scheduler.memlimit", "unknown key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil {
				t.Fatalf("no error for\n%s", tc.yaml)
			}
			var all []string
			for _, e := range errorsOf(err) {
				if e.Key == tc.key && strings.Contains(e.Msg, tc.msg) {
					return
				}
				all = append(all, fmt.Sprintf("%q: %s", e.Key, e.Msg))
			}
			t.Errorf("want key %q with %q; got:\n%s", tc.key, tc.msg, strings.Join(all, "\n"))
		})
	}
}
