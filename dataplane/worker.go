package dataplane

import (
	"errors"
	"math"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/internal/spsc"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/ports"
)

// worker runs the pipeline for the ports it owns, to completion, like a
// DPDK lcore: receive a batch, parse, forward, classify, admit, mark,
// enqueue; run each egress port's virtual line (see advance) and hand what
// has left it to the device in batches. It owns its frame arena; frames of
// packets that cross to another worker come back through a return ring.
type worker struct {
	s     *Switch
	id    int
	ports []*port
	batch int
	spin  int
	cpu   int // CPU to pin the worker's thread to; -1 for none

	arena  []packet.Desc
	free   []*packet.Desc   // LIFO stack of unused arena slots
	spare  []*packet.Desc   // a batch of heap frames that receive what an empty arena cannot (refuse)
	rx     [][]*packet.Desc // receive scratch, one batch per owned port
	active []int            // sources with packets this pass
	taken  []int            // by source: packets of this pass's batch processed
	first  int              // rotates which source wins ties

	changes *spsc.Ring[*change] // changes of our ports, applied between passes

	in   []*spsc.Ring[*packet.Desc] // by source worker: packets for our ports
	inb  [][]*packet.Desc           // by source worker: this pass's batch from in
	out  []*spsc.Ring[*packet.Desc] // by destination worker
	ret  []*spsc.Ring[*packet.Desc] // by source worker: their frames to give back
	back []*spsc.Ring[*packet.Desc] // by destination worker: our frames coming home

	pollfds []unix.PollFd // every owned port's descriptors, when all have some
	pollTS  unix.Timespec

	view    marking.View // scratch, reused for every marker call
	event   Event        // scratch for taps
	touched byte         // receive's loads of each frame's first byte end here, so they stay

	carried atomic.Int64 // received packets kept for the next pass, published once per pass

	next int64 // a lower bound of the ports' next events (port.next); never once all are idle

	time workerTime // where the worker's thread spent its time
}

// workerTime splits a running worker's wall-clock time, in ns: passes
// that moved packets, passes that found nothing (spinning), and sleep.
type workerTime struct {
	busy, spin, sleep atomic.Int64
}

func newWorker(s *Switch, id int, cfg Config) (*worker, error) {
	w := &worker{
		s: s, id: id, batch: cfg.Batch, spin: cfg.Spin, cpu: -1, next: never, changes: newChangeRing(),
		arena: make([]packet.Desc, cfg.Frames),
		free:  make([]*packet.Desc, 0, cfg.Frames),
		in:    make([]*spsc.Ring[*packet.Desc], cfg.Workers),
		out:   make([]*spsc.Ring[*packet.Desc], cfg.Workers),
		ret:   make([]*spsc.Ring[*packet.Desc], cfg.Workers),
		back:  make([]*spsc.Ring[*packet.Desc], cfg.Workers),
	}
	if len(cfg.CPUs) > 0 {
		w.cpu = cfg.CPUs[id%len(cfg.CPUs)]
	}
	if cfg.Memory != nil {
		bufs, err := cfg.Memory.Frames(cfg.Frames)
		if err != nil {
			return nil, err
		}
		for i := range w.arena {
			w.arena[i].Buf = bufs[i]
		}
	} else {
		mem := make([]byte, cfg.Frames*cfg.FrameSize)
		for i := range w.arena {
			w.arena[i].Buf = mem[i*cfg.FrameSize : (i+1)*cfg.FrameSize : (i+1)*cfg.FrameSize]
		}
	}
	for i := range w.arena {
		w.free = append(w.free, &w.arena[i])
	}
	// Off the arena and off any UMEM: a device copies into them (afxdp
	// counts RxCopied) and keeps its own frames.
	mem := make([]byte, cfg.Batch*cfg.FrameSize)
	for i := range cfg.Batch {
		w.spare = append(w.spare, &packet.Desc{Buf: mem[i*cfg.FrameSize : (i+1)*cfg.FrameSize : (i+1)*cfg.FrameSize]})
	}
	return w, nil
}

// noPort16 marks a descriptor not yet forwarded.
const noPort16 = 0xffff

// never is the time of an event that is not scheduled.
const never = math.MaxInt64

