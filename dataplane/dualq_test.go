package dataplane_test

import (
	"context"
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/internal/race"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// dualqConfig is hosts 0 and 1 patched to port 2, a DualQ port shaped
// at rate over a pool of pool bytes.
func dualqConfig(rate, pool int64) dataplane.Config {
	cfg := dataplanetest.Config(3, 1, rate, pool)
	cfg.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 2}, {From: 1, To: 2}}
	cfg.Forwarding.NoLearning = true
	p := &cfg.Ports[2]
	p.Scheduler = scheduler.Config{Kind: scheduler.DualQ, LineRate: rate}
	p.Queues = []buffer.QueueConfig{{Alpha: 1}, {Alpha: 1}}
	for i := range cfg.Ports {
		cfg.Ports[i].Coalesce = -1 // virtual time: each packet leaves at its departure
	}
	return cfg
}

// A DualQ port classifies by ECN — ECT(1) and CE to the L4S queue, Not-ECT
// and ECT(0) to the Classic queue — whatever the switch's DSCP classifier
// says; any_ect takes ECT(0) to L4S too, and a DSCP override wins.
func TestDualQClassifies(t *testing.T) {
	for _, c := range []struct {
		name  string
		mask  marking.ECNMask
		dscp  map[uint8]int
		wantL int // of the eight packets below
	}{
		{"l4s_ect", marking.ECNMaskL4S, nil, 4},                     // ECT(1), CE, each at DSCP 0 and 45
		{"any_ect", marking.ECNMaskAny, nil, 6},                     // and ECT(0)
		{"nqb to l4s", marking.ECNMaskL4S, map[uint8]int{45: 1}, 6}, // and Not-ECT, ECT(0) at 45
		{"ef to classic", marking.ECNMaskL4S, map[uint8]int{45: 0}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := dualqConfig(1e9, 1<<20)
			cfg.Classifier.DSCP = map[uint8]int{45: 0, 0: 0} // ignored by the DualQ port
			cfg.Ports[2].DualQ = dataplane.DualQ{ECNMask: c.mask, DSCP: c.dscp}
			r := dataplanetest.New(t, cfg, memport.Link{})
			for i, e := range []packet.ECN{packet.NotECT, packet.ECT0, packet.ECT1, packet.CE} {
				for _, dscp := range []uint8{0, 45} {
					r.Send(0, dataplanetest.Frame(t, 0, 2, packettest.Options{Size: 200, ECN: e, DSCP: dscp, SrcPort: uint16(i)}))
				}
			}
			r.Drain(1000)
			st := r.Switch.Stats().Ports[2]
			if l, cl := st.Queues[scheduler.DualQL4S].Enqueued, st.Queues[scheduler.DualQClassic].Enqueued; l != uint64(c.wantL) || cl != uint64(8-c.wantL) {
				t.Errorf("L4S queue took %d, Classic %d; want %d and %d", l, cl, c.wantL, 8-c.wantL)
			}
		})
	}
}

func TestDualQConfigErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(*dataplane.PortConfig)
	}{
		{"dualq on dwrr", func(p *dataplane.PortConfig) {
			p.Scheduler = scheduler.Config{Kind: scheduler.DWRR, NumQueues: 2}
			p.DualQ.AQM.Coupling = 3
		}},
		{"dscp to queue 2", func(p *dataplane.PortConfig) { p.DualQ.DSCP = map[uint8]int{3: 2} }},
		{"dscp 64", func(p *dataplane.PortConfig) { p.DualQ.DSCP = map[uint8]int{64: 1} }},
		{"bad aqm", func(p *dataplane.PortConfig) { p.DualQ.AQM.Coupling = 0.5 }},
		{"none mask", func(p *dataplane.PortConfig) { p.DualQ.ECNMask = marking.ECNMaskNone }},
	} {
		cfg := dualqConfig(1e9, 1<<20)
		c.mod(&cfg.Ports[2])
		if err := cfg.Validate(); err == nil {
			t.Errorf("%s: Validate accepted it", c.name)
		}
	}
	if err := dualqConfig(1e9, 1<<20).Validate(); err != nil {
		t.Errorf("a plain DualQ port: %v", err)
	}
}

// flowSim is a closed loop of window-based flows through a DualQ port in
// virtual time: scalable flows (ECT(1), cwnd − ½ per marked ACK, the
// response RFC 9332's k = 2 assumes) from host 0, Classic ones (ECT(0),
// Reno: cwnd halved on a mark or a loss, at most once per window) from
// host 1, all to host 2. The return path is modelled: every packet's ACK
// comes back ret ns after it reached host 2, echoing its CE bit.
type flowSim struct {
	r     *dataplanetest.Rig
	warm  dataplane.Stats // at the start of the measurement
	ret   int64
	flows []*simFlow
	acks  []simAck // in time order: one return delay for all
	tx    []*packet.Desc
	rx    []*packet.Desc
}

