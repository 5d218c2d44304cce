package transport

import "fmt"

// HPCC's constants (Li et al., SIGCOMM 2019, §3.3 and §5: η = 95%,
// maxStage = 5).
const (
	HPCCEta      = 0.95
	HPCCMaxStage = 5
	// HPCCMaxHops is how many hops' records HPCC reads from one ACK.
	HPCCMaxHops = 16
)

// Hop is one link's in-band telemetry record as HPCC reads it (§3.2): the
// egress queue's length, the bytes the link has sent, when the record was
// made, and the link's rate.
type Hop struct {
	QLen    int64  // bytes queued at the link's egress
	TxBytes uint64 // bytes the link has sent, cumulative
	TS      int64  // when the packet left, ns on the hop's clock
	Rate    int64  // the link's rate B, bit/s
}

// HPCCConfig is one HPCC flow's parameters. Windows are in packets (of
// the sender's size on the wire).
type HPCCConfig struct {
	// BaseRTT is T, ns: the base RTT the window is measured against
	// (W_init = B_NIC·T; U's EWMA runs over T; the sender paces at W/T).
	BaseRTT int64
	// Init is W_init, packets: B_NIC·T (§3.3).
	Init float64
	// AI is W_AI, packets: W_init·(1 − η)/N for N flows expected on a
	// link at most (§3.3); 0 means that with N = 16.
	AI float64
	// Eta is η, the target utilisation, in (0, 1]; 0 means HPCCEta.
	Eta float64
	// MaxStage is how many rounds of additive increase come before a
	// multiplicative one (§3.3); 0 means HPCCMaxStage.
	MaxStage int
	// Max is the largest window, packets; 0 means Init, so that W/T
	// never exceeds the NIC's rate (HPCC's rate clamp).
	Max float64
}

// hpccFlows is the N of the default W_AI.
const hpccFlows = 16

// HPCC is HPCC's window law (§3.3, Algorithm 1). Every ACK carries the
// INT records of the packet it acknowledges; against the previous ACK's
// records, each hop i gives
//
//	u_i = min(qlen_i, qlen_i′)/(B_i·T) + txRate_i/B_i,  txRate_i = Δ txBytes_i / Δ ts_i
//
// and the largest, u = u_j, updates the flow's utilisation estimate
// U ← (1 − τ/T)·U + (τ/T)·u with τ = min(Δ ts_j, T) (MeasureInflight).
// Then (ComputeWind)
//
//	U ≥ η or incStage ≥ maxStage:  W = W^c/(U/η) + W_AI   (multiplicative)
//	otherwise:                     W = W^c + W_AI          (additive)
//
// and an ACK of a packet sent after the last reference update (once per
// round trip) also makes W the reference window W^c and resets incStage
// to 0, or advances it (NewAck). Other ACKs react at once from the same
// W^c. W stays within [MinWindow, Max]. The first ACK with records, one
// whose path has another number of hops, and one whose records say
// nothing new (no hop's clock moved since the last) only keep its
// records. Losses and ACKs without records leave the window alone.
type HPCC struct {
	cfg HPCCConfig

	w, wc    float64 // W and W^c, packets
	u        float64 // U
	incStage int
	last     uint64 // lastUpdateSeq: an ACK of this sequence or later updates W^c
	prev     [HPCCMaxHops]Hop
	hops     int // records in prev; 0 before the first
	updates  uint64
	cuts     uint64
}

// NewHPCC returns HPCC at W_init, or an error naming the parameter out of
// range.
func NewHPCC(cfg HPCCConfig) (*HPCC, error) {
	if cfg.Eta == 0 {
		cfg.Eta = HPCCEta
	}
	if cfg.MaxStage == 0 {
		cfg.MaxStage = HPCCMaxStage
	}
	if cfg.AI == 0 {
		cfg.AI = cfg.Init * (1 - cfg.Eta) / hpccFlows
	}
	if cfg.Max == 0 {
		cfg.Max = cfg.Init
	}
	switch {
	case cfg.BaseRTT <= 0:
		return nil, fmt.Errorf("transport: hpcc base rtt %d ns: must be > 0", cfg.BaseRTT)
	case cfg.Init < MinWindow:
		return nil, fmt.Errorf("transport: hpcc initial window %g packets: want ≥ %g", cfg.Init, MinWindow)
	case cfg.Eta <= 0 || cfg.Eta > 1:
		return nil, fmt.Errorf("transport: hpcc η %g: want (0, 1]", cfg.Eta)
	case cfg.MaxStage < 0:
		return nil, fmt.Errorf("transport: hpcc max stage %d: want ≥ 0", cfg.MaxStage)
	case cfg.AI <= 0:
		return nil, fmt.Errorf("transport: hpcc W_AI %g packets: want > 0", cfg.AI)
	case cfg.Max < cfg.Init:
		return nil, fmt.Errorf("transport: hpcc max window %g packets: want ≥ the initial %g", cfg.Max, cfg.Init)
	}
	return &HPCC{cfg: cfg, w: cfg.Init, wc: cfg.Init}, nil
}