// drop counts d as dropped by p for reason r, shows it to p's tap, and
// frees its frame.
func (w *worker) drop(p *port, d *packet.Desc, r DropReason, now int64) {
	p.c.drops[r].Add(1)
	if p.tap.Load() != nil {
		w.tapEvent(p, EventDrop, d, now, r, 0, -1)
	}
	w.release(d)
}

// markerDrop is drop for a packet a marker of chain c dropped.
func (w *worker) markerDrop(p *port, d *packet.Desc, c *chainStage, v *marking.View, r DropReason, now int64) {
	p.c.drops[r].Add(1)
	if p.tap.Load() != nil {
		d.MarkValue, d.MarkThreshold = v.Value, v.Threshold
		sojourn := int64(-1)
		if c.stage == marking.Dequeue {
			sojourn = now - d.EnqTime
		}
		w.tapEvent(p, EventDrop, d, now, r, p.markerIndex(c.stage, c.Decider()), sojourn)
	}
	w.release(d)
}

// noteMark records in d which member of chain c marked it and what it compared.
func (w *worker) noteMark(p *port, d *packet.Desc, c *chainStage, v *marking.View) {
	d.MarkedBy = p.markerIndex(c.stage, c.Decider())
	d.MarkValue, d.MarkThreshold = v.Value, v.Threshold
}

// release gives d's frame back to the worker whose arena holds it: the
// worker that received it on its ingress port.
func (w *worker) release(d *packet.Desc) {
	o := int(w.s.owner[d.InPort])
	if o == w.id {
		w.free = append(w.free, d)
		return
	}
	w.ret[o].Push(d) // sized to the owner's arena: cannot be full
}

// poll runs one pass at time now and returns the packets it received and
// handed to devices.
//
// A pass receives a batch from every source (the worker's ports, and a
// ring from each other worker) and processes the packets in the order
// they arrived (RxTime; sources with equal times take turns, one packet
// each, starting with a different source each pass, so that no port's
// packets find the buffer the others just filled by polling order alone).
// Before each arrival, every egress port runs its virtual line up to the
// arrival's time (advanceAll), so admission and the enqueue markers see
// the queues as they were at that instant. Then the lines run up to now,
// and each port hands the device what has left its line once the batch is
// due (flushDue).
func (w *worker) poll(now int64) int {
	w.applyChanges()
	for _, r := range w.back {
		if r == nil {
			continue
		}
		for d, ok := r.Pop(); ok; d, ok = r.Pop() {
			w.free = append(w.free, d)
		}
	}
	n := 0
	// A source whose batch came back full may hold more arrivals up to now:
	// the lines then run only up to its last arrival, and later arrivals of
	// other sources wait for the next pass, so that no arrival is overtaken
	// by a departure computed past it.
	horizon := now
	more := false // a source gave a full batch: more input is waiting
	for i, p := range w.ports {
		k, full := w.receive(p, i, now)
		n += k
		if full {
			horizon = min(horizon, w.rx[i][len(w.rx[i])-1].RxTime)
			more = true
		}
	}
	for j, r := range w.in {
		if r == nil {
			continue
		}
		b := w.inb[j]
		for len(b) < w.batch {
			d, ok := r.Pop()
			if !ok {
				break
			}
			b = append(b, d)
			n++
		}
		w.inb[j] = b
		if len(b) == w.batch {
			horizon = min(horizon, b[len(b)-1].RxTime)
			more = true
		}
	}
	w.first++
	w.ingressInOrder(now, horizon)
	n += w.advanceAll(horizon, horizon < now)
	carried := 0
	for i, p := range w.ports {
		if p.due(now, w.batch, more) {
			n += w.flush(p, now)
		} else if p.pender != nil && p.pender.Pending() {
			// Frames the device took but has not sent: push them on, or
			// they wait for the next batch (an ACK, say, that the flow
			// behind it waits for).
			_, err := p.dev.Transmit(nil)
			p.health(w.s, "transmit", &p.txErr, err)
		}
		p.held.Store(int64(len(p.staged) + p.delay.len()))
		carried += len(w.rx[i])
	}
	for _, b := range w.inb {
		carried += len(b)
	}
	w.carried.Store(int64(carried))
	return n
}