type simFlow struct {
	host     int
	scalable bool
	tmpl     []byte
	cwnd     float64
	next     uint64 // next sequence number to send
	acked    uint64 // ACKs received
	lost     uint64 // sequence numbers the receiver never saw
	expect   uint64 // the receiver's next expected sequence number
	recover  uint64 // Reno: no second reduction before this is ACKed
	bytes    int64  // delivered while measuring
	measured bool
}

type simAck struct {
	at   int64
	flow int
	seq  uint64
	ce   bool
	lost uint64
}

const simPayload = 42 // Ethernet + IPv4 + UDP: flow id and sequence number go here

func newFlowSim(t *testing.T, cfg dataplane.Config, fwd, ret int64, nl, nc int) *flowSim {
	s := &flowSim{r: dataplanetest.New(t, cfg, memport.Link{Rate: 10e9, Delay: fwd}), ret: ret}
	for i := range nl + nc {
		f := &simFlow{host: 0, scalable: true, cwnd: 10}
		e := packet.ECT1
		if i >= nl {
			f.host, f.scalable, e = 1, false, packet.ECT0
		}
		f.tmpl = dataplanetest.Frame(t, f.host, 2, packettest.Options{Size: 1514, ECN: e, SrcPort: uint16(1000 + i)})
		s.flows = append(s.flows, f)
	}
	for range 64 {
		s.tx = append(s.tx, &packet.Desc{Buf: make([]byte, 1514)})
		s.rx = append(s.rx, &packet.Desc{Buf: make([]byte, 2048)})
	}
	return s
}

// send lets flow i send what its window allows.
func (s *flowSim) send(i int) {
	f := s.flows[i]
	n := 0
	for float64(f.next-f.acked-f.lost+1) <= f.cwnd && n < len(s.tx) {
		d := s.tx[n]
		d.Len = copy(d.Buf, f.tmpl)
		binary.BigEndian.PutUint32(d.Buf[simPayload:], uint32(i))
		binary.BigEndian.PutUint64(d.Buf[simPayload+4:], f.next)
		f.next++
		n++
	}
	if n > 0 {
		s.r.Hosts[f.host].Transmit(s.tx[:n])
	}
}

// receive takes what reached host 2 and schedules the ACKs.
func (s *flowSim) receive() {
	for {
		n, _ := s.r.Hosts[2].Receive(s.rx)
		for _, d := range s.rx[:n] {
			b := d.Frame()
			i := int(binary.BigEndian.Uint32(b[simPayload:]))
			seq := binary.BigEndian.Uint64(b[simPayload+4:])
			f := s.flows[i]
			var lost uint64
			if seq > f.expect {
				lost = seq - f.expect
			}
			f.expect = max(f.expect, seq+1)
			if f.measured {
				f.bytes += int64(d.Len)
			}
			s.acks = append(s.acks, simAck{at: d.RxTime + s.ret, flow: i, seq: seq, ce: b[15]&3 == 3, lost: lost})
		}
		if n < len(s.rx) {
			return
		}
	}
}

// ack hands the ACKs due by now to their flows.
func (s *flowSim) ack(now int64) {
	k := 0
	for ; k < len(s.acks) && s.acks[k].at <= now; k++ {
		a := s.acks[k]
		f := s.flows[a.flow]
		f.acked++
		f.lost += a.lost
		switch {
		case f.scalable && a.ce:
			f.cwnd -= 0.5
		case !f.scalable && (a.ce || a.lost > 0) && a.seq >= f.recover:
			f.cwnd /= 2
			f.recover = f.next
		default:
			f.cwnd += 1 / f.cwnd
		}
		f.cwnd = max(f.cwnd, 2)
		s.send(a.flow)
	}
	s.acks = s.acks[:copy(s.acks, s.acks[k:])]
}

// run runs the loop until end, measuring delivered bytes from warm on.
func (s *flowSim) run(warm, end int64) {
	r := s.r
	for i := range s.flows {
		s.send(i)
	}
	for now := int64(0); now < end; {
		if now >= warm && !s.flows[0].measured {
			for _, f := range s.flows {
				f.measured = true
			}
			r.Switch.ResetSojourn()
			s.warm = r.Switch.Stats()
		}
		s.ack(now)
		r.Switch.Poll()
		s.receive()
		next := min(end, r.Switch.NextEvent())
		if now < warm {
			next = min(next, warm)
		}
		if len(s.acks) > 0 {
			next = min(next, s.acks[0].at)
		}
		for _, p := range append(r.Ports[:2:2], r.Hosts[2]) {
			if at, ok := p.NextArrival(); ok {
				next = min(next, at)
			}
		}
		now = max(next, now+1)
		r.Clock.Set(now)
	}
}

