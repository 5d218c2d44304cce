package config

import (
	"github.com/ecnswitch/ecnswitch/marking"
)

// PortSettings are the settings of a port that may change while the
// switch runs (Set, Changes), as `ecnswitch get`, the control socket's
// /config and telemetry's /stats report them.
type PortSettings struct {
	Name      string           `json:"name"`
	Rate      int64            `json:"rate_bps"`     // the shaper's rate C; 0: unshaped
	Bucket    int64            `json:"bucket_bytes"` // the shaper's bucket
	Scheduler string           `json:"scheduler"`    // sp, wrr, dwrr or wfq
	Queues    []QueueSettings  `json:"queues"`
	Markers   []MarkerSettings `json:"markers"` // enqueue chain, then dequeue chain, in order
}

// QueueSettings are one egress queue's settings.
type QueueSettings struct {
	Strict  bool    `json:"strict,omitempty"`
	Weight  int64   `json:"weight"`
	Quantum int64   `json:"quantum_bytes,omitempty"` // 0: weight × the port's MTU as charged
	Alpha   float64 `json:"alpha,omitempty"`         // the Dynamic Threshold α; 0 with a static cap
	Cap     int64   `json:"cap_bytes,omitempty"`
	Reserve int64   `json:"reserve_bytes,omitempty"`
}

// MarkerSettings are one marker of a port's chains, its parameters as the
// config (or `ecnswitch set`) wrote them; absent ones take the scheme's
// defaults.
type MarkerSettings struct {
	Name   string            `json:"name"`
	Scheme string            `json:"scheme"`
	Stage  string            `json:"stage"` // enqueue or dequeue
	Params map[string]string `json:"params"`
}

// Settings returns every port's settings that may change while the switch
// runs, in the ports' order.
func (c *Config) Settings() []PortSettings {
	out := make([]PortSettings, len(c.Ports))
	for i, dev := range c.Ports {
		p := &c.Switch.Ports[i]
		ps := PortSettings{Name: dev.Name, Rate: p.Shaper.Rate, Bucket: p.Shaper.Bucket, Scheduler: p.Scheduler.Kind.String()}
		for q, qc := range queueConfigs(p.Scheduler) {
			b := p.Queues[q]
			ps.Queues = append(ps.Queues, QueueSettings{Strict: qc.Strict, Weight: qc.Weight, Quantum: qc.Quantum,
				Alpha: b.Alpha, Cap: b.Cap, Reserve: b.Reserve})
		}
		for _, stage := range []marking.Stage{marking.Enqueue, marking.Dequeue} {
			for _, m := range dev.chain(stage) {
				params := make(map[string]string, len(m.values))
				for _, kv := range m.values {
					params[kv[0]] = kv[1]
				}
				ps.Markers = append(ps.Markers, MarkerSettings{Name: m.Name, Scheme: m.Scheme, Stage: stage.String(), Params: params})
			}
		}
		out[i] = ps
	}
	return out
}