// ingressInOrder processes the sources' received packets in arrival order
// (see poll) up to horizon, and keeps the rest, in order, for the next pass.
func (w *worker) ingressInOrder(now, horizon int64) {
	np := len(w.ports)
	active := w.active[:0]
	for i := range w.ports {
		if len(w.rx[i]) > 0 {
			active = append(active, i)
		}
	}
	for j := range w.inb {
		if len(w.inb[j]) > 0 {
			active = append(active, np+j)
		}
	}
	w.active = active
	m := len(active)
	if m == 0 {
		return
	}
	if m == 1 && active[0] < np { // one port: its packets are in order already
		i, b := active[0], w.rx[active[0]]
		k := 0
		for ; k < len(b) && b[k].RxTime <= horizon; k++ {
			w.ingress(w.ports[i], b[k], now)
		}
		w.rx[i] = b[:copy(b, b[k:])]
		return
	}
	src := func(i int) []*packet.Desc {
		if i < np {
			return w.rx[i]
		}
		return w.inb[i-np]
	}
	taken := w.taken[:m]
	clear(taken)
	start := w.first % m
	for {
		best, bestT, bestK := -1, int64(0), 0
		for j := range m {
			a := (start + j) % m
			b, k := src(active[a]), taken[a]
			if k >= len(b) || b[k].RxTime > horizon {
				continue
			}
			if best < 0 || b[k].RxTime < bestT || b[k].RxTime == bestT && k < bestK {
				best, bestT, bestK = a, b[k].RxTime, k
			}
		}
		if best < 0 {
			break
		}
		i := active[best]
		taken[best]++
		if d := src(i)[bestK]; i < np {
			w.ingress(w.ports[i], d, now)
		} else {
			w.toEgress(w.s.ports[d.OutPort], d, now)
		}
	}
	for a, i := range active {
		if b := src(i); i < np {
			w.rx[i] = b[:copy(b, b[taken[a]:])]
		} else {
			w.inb[i-np] = b[:copy(b, b[taken[a]:])]
		}
	}
}

// receive adds a batch from p, the worker's i-th port, to what w.rx[i]
// still holds from the last pass, up to w.batch, and counts and taps it;
// the pipeline runs later. full reports whether p gave all that was asked
// for, so that more may be waiting.
func (w *worker) receive(p *port, i int, now int64) (n int, full bool) {
	have := len(w.rx[i])
	if have == w.batch {
		return 0, true // a batch waits: leave the rest in the device
	}
	k := min(w.batch-have, len(w.free))
	if k == 0 {
		return w.refuse(p, now), have > 0
	}
	// Receive into the free list's tail itself and take out only what
	// arrived: the holes the n received descriptors leave are filled from
	// the list's end, so an idle port (most ports, most passes) moves no
	// descriptor at all, and a busy one at most min(n, k−n).
	l := len(w.free)
	batch := w.free[l-k:]
	n, err := p.dev.Receive(batch)
	w.rx[i] = w.rx[i][:have+n]
	copy(w.rx[i][have:], batch[:n])
	m := min(n, k-n)
	copy(w.free[l-k:l-k+m], w.free[l-m:])
	w.free = w.free[:l-n]
	p.health(w.s, "receive", &p.rxErr, err)
	batch = w.rx[i][have:]
	var bytes, workerStamped uint64
	var touch byte
	tapped := p.tap.Load() != nil // a call per packet costs more than the check
	for _, d := range batch[:n] {
		bytes += uint64(d.Len)
		if len(d.Buf) > 0 {
			// Load each frame's first cache line now, all of the batch's
			// misses in flight together, rather than one at a time in
			// Parse: a device's frames were written by another CPU.
			touch += d.Buf[0]
		}
		d.InPort = uint16(p.idx)
		var byWorker bool
		if d.RxTime, byWorker = p.stamps.stamp(d.RxTime, now); byWorker {
			workerStamped++
		}
		d.OutPort = noPort16
		if tapped {
			w.tapEvent(p, EventIngress, d, d.RxTime, 0, 0, -1)
		}
	}
	w.touched += touch
	p.c.rxPackets.Add(uint64(n))
	p.c.rxBytes.Add(bytes)
	if workerStamped > 0 {
		p.c.rxStampedWorker.Add(workerStamped)
	}
	return n, n == k && have+n > 0
}