// The DualQ Coupled AQM in closed loop (RFC 9332 §2.4): one scalable and
// one Classic flow, and then four of each, over a 100 Mbit/s DualQ port
// with a 10 ms base RTT and tc-dualpi2's defaults. The L4S queue's delay
// stays near the 1 ms step while the Classic queue holds about PI2's
// 15 ms target; the L4S marking is the coupled k·p′ = k·√p_C; and the
// flows of both classes get rates of the same order (k = 2 is chosen for
// that, RFC 9332 Appendix C.2).
func TestDualQClosedLoop(t *testing.T) {
	if race.Enabled {
		t.Skip("one goroutine in virtual time: the race detector adds a minute and nothing to check")
	}
	for _, c := range []struct {
		n         int
		warm, end int64
		coupling  bool // enough Classic marks to measure p_C: 4+4 flows mark ~700 in 25 s
	}{
		{1, 3e9, 13e9, false},
		{4, 3e9, 28e9, true},
	} {

		const rate, base = 100_000_000, 10_000_000
		n := c.n
		cfg := dualqConfig(rate, 4<<20)
		s := newFlowSim(t, cfg, 250_000, base-500_000, n, n)
		s.run(c.warm, c.end)
		p, p0 := s.r.Switch.Stats().Ports[2], s.warm.Ports[2]
		lq, cq := p.Queues[scheduler.DualQL4S], p.Queues[scheduler.DualQClassic]
		lq0, cq0 := p0.Queues[scheduler.DualQL4S], p0.Queues[scheduler.DualQClassic]

		util := float64(lq.DequeueBytes+cq.DequeueBytes-lq0.DequeueBytes-cq0.DequeueBytes) * 8 / (float64(c.end-c.warm) / 1e9) / rate
		ln, cn := float64(lq.Dequeued-lq0.Dequeued), float64(cq.Dequeued-cq0.Dequeued)
		pL := float64(lq.MarkedDeq-lq0.MarkedDeq) / ln
		pC := float64(cq.MarkedDeq-cq0.MarkedDeq) / cn
		pCL := float64(p.DualQ.CoupledMarks-p0.DualQ.CoupledMarks) / ln
		var bl, bc int64
		for _, f := range s.flows {
			if f.scalable {
				bl += f.bytes
			} else {
				bc += f.bytes
			}
		}
		// Rates differ by the queues' delays; windows (rate × RTT) are
		// what k = 2 balances: W_L = 2/p_L = 1/p′ for the scalable flows,
		// W_C = √(3/2)/√p_C ≈ 1.22/p′ for Reno (RFC 9332 Appendix C.2,
		// equations (5)–(7): k* = 1.64 equalizes them, "if their actual
		// end-to-end RTTs were the same"), a ratio of 1.64/k = 0.82.
		rates := float64(bl) / float64(bc)
		windows := rates * float64(base+lq.Sojourn.Mean) / float64(base+cq.Sojourn.Mean)
		t.Logf("%d+%d flows: utilisation %.3f; L4S sojourn %+v; Classic %+v; p_L %.4f (coupled %.4f), p_C %.5f, k·√p_C %.4f; per flow, rates L/C %.2f, windows %.2f; %+v",
			n, n, util, lq.Sojourn, cq.Sojourn, pL, pCL, pC, 2*math.Sqrt(pC), rates, windows, *p.DualQ)

		if util < 0.95 {
			t.Errorf("%d+%d flows: utilisation %.3f, want ≥ 0.95", n, n, util)
		}
		if lq.Sojourn.P50 > 1_000_000 || lq.Sojourn.Mean > 1_000_000 || lq.Sojourn.P99 > 2_000_000 {
			t.Errorf("%d+%d flows: L4S sojourn %+v, want median and mean within the 1 ms step, p99 within 2 ms", n, n, lq.Sojourn)
		}
		if cq.Sojourn.Mean < 10_000_000 || cq.Sojourn.Mean > 20_000_000 || cq.Sojourn.Mean < 10*lq.Sojourn.Mean {
			t.Errorf("%d+%d flows: Classic sojourn %+v, want a mean near the 15 ms target, 10× the L4S queue's", n, n, cq.Sojourn)
		}
		if pL < pCL || pL > 1.05*pCL {
			t.Errorf("%d+%d flows: p_L %.4f, coupled %.4f: want the L4S marks to be the coupled ones, the step idle", n, n, pL, pCL)
		}
		if want := 2 * math.Sqrt(pC); c.coupling && math.Abs(pCL-want) > 0.15*want {
			t.Errorf("%d+%d flows: p_L %.4f, want k·√p_C = %.4f within 15%%", n, n, pCL, want)
		}
		if windows < 0.5 || windows > 1.25 {
			t.Errorf("%d+%d flows: per-flow window of L4S over Classic %.2f, want about 0.8, within [0.5, 1.25]", n, n, windows)
		}
		if d := p.Drops; len(d) != 0 || p.DualQ.Overloads != 0 {
			t.Errorf("%d+%d flows: drops %v, %d overloads; want none", n, n, d, p.DualQ.Overloads)
		}
		if a := s.r.Switch.Account(); !a.Balanced() {
			t.Errorf("accounting %+v", a)
		}
	}
}

