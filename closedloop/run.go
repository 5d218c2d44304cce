package closedloop

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// Result is what one scenario measured after its warm-up.
type Result struct {
	// Scenario is the scenario with its defaults filled in.
	Scenario Scenario
	// Marking describes the bottleneck's thresholds.
	Marking string
	// K is the standard threshold λ·C·RTT in bytes.
	K int64

	// Share[q] is queue q's delivered frame bytes as a fraction of C·Duration.
	Share []float64
	// Throughput is the sum of Share: the bottleneck's utilization.
	Throughput float64
	// QueueMean[q] and QueueP99[q] are queue q's occupancy in bytes, sampled
	// every 10 µs.
	QueueMean, QueueP99 []float64
	// PortMean and PortP99 are the bottleneck port's occupancy in bytes;
	// PortMedian and PortMax its median (lower) and largest sample.
	PortMean, PortP99   float64
	PortMedian, PortMax float64
	// PortSamples are the port's occupancy samples, in bytes, every
	// DefaultSample of the measurement, in time order.
	PortSamples []int64
	// DXQueueMean is the mean queueing delay DX flows measured from their
	// one-way delays (timestamp.Delay) over every ACK; 0 for other CCs.
	DXQueueMean time.Duration
	// DXErrors are, per acknowledged packet, the queueing delay its DX
	// flow measured minus the bottleneck's own sojourn time for it
	// (matched by flow and sequence through a tap), in ns.
	DXErrors []int64
	// RTTMean and RTTP99 are over every ACK: send to ACK arrival.
	RTTMean, RTTP99 time.Duration

	// Marks[q] counts CE marks the switch set in queue q.
	Marks []uint64
	// Drops counts packets the switch dropped at the bottleneck while measuring.
	Drops uint64
	// Losses counts the flows' loss events (window halvings on a gap) while measuring.
	Losses uint64
	// Reductions counts the flows' window reductions on marks while measuring.
	Reductions uint64
	// Refused counts frames a sender's host link refused for a full ring
	// (lost before the switch); 0 unless windows outgrow the link's 4096
	// frames in flight.
	Refused uint64
}

// ack is an ACK in flight back to its sender.
type ack struct {
	at   int64  // ns: arrival at the sender
	n    uint64 // order of creation: ACKs due at the same time arrive in it
	flow int
	seq  uint64
	sent int64
	t2   int64 // the data's arrival on the receiver's clock (DX)
	lost uint64
	ce   bool
}

// ackHeap holds the ACKs in flight, a binary min-heap by (at, n). With one
// return delay for every flow it pops in creation order, a FIFO; with RTT
// variation a later ACK may be due first.
type ackHeap []ack

func (h ackHeap) less(i, j int) bool {
	return h[i].at < h[j].at || (h[i].at == h[j].at && h[i].n < h[j].n)
}