// refuse receives a batch from p into the spare frames and drops it with
// reason arena_empty: every arena frame is held (queued, delayed, in a
// ring), so the worker cannot keep what arrives, and frames left in the
// device would be lost there when its ring overflows, counted at best by
// the kernel. It returns how many it dropped.
func (w *worker) refuse(p *port, now int64) int {
	n, err := p.dev.Receive(w.spare)
	p.health(w.s, "receive", &p.rxErr, err)
	var bytes uint64
	for _, d := range w.spare[:n] {
		bytes += uint64(d.Len)
		d.InPort, d.OutPort = uint16(p.idx), noPort16
		d.RxTime, _ = p.stamps.stamp(d.RxTime, now)
		if p.tap.Load() != nil {
			w.tapEvent(p, EventIngress, d, d.RxTime, 0, 0, -1)
			w.tapEvent(p, EventDrop, d, d.RxTime, DropArenaEmpty, 0, -1)
		}
	}
	p.c.rxPackets.Add(uint64(n))
	p.c.rxBytes.Add(bytes)
	p.c.drops[DropArenaEmpty].Add(uint64(n))
	return n
}

// ingress parses, forwards and classifies one received packet.
func (w *worker) ingress(in *port, d *packet.Desc, now int64) {
	if err := packet.Parse(d); err != nil {
		w.drop(in, d, DropMalformed, now)
		return
	}
	switch out := w.s.fw.route(d, now); out {
	case noPort:
		w.drop(in, d, DropFiltered, now)
	case flood:
		w.flood(in, d, now)
	case stormed:
		w.drop(in, d, DropStorm, now)
	default:
		w.forward(in, d, out, now)
	}
}

// flood sends d out of every port but its ingress port, copying the frame
// for all but the last.
func (w *worker) flood(in *port, d *packet.Desc, now int64) {
	last := len(w.s.ports) - 1
	if last == in.idx {
		last--
	}
	if last < 0 {
		w.drop(in, d, DropFiltered, now)
		return
	}
	for i := 0; i < last; i++ {
		if i == in.idx {
			continue
		}
		in.c.flooded.Add(1)
		if len(w.free) == 0 {
			in.c.drops[DropNoFrame].Add(1)
			continue
		}
		c := w.free[len(w.free)-1]
		w.free = w.free[:len(w.free)-1]
		buf := c.Buf
		*c = *d
		c.Buf = buf
		copy(c.Buf, d.Frame())
		w.forward(in, c, i, now)
	}
	w.forward(in, d, last, now)
}

func (w *worker) forward(in *port, d *packet.Desc, out int, now int64) {
	p := w.s.ports[out]
	d.OutPort = uint16(out)
	if p.dualq != nil {
		d.Queue = p.dualq.queue(d)
	} else {
		d.Queue = w.s.cls.queue(d, p.nq)
	}
	if o := int(w.s.owner[out]); o != w.id {
		if !w.out[o].Push(d) {
			w.drop(in, d, DropCrossWorker, now)
		}
		return
	}
	w.toEgress(p, d, now)
}

// toEgress hands d to its egress port at its arrival time (RxTime, but
// never before the port's last event): through the delay line when the
// port emulates one, else straight to admission and the queue. First every
// port's virtual line runs up to that instant.
func (w *worker) toEgress(p *port, d *packet.Desc, now int64) {
	at := min(max(d.RxTime, p.now), now)
	w.advanceAll(at, true)
	if p.mtu > 0 && d.Len > p.mtu {
		w.drop(p, d, DropOversize, at) // the device would lose it and count it sent
		return
	}
	if p.delay != nil {
		if !p.delay.push(d, at) {
			w.drop(p, d, DropDelayFull, at)
		}
		w.reschedule(p)
		return
	}
	w.enqueue(p, d, at)
}

var bufferDrop = [buffer.NumReasons]DropReason{
	buffer.PoolFull:         DropPoolFull,
	buffer.DynamicThreshold: DropDynamicThreshold,
	buffer.StaticCap:        DropStaticCap,
	buffer.Marker:           DropEnqueueMarker,
}