// Config returns the flow's parameters, defaults filled in.
func (h *HPCC) Config() HPCCConfig { return h.cfg }

// Window returns W, packets.
func (h *HPCC) Window() float64 { return h.w }

// Reference returns W^c, packets.
func (h *HPCC) Reference() float64 { return h.wc }

// U returns the utilisation estimate U.
func (h *HPCC) U() float64 { return h.u }

// Stage returns incStage.
func (h *HPCC) Stage() int { return h.incStage }

// Reductions returns how many reference updates lowered W^c; HPCC never
// reacts to loss.
func (h *HPCC) Reductions() (congestion, loss uint64) { return h.cuts, 0 }

// Updates returns how many reference updates (once per round trip) there
// were.
func (h *HPCC) Updates() uint64 { return h.updates }

// PaceRate returns HPCC's rate R = W/T in bit/s, for packets of size
// bytes on the wire.
func (h *HPCC) PaceRate(size int) int64 {
	return int64(h.w * float64(size) * 8e9 / float64(h.cfg.BaseRTT))
}

// OnAck runs NewAck (Algorithm 1) for one ACK: a.Hops are the records of
// the packet it acknowledges, first hop first.
func (h *HPCC) OnAck(a Ack) {
	n := len(a.Hops)
	if n == 0 || n > HPCCMaxHops {
		return
	}
	if h.hops != n {
		h.hops = n
		copy(h.prev[:], a.Hops)
		h.last = a.Next
		return
	}
	if !h.measure(a.Hops) {
		copy(h.prev[:], a.Hops)
		return
	}
	if a.Seq >= h.last {
		h.w = h.window(true)
		h.last = a.Next
	} else {
		h.w = h.window(false)
	}
	copy(h.prev[:], a.Hops)
}

// measure is MeasureInflight: U from the records of hops against the
// previous ones. A hop whose clock has not moved, or whose counters went
// back, says nothing; it reports false when none did, and U stays.
func (h *HPCC) measure(hops []Hop) bool {
	t := float64(h.cfg.BaseRTT)
	var u float64
	var tau int64
	found := false
	for i, x := range hops {
		p := &h.prev[i]
		dt := x.TS - p.TS
		if dt <= 0 || x.Rate <= 0 || x.TxBytes < p.TxBytes {
			continue
		}
		b := float64(x.Rate)
		rate := float64(x.TxBytes-p.TxBytes) * 8e9 / float64(dt)
		ui := float64(min(x.QLen, p.QLen))*8e9/(b*t) + rate/b
		if !found || ui > u {
			u, tau, found = ui, dt, true
		}
	}
	if !found {
		return false
	}
	f := float64(min(tau, h.cfg.BaseRTT)) / t
	h.u = (1-f)*h.u + f*u
	return true
}

// window is ComputeWind: W from U and W^c, and with update W^c and
// incStage too.
func (h *HPCC) window(update bool) float64 {
	c := h.cfg
	var w float64
	mi := h.u >= c.Eta || h.incStage >= c.MaxStage
	if mi {
		w = h.wc/(h.u/c.Eta) + c.AI
	} else {
		w = h.wc + c.AI
	}
	w = min(max(w, MinWindow), c.Max) // U = 0 gives +Inf: the largest window
	if update {
		if w < h.wc {
			h.cuts++
		}
		h.updates++
		h.wc = w
		if mi {
			h.incStage = 0
		} else {
			h.incStage++
		}
	}
	return w
}