func (h *ackHeap) push(a ack) {
	*h = append(*h, a)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *ackHeap) pop() ack {
	q := *h
	a := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q = q[:n]
	for i := 0; ; {
		m := 2*i + 1
		if m >= n {
			break
		}
		if r := m + 1; r < n && q.less(r, m) {
			m = r
		}
		if !q.less(m, i) {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
	return a
}

// sim is one running scenario.
type sim struct {
	sc    Scenario
	clk   *timestamp.Virtual
	sw    *dataplane.Switch
	swDev []*memport.Port // switch ends of the links, to peek at arrivals
	hosts []*memport.Port // hosts[q]: queue q's sender; hosts[len-1]: the receiver
	bott  int             // the bottleneck port's index

	flows  []*flow
	tmpl   []template
	expect []uint64 // receiver: next sequence expected, per flow
	acks   ackHeap  // in flight back to the senders
	nacks  uint64   // ACKs made so far

	back []int64 // ns: each flow's modelled return path
	tx   []*packet.Desc
	rx   []*packet.Desc

	sojourns map[flowSeq]int64 // DX: the bottleneck's sojourn of each packet, by flow and sequence, until its ACK
	dxErr    []int64           // DX: measured queueing delay − the switch's sojourn, per packet, while measuring

	measuring          bool
	bytes              []int64 // per queue, delivered during the measurement
	qsamples           [][]int64
	psamples           []int64
	rtts               []int64
	losses, reductions uint64
	refused            uint64 // frames a host link refused
}

// Run builds the switch for sc, runs its flows for the warm-up and the
// measured duration in virtual time, and returns what it measured.
func Run(sc Scenario) (Result, error) {
	sc, err := sc.withDefaults()
	if err != nil {
		return Result{}, err
	}
	s, err := newSim(sc)
	if err != nil {
		return Result{}, err
	}
	defer s.sw.Close()
	return s.run(), nil
}

func newSim(sc Scenario) (*sim, error) {
	nq := sc.Queues
	s := &sim{sc: sc, clk: timestamp.NewVirtual(0), bott: nq}
	fwd := int64(sc.RTT) / 4
	for _, rtt := range sc.FlowRTTs() {
		s.back = append(s.back, int64(rtt)-2*fwd)
	}

	// Ports 0..nq-1 face the senders (one host per queue), port nq the
	// receiver; each sender port is patched to the receiver's.
	cfg := dataplane.Config{
		Pools:      []buffer.PoolConfig{{Size: sc.Buffer}},
		Forwarding: dataplane.Forwarding{NoLearning: true},
		Frames:     arenaFrames,
	}
	for i := 0; i < nq; i++ {
		cfg.Ports = append(cfg.Ports, dataplane.PortConfig{
			Name:      fmt.Sprintf("s%d", i),
			Scheduler: scheduler.Config{Kind: scheduler.DWRR, NumQueues: 1},
			Queues:    []buffer.QueueConfig{{Cap: sc.Buffer}},
			Worker:    -1,
			Coalesce:  -1, // virtual time: every packet goes to its wire at its departure
		})
		cfg.Forwarding.Patches = append(cfg.Forwarding.Patches, dataplane.Patch{From: i, To: nq})
	}
	qs := make([]buffer.QueueConfig, nq)
	for i := range qs {
		qs[i] = buffer.QueueConfig{Cap: sc.Buffer}
	}
	enq, deq, _ := sc.markers()
	cfg.Ports = append(cfg.Ports, dataplane.PortConfig{
		Name: "recv",
		Scheduler: scheduler.Config{
			Kind: scheduler.DWRR, NumQueues: nq, MTU: frameLen, LineRate: sc.Rate,
		},
		Shaper:   scheduler.ShaperConfig{Rate: sc.Rate, Bucket: shaperBucket},
		Queues:   qs,
		Enqueue:  enq,
		Dequeue:  deq,
		Worker:   -1,
		Coalesce: -1,
	})

	devs := make([]ports.Port, nq+1)
	for i := 0; i <= nq; i++ {
		sw, host, err := memport.Pair(cfg.Ports[i].Name, "host", s.clk, memport.Link{Rate: hostRate, Delay: fwd})
		if err != nil {
			return nil, err
		}
		devs[i] = sw
		s.swDev = append(s.swDev, sw)
		s.hosts = append(s.hosts, host)
	}
	sw, err := dataplane.New(cfg, devs, s.clk, nil)
	if err != nil {
		return nil, fmt.Errorf("closedloop: %w", err)
	}
	s.sw = sw
	if sc.CC == DX {
		s.sojourns = map[flowSeq]int64{}
		if err := sw.AddTap(nq, &sojournTap{s.sojourns}); err != nil {
			return nil, fmt.Errorf("closedloop: %w", err)
		}
	}

	id := 0
	for q, n := range sc.Flows {
		for j := 0; j < n; j++ {
			s.flows = append(s.flows, newFlow(id, q, q, sc.CC, int64(id)*int64(flowStagger), int64(sc.Headroom)))
			s.tmpl = append(s.tmpl, newTemplate(id, q, q))
			id++
		}
	}
	s.expect = make([]uint64, len(s.flows))
	for i := 0; i < ports.BatchSize; i++ {
		s.tx = append(s.tx, &packet.Desc{Buf: make([]byte, frameLen)})
		s.rx = append(s.rx, &packet.Desc{Buf: make([]byte, 2048)})
	}
	s.bytes = make([]int64, nq)
	s.qsamples = make([][]int64, nq)
	return s, nil
}

// run is the event loop.
func (s *sim) run() Result {
	sc := s.sc
	warm := int64(sc.Warmup)
	end := warm + int64(sc.Duration)
	step := int64(sc.Step)
	period := int64(DefaultSample)
	nextSample := warm
	var marks0 []uint64
	var drops0 uint64

	for now := int64(0); ; {
		if !s.measuring && now >= warm {
			s.measuring = true
			marks0, drops0 = s.marks(), s.drops()
			s.losses, s.reductions = 0, 0
		}
		s.deliverAcks(now)
		s.startFlows(now)
		s.sw.Poll()
		s.receive(now)
		if now >= nextSample && s.measuring {
			s.sample()
			nextSample += period
		}
		if now >= end {
			break
		}

		next := end
		if s.measuring {
			next = min(next, nextSample)
		} else {
			next = min(next, warm)
		}
		if len(s.acks) > 0 {
			next = min(next, s.acks[0].at)
		}
		for _, f := range s.flows {
			if f.next == 0 && f.start > now {
				next = min(next, f.start)
			}
		}
		for _, d := range s.swDev {
			if t, ok := d.NextArrival(); ok {
				next = min(next, t)
			}
		}
		if t, ok := s.hosts[s.bott].NextArrival(); ok {
			next = min(next, t)
		}
		if s.sw.Account().Held > 0 {
			next = min(next, now+step)
		}
		next = min(next, s.sw.NextEvent()) // departures at their exact instants
		now = max(next, now+1)
		s.clk.Set(now)
	}
	return s.result(marks0, drops0)
}

// startFlows lets flows whose start time has come send their first window.
func (s *sim) startFlows(now int64) {
	for _, f := range s.flows {
		if f.next == 0 && f.start <= now {
			s.send(f, now)
		}
	}
}

// send transmits as many packets of f as its window allows.
func (s *sim) send(f *flow, now int64) {
	n := 0
	for f.canSend() && n < len(s.tx) {
		d := s.tx[n]
		d.Len = s.tmpl[f.id].put(d.Buf, f.id, f.sent(), now)
		n++
	}
	if n == 0 {
		return
	}
	// A 4096-frame link does not fill with these windows; if it did, the
	// packets it refused would be lost, counted, and seen as a gap.
	k, _ := s.hosts[f.host].Transmit(s.tx[:n])
	s.refused += uint64(n - k)
	if f.canSend() {
		s.send(f, now) // more than one batch of window
	}
}

// deliverAcks hands every ACK due by now to its flow and lets the flow send.
func (s *sim) deliverAcks(now int64) {
	for len(s.acks) > 0 && s.acks[0].at <= now {
		a := s.acks.pop()
		f := s.flows[a.flow]
		r0, l0 := f.reductions, f.lossEvents
		if f.dx != nil {
			q := f.onDXAck(a.seq, a.lost, a.sent, a.t2, now)
			k := flowSeq{a.flow, a.seq}
			sj, ok := s.sojourns[k]
			delete(s.sojourns, k)
			if s.measuring {
				f.dxQ = append(f.dxQ, q)
				if ok {
					s.dxErr = append(s.dxErr, q-sj)
				}
			}
		} else {
			f.onAck(a.seq, a.ce, a.lost)
		}
		if s.measuring {
			s.reductions += f.reductions - r0
			s.losses += f.lossEvents - l0
			s.rtts = append(s.rtts, now-a.sent)
		}
		s.send(f, now)
	}
}

// receive takes what reached the receiver, counts it and schedules ACKs.
func (s *sim) receive(now int64) {
	h := s.hosts[s.bott]
	for {
		n, _ := h.Receive(s.rx)
		for _, d := range s.rx[:n] {
			info, ok := readData(d.Frame())
			if !ok || info.flow >= len(s.flows) {
				continue
			}
			f := s.flows[info.flow]
			var lost uint64
			if info.seq > s.expect[info.flow] {
				lost = info.seq - s.expect[info.flow]
			}
			if info.seq >= s.expect[info.flow] {
				s.expect[info.flow] = info.seq + 1
			}
			if s.measuring {
				s.bytes[f.queue] += int64(d.Len)
			}
			s.acks.push(ack{
				at: d.RxTime + s.back[info.flow], n: s.nacks, flow: info.flow, seq: info.seq,
				sent: info.sent, t2: receiverClock(d.RxTime), lost: lost, ce: info.ce,
			})
			s.nacks++
		}
		if n < len(s.rx) {
			return
		}
	}
}

// flowSeq names one data packet.
type flowSeq struct {
	flow int
	seq  uint64
}

// sojournTap records the bottleneck's sojourn time of every data packet
// it sends, for DX's accuracy (Result.DXErrors).
type sojournTap struct{ m map[flowSeq]int64 }

func (t sojournTap) Record(ev *dataplane.Event) {
	if ev.Kind != dataplane.EventEgress {
		return
	}
	if info, ok := readData(ev.Frame); ok {
		t.m[flowSeq{info.flow, info.seq}] = ev.Sojourn
	}
}

// The receiver's clock, against which DX measures one-way delays: 3 s
// behind the senders' and gaining 40 ns/ms, a standard clock's drift
// (004 §III, "Handling clock drift"). DX's estimator must see through both.
const (
	receiverOffset = -3 * int64(time.Second)
	receiverDrift  = 40e-9 / 1e-3 // ns per ns
)

// receiverClock reads the receiver's clock at true time t.
func receiverClock(t int64) int64 {
	return t + receiverOffset + int64(float64(t)*receiverDrift)
}

// sample records the bottleneck's queue and port occupancy.
func (s *sim) sample() {
	m := s.sw.Buffer()
	for q := range s.qsamples {
		s.qsamples[q] = append(s.qsamples[q], m.QueueBytes(s.bott, q))
	}
	s.psamples = append(s.psamples, m.PortBytes(s.bott))
}

// marks returns the CE marks set so far in each bottleneck queue.
func (s *sim) marks() []uint64 {
	st := s.sw.Stats().Ports[s.bott]
	out := make([]uint64, len(st.Queues))
	for q, qs := range st.Queues {
		out[q] = qs.MarkedEnq + qs.MarkedDeq
	}
	return out
}

func (s *sim) result(marks0 []uint64, drops0 uint64) Result {
	sc := s.sc
	r := Result{Scenario: sc, K: sc.K(), Losses: s.losses, Reductions: s.reductions, Refused: s.refused}
	_, _, r.Marking = sc.markers()
	capacity := float64(sc.Rate) / 8 * sc.Duration.Seconds() // bytes
	for q := range s.bytes {
		sh := float64(s.bytes[q]) / capacity
		r.Share = append(r.Share, sh)
		r.Throughput += sh
		mean, p99 := stats(s.qsamples[q])
		r.QueueMean = append(r.QueueMean, mean)
		r.QueueP99 = append(r.QueueP99, p99)
	}
	r.PortSamples = slices.Clone(s.psamples)
	r.PortMean, r.PortP99 = stats(s.psamples)
	r.PortMedian, r.PortMax = float64(s.psamples[(len(s.psamples)-1)/2]), float64(s.psamples[len(s.psamples)-1])
	var dxQ []int64
	for _, f := range s.flows {
		dxQ = append(dxQ, f.dxQ...)
	}
	if len(dxQ) > 0 {
		m, _ := stats(dxQ)
		r.DXQueueMean = time.Duration(math.Round(m))
	}
	r.DXErrors = s.dxErr
	mean, p99 := stats(s.rtts)
	r.RTTMean, r.RTTP99 = time.Duration(math.Round(mean)), time.Duration(p99)
	for q, m := range s.marks() {
		r.Marks = append(r.Marks, m-marks0[q])
	}
	r.Drops = s.drops() - drops0
	return r
}

// drops returns the packets the switch dropped so far at the bottleneck.
func (s *sim) drops() uint64 {
	var n uint64
	for _, d := range s.sw.Stats().Ports[s.bott].Drops {
		n += d
	}
	return n
}

// stats returns the mean and the 99th percentile (nearest rank) of xs,
// sorting xs.
func stats(xs []int64) (mean, p99 float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	var sum float64
	for _, x := range xs {
		sum += float64(x)
	}
	slices.Sort(xs)
	i := int(math.Ceil(0.99*float64(len(xs)))) - 1
	return sum / float64(len(xs)), float64(xs[max(i, 0)])
}