// enqueue admits d to the buffer at time at, runs the enqueue markers and
// queues it. The markers see the occupancy the packet finds, read before
// admission.
func (w *worker) enqueue(p *port, d *packet.Desc, at int64) {
	q := int(d.Queue)
	mmu := w.s.mmu
	p.arrive(at)
	d.EnqTime = at
	var v *marking.View
	if p.enq.Chain != nil {
		v = w.fillView(p, d, at, q, &p.enq)
	}
	if r := mmu.Admit(p.idx, q, d.Len); r != buffer.Admitted {
		w.refused(p, d, bufferDrop[r], at, nil)
		return
	}
	d.Charged = uint32(d.Len)
	if v != nil {
		switch p.enq.Decide(v, d.ECN) {
		case marking.Drop:
			mmu.Release(p.idx, q, int(d.Charged))
			mmu.CountDrop(p.idx, q, buffer.Marker, d.Len)
			w.refused(p, d, DropEnqueueMarker, at, v)
			return
		case marking.Mark:
			if d.ECN.IsECT() && packet.SetCE(d) { // a packet that arrived CE was marked upstream
				p.qc[q].markedEnq.Add(1)
				w.noteMark(p, d, &p.enq, v)
			}
		}
	}
	w.queue(p, d, at)
}

// queue puts d, which the buffer admitted, on its egress queue at time at,
// and reports whether it did; else it dropped d (queue_full).
func (w *worker) queue(p *port, d *packet.Desc, at int64) bool {
	q := int(d.Queue)
	_, queued := p.sched.Len()
	if !p.sched.Enqueue(d, at) {
		w.s.mmu.Release(p.idx, q, int(d.Charged))
		w.drop(p, d, DropQueueFull, at)
		return false
	}
	p.qc[q].enqueued.Add(1)
	p.qc[q].enqBytes.Add(uint64(d.Len))
	if queued == 0 {
		// A departure is now due. With packets queued already it was due
		// before: every event before at has run, so the next departure is
		// no earlier than at, and the shaper gives the same time from at.
		w.reschedule(p)
	}
	return true
}

// refused disposes of d, which the buffer or an enqueue marker (then v is
// its view) refused at time at for reason r. A port with a Reshaper (a
// Trim) may turn d into a packet it can still carry, which goes to the
// queue the Reshaper names if the buffer admits it there, past the
// enqueue markers; else d is dropped, for the reshaped packet's own
// refusal if it had one. The refusing queue counts the trim.
func (w *worker) refused(p *port, d *packet.Desc, r DropReason, at int64, v *marking.View) {
	if p.reshape != nil {
		q0, from := int(d.Queue), d.Len
		if q, ok := p.reshape.Reshape(d, r); ok && q >= 0 && q < p.nq {
			c := &p.qc[q0]
			c.trimmed.Add(1)
			if p.tap.Load() != nil {
				w.tapTrim(p, d, r, at, from)
			}
			d.Queue = uint8(q)
			if a := w.s.mmu.Admit(p.idx, q, d.Len); a != buffer.Admitted {
				c.trimDropped.Add(1)
				w.drop(p, d, bufferDrop[a], at)
				return
			}
			d.Charged = uint32(d.Len)
			if !w.queue(p, d, at) {
				c.trimDropped.Add(1)
			}
			return
		}
	}
	if v != nil {
		w.markerDrop(p, d, &p.enq, v, r, at)
		return
	}
	w.drop(p, d, r, at)
}

// fillView loads the marker view for d in queue q of p. The queue and port
// backlogs come from the scheduler, whose plain counters this worker owns
// and which equal the buffer's (admitted, not yet dequeued) at both stages;
// the pool figures are the shared pool's, the occupancy the Dynamic
// Threshold and BCC compare (002 §IV-B). The pool's packet count is not
// tracked per packet and stays 0.
func (w *worker) fillView(p *port, d *packet.Desc, now int64, q int, c *chainStage) *marking.View {
	need := c.needs
	mmu := w.s.mmu
	qi := &p.qinfo[q]
	v := &w.view // field by field: a composite literal would clear it first
	v.Now, v.EnqTime, v.Len, v.ECN, v.Port, v.Queue = now, d.EnqTime, d.Len, d.ECN, p.idx, q
	v.PoolBytes, v.PoolPackets, v.PoolSize = mmu.PoolSharedBytes(p.pool), 0, mmu.PoolSize(p.pool)
	v.Quantum, v.Weight, v.WeightSum, v.Strict = qi.Quantum, qi.PortWeight, qi.PortWeightSum, qi.Strict
	v.LineRate = p.shaper.Rate()
	v.Value, v.Threshold = 0, 0
	v.QueueBytes, v.QueuePackets = p.sched.Backlog(q)
	// The costly fields, each a call into the scheduler, only for a chain
	// that reads them (marking.Needer): 8% of the pipeline's time when
	// only RED on the queue marks.
	v.RoundTime, v.BusyWeightSum = 0, 0
	v.PortBytes, v.PortPackets = 0, 0
	v.QueueEmptySince, v.PortEmptySince = 0, 0
	if need&marking.NeedRoundTime != 0 {
		v.RoundTime = p.sched.RoundTime(now)
	}
	if need&marking.NeedBusyWeight != 0 {
		v.BusyWeightSum = p.sched.BusyWeightSum()
	}
	if need&marking.NeedPort != 0 {
		v.PortBytes, v.PortPackets = p.sched.Len()
	}
	if need&marking.NeedEmptySince != 0 {
		v.QueueEmptySince, v.PortEmptySince = p.sched.EmptySince(q)
	}
	v.PeerQueue, v.PeerBytes, v.PeerPackets, v.PeerSojourn = -1, 0, 0, 0
	if c.peers != nil && c.peers[q] >= 0 {
		fillPeer(v, p, now, c.peers[q])
	}
	v.HeadSojourn = 0
	if need&marking.NeedHead != 0 {
		if at, ok := p.sched.Head(q); ok {
			v.HeadSojourn = now - at
		}
	}
	return v
}