// cbr sends one frame of each of frames every interval ns for d ns, an
// open loop that does not slow down for marks, and runs the switch.
func cbr(r *dataplanetest.Rig, d, interval int64, hosts []int, frames [][]byte) {
	ds := make([]*packet.Desc, len(frames))
	for i, f := range frames {
		ds[i] = &packet.Desc{Buf: make([]byte, len(f))}
	}
	rx := make([]*packet.Desc, 64)
	for i := range rx {
		rx[i] = &packet.Desc{Buf: make([]byte, 2048)}
	}
	now := r.Clock.Now()
	for send, end := now, now+d; now < end; {
		if now >= send {
			for i, f := range frames {
				ds[i].Len = copy(ds[i].Buf, f)
				r.Hosts[hosts[i]].Transmit(ds[i : i+1])
			}
			send += interval
		}
		r.Switch.Poll()
		for n := len(rx); n == len(rx); {
			n, _ = r.Hosts[2].Receive(rx)
		}
		next := min(end, send, r.Switch.NextEvent())
		for _, p := range r.Ports {
			if at, ok := p.NextArrival(); ok {
				next = min(next, at)
			}
		}
		now = max(next, now+1)
		r.Clock.Set(now)
	}
}

// On overload (RFC 9332 §4.2.3, Appendix A.2) — unresponsive L4S and
// Classic traffic of 8 Mbit/s each into a 10 Mbit/s DualQ port — p′
// climbs until k·p′ ≥ 1 and both queues drop with p_C: the AQM enters
// overload, counts it, and
// drops in both queues hold the Classic delay near its target instead of
// letting the buffer fill. With overflow instead, p′ stops at 1/k, the AQM
// drops nothing and the buffer's tail drop decides, at a far longer delay.
func TestDualQOverload(t *testing.T) {
	const rate = 10_000_000
	frames := [][]byte{
		dataplanetest.Frame(t, 0, 2, packettest.Options{Size: 1514, ECN: packet.ECT1}),
		dataplanetest.Frame(t, 1, 2, packettest.Options{Size: 1514, ECN: packet.ECT0}),
	}
	for _, overflow := range []bool{false, true} {
		cfg := dualqConfig(rate, 600_000)
		cfg.Ports[2].DualQ.AQM.Overflow = overflow
		r := dataplanetest.New(t, cfg, memport.Link{Rate: 10e9})
		cbr(r, 5e9, 1_514_000, []int{0, 1}, frames) // 8 Mbit/s each
		r.Switch.ResetSojourn()
		cbr(r, 5e9, 1_514_000, []int{0, 1}, frames)
		p := r.Switch.Stats().Ports[2]
		lq, cq := p.Queues[scheduler.DualQL4S], p.Queues[scheduler.DualQClassic]
		t.Logf("overflow %v: %+v; L4S %+v drops %v; Classic %+v drops %v", overflow, *p.DualQ, lq.Sojourn, lq.Drops, cq.Sojourn, cq.Drops)
		if !overflow {
			if p.DualQ.Overloads == 0 || lq.Drops["marker"] == 0 || cq.Drops["marker"] == 0 || p.DualQ.OverloadDrops != lq.Drops["marker"]+cq.Drops["marker"] {
				t.Errorf("drop on overload: %d overloads, AQM drops L4S %d, Classic %d, overload member %d; want overload drops in both queues, all by the overload member",
					p.DualQ.Overloads, lq.Drops["marker"], cq.Drops["marker"], p.DualQ.OverloadDrops)
			}
			if n := cq.Drops["dynamic_threshold"] + cq.Drops["pool_full"] + lq.Drops["dynamic_threshold"] + lq.Drops["pool_full"]; n != 0 || cq.Sojourn.Mean > 40_000_000 {
				t.Errorf("drop on overload: %d buffer drops, Classic sojourn %+v; want none, and a delay near the 15 ms target", n, cq.Sojourn)
			}
			continue
		}
		if p.DualQ.Overloads != 0 || p.DualQ.Prob != 0.5 || lq.Drops["marker"]+cq.Drops["marker"] != 0 || cq.Drops["dynamic_threshold"]+cq.Drops["pool_full"] == 0 {
			t.Errorf("overflow: %+v, AQM drops %d, buffer drops %v; want p′ at 1/k, no AQM drop, tail drops", *p.DualQ, lq.Drops["marker"]+cq.Drops["marker"], cq.Drops)
		}
		if cq.Sojourn.Mean < 100_000_000 {
			t.Errorf("overflow: Classic sojourn %+v; want the buffer's delay, far above the target", cq.Sojourn)
		}
	}
}