// fillPeer loads the view's fields of queue pq, the one its chain reads
// beside the packet's (marking.Peerer).
func fillPeer(v *marking.View, p *port, now int64, pq int) {
	v.PeerQueue = pq
	v.PeerBytes, v.PeerPackets = p.sched.Backlog(pq)
	if at, ok := p.sched.Head(pq); ok {
		v.PeerSojourn = now - at
	}
}

// advanceAll runs the virtual lines of the worker's ports up to until, one
// event at a time in time order across ports (ties: lowest port first, a
// port's releases before its departures): through events at until when
// before is false, stopping short of them when true. It returns the
// packets handed to devices on the way (a batch that filled up).
func (w *worker) advanceAll(until int64, before bool) int {
	if w.next > until || before && w.next == until {
		return 0 // nothing due: w.next never exceeds a port's next event
	}
	n := 0
	for {
		var p *port
		t := int64(never)
		for _, q := range w.ports {
			if q.next < t {
				p, t = q, q.next
			}
		}
		if p == nil || t > until || before && t == until {
			w.next = t
			return n
		}
		n += w.step(p, t)
	}
}

// step runs p's event at t: the release of the first packet of its delay
// line, or a departure.
func (w *worker) step(p *port, t int64) int {
	if q, at, ok := p.delay.next(); ok && at == t {
		w.enqueue(p, p.delay.take(q), t)
		p.reschedule()
		return 0
	}
	n := w.depart(p, t)
	p.reschedule()
	return n
}

// depart dequeues the packet that leaves p's line at t, runs the dequeue
// markers, adds p's INT record and stages it for the device; a batch that
// fills up goes to the device at once.
func (w *worker) depart(p *port, t int64) int {
	mmu := w.s.mmu
	d := p.sched.Dequeue(t)
	p.departAt(t)
	q := int(d.Queue)
	mmu.Release(p.idx, q, int(d.Charged))
	p.qc[q].dequeued.Add(1)
	p.qc[q].deqBytes.Add(uint64(d.Len))
	p.sojourn[q].add(t - d.EnqTime)
	if p.deq.Chain != nil {
		v := w.fillView(p, d, t, q, &p.deq)
		switch p.deq.Decide(v, d.ECN) {
		case marking.Drop:
			mmu.CountDrop(p.idx, q, buffer.Marker, d.Len)
			w.markerDrop(p, d, &p.deq, v, DropDequeueMarker, t)
			return 0
		case marking.Mark:
			if d.ECN.IsECT() && packet.SetCE(d) { // not if already CE, here or upstream
				p.qc[q].markedDeq.Add(1)
				w.noteMark(p, d, &p.deq, v)
			}
		}
	}
	out := INTNone
	if p.inband != nil {
		out = w.telemetry(p, d, t) // before the shaper: it charges the frame as it leaves
	}
	p.shaper.Take(t, d.Len)
	d.TxTime = t
	if p.tap.Load() != nil {
		w.tapINT(p, EventEgress, d, t, 0, d.MarkedBy, t-d.EnqTime, out)
	}
	if p.stage(d) {
		return w.flush(p, t)
	}
	return 0
}