// Unresponsive L4S traffic alone — 12 Mbit/s of ECT(1) into a 10 Mbit/s
// DualQ port, no Classic packet — still drives the AQM into overload: its
// PI controller runs on the larger of the two queues' delays (RFC 9332
// Appendix A.2, Figure 8 line 2a), so the L4S queue's own delay raises p′
// until the L4S packets are dropped with p_C, and the buffer never fills.
func TestDualQOverloadWithoutClassic(t *testing.T) {
	const rate = 10_000_000
	frames := [][]byte{dataplanetest.Frame(t, 0, 2, packettest.Options{Size: 1514, ECN: packet.ECT1})}
	r := dataplanetest.New(t, dualqConfig(rate, 600_000), memport.Link{Rate: 10e9})
	cbr(r, 5e9, 1_009_333, []int{0}, frames) // 12 Mbit/s
	r.Switch.ResetSojourn()
	cbr(r, 5e9, 1_009_333, []int{0}, frames)
	p := r.Switch.Stats().Ports[2]
	lq := p.Queues[scheduler.DualQL4S]
	t.Logf("%+v; L4S %+v drops %v", *p.DualQ, lq.Sojourn, lq.Drops)
	if p.DualQ.Overloads == 0 || lq.Drops["marker"] == 0 || p.DualQ.OverloadDrops != lq.Drops["marker"] {
		t.Errorf("%d overloads, L4S AQM drops %d, overload member %d; want the L4S queue's overload to drop by itself",
			p.DualQ.Overloads, lq.Drops["marker"], p.DualQ.OverloadDrops)
	}
	if n := lq.Drops["dynamic_threshold"] + lq.Drops["pool_full"]; n != 0 || lq.Sojourn.Mean > 40_000_000 {
		t.Errorf("%d buffer drops, L4S sojourn %+v; want none, and a delay held near the 15 ms target", n, lq.Sojourn)
	}
}

// A DualQ port's AQM heads its dequeue chain whatever other markers it
// gets, at start or later (SetMarkers), and its counters carry over.
func TestDualQKeepsItsAQM(t *testing.T) {
	cfg := dualqConfig(1e9, 1<<20)
	tcn := dataplane.MarkerSpec{Name: "tcn", New: func(q int) (marking.Marker, error) {
		return marking.NewTCN(marking.TCNConfig{Threshold: 1e6}, marking.Dequeue, q)
	}}
	cfg.Ports[2].Dequeue = []dataplane.MarkerSpec{tcn}
	r := dataplanetest.New(t, cfg, memport.Link{})
	names := func() []string {
		var ns []string
		for _, m := range r.Switch.Stats().Ports[2].Markers {
			ns = append(ns, m.Name)
		}
		return ns
	}
	aqm := []string{marking.DualPI2Step, marking.DualPI2Coupled, marking.DualPI2Classic, marking.DualPI2Overload}
	if got := names(); !slices.Equal(got, append(aqm, "tcn")) {
		t.Errorf("dequeue chain %v, want the AQM's members then tcn", got)
	}
	if err := r.Switch.SetMarkers(context.Background(), 2, marking.Dequeue, nil); err != nil {
		t.Fatal(err)
	}
	if got := names(); !slices.Equal(got, aqm) {
		t.Errorf("after removing the markers: %v, want the AQM's members", got)
	}
	st := r.Switch.Stats()
	if st.Ports[2].DualQ == nil || st.Ports[0].DualQ != nil {
		t.Errorf("DualQ stats: port c %v, port a %v; want them on the DualQ port only", st.Ports[2].DualQ, st.Ports[0].DualQ)
	}
}