// flush hands p's staged packets to the device at now and releases the
// frames it took. A device may take fewer than it is offered (one call of
// XDP live frames sends at most 256): while it takes some, flush offers it
// the rest. What it does not take at all stays staged, and the line stops
// until it does (p.blocked): that is push-back, and the line restarts at
// the time the device takes them. A device error (link down, say) loses
// the frames it refused: they are counted rather than retried forever.
func (w *worker) flush(p *port, now int64) int {
	n := 0
	var err error
	for n < len(p.staged) && err == nil {
		var k int
		k, err = p.dev.Transmit(p.staged[n:])
		if k == 0 {
			break
		}
		n += k
	}
	p.health(w.s, "transmit", &p.txErr, err)
	var bytes uint64
	for _, d := range p.staged[:n] {
		bytes += uint64(d.Len)
		w.release(d)
	}
	p.c.txPackets.Add(uint64(n))
	p.c.txBytes.Add(bytes)
	done := n
	if err != nil && !errors.Is(err, ports.ErrClosed) {
		for _, d := range p.staged[n:] {
			w.drop(p, d, DropTxError, d.TxTime)
		}
		done = len(p.staged)
	}
	if p.sent(done, now) {
		w.reschedule(p)
	}
	return n
}

// reschedule recomputes p's next event and keeps w.next a lower bound of
// its ports' next events.
func (w *worker) reschedule(p *port) { w.next = min(w.next, p.reschedule()) }

// run is the worker's poll-mode loop, until stop is set: pass after pass
// while there is work; with none, spin for w.spin passes, then sleep until
// the next deadline of its ports (wake) or an arrival.
func (w *worker) run(stop *atomic.Bool) error {
	idle := 0
	last := w.s.clock.Now()
	for !stop.Load() {
		now := w.s.clock.Now()
		moved := w.poll(now)
		after := w.s.clock.Now()
		if moved > 0 {
			w.time.busy.Add(after - last)
			idle = 0
			last = after
			continue
		}
		w.time.spin.Add(after - last)
		last = after
		wake := int64(never)
		if w.carried.Load() > 0 {
			wake = after // arrivals wait for a pass
		}
		for _, p := range w.ports {
			wake = min(wake, p.wake(after, p.pender != nil && p.pender.Pending()))
		}
		if wake <= after {
			continue
		}
		if idle++; w.spin < 0 || idle < w.spin {
			continue // the worker keeps its P: yielding it could leave the worker queued behind other goroutines
		}
		w.wait(min(wake-after, idleWait))
		after = w.s.clock.Now()
		w.time.sleep.Add(after - last)
		last = after
	}
	return nil
}

// idleWait bounds one sleep of an idle worker, in ns.
const idleWait = 200_000

// pendingWait bounds the sleep of a worker whose device holds taken frames
// unsent, in ns: the sleep (ppoll) drives the device on, and the worker
// looks again soon after.
const pendingWait = 10_000

// wait sleeps until one of the worker's ports has input or timeout ns have
// passed: in one ppoll on all their descriptors when every port offers
// them, else on each port that can wait (ports.Waiter) in turn, else on a
// timer alone.
func (w *worker) wait(timeout int64) {
	if w.pollfds != nil {
		for i := range w.pollfds {
			w.pollfds[i].Events, w.pollfds[i].Revents = unix.POLLIN, 0
		}
		w.pollTS = unix.NsecToTimespec(timeout)
		ppollRaw(w.pollfds, &w.pollTS) // EINTR or an error: the next pass finds out
		return
	}
	per := timeout / int64(max(1, len(w.ports)))
	waited := false
	for _, p := range w.ports {
		if wt, ok := p.dev.(ports.Waiter); ok {
			waited = true
			if ready, _ := wt.Wait(per); ready {
				return
			}
		}
	}
	if !waited {
		w.pollTS = unix.NsecToTimespec(timeout)
		nanosleepRaw(&w.pollTS)
	}
}

// initPoll collects the poll descriptors of the worker's ports, when every
// one of them has some.
func (w *worker) initPoll() {
	var fds []unix.PollFd
	for _, p := range w.ports {
		fp, ok := p.dev.(ports.FDPoller)
		if !ok {
			return
		}
		for _, fd := range fp.PollFDs() {
			fds = append(fds, unix.PollFd{Fd: int32(fd)})
		}
	}
	w.pollfds = fds
}
