package dataplane

import (
	"errors"
	"runtime"
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
// enqueue; then serve each egress port through its shaper, scheduler and
// dequeue markers, and transmit. It owns its frame arena; frames of packets
// that cross to another worker come back through a return ring.
type worker struct {
	s     *Switch
	id    int
	ports []*port
	batch int
	spin  int
	cpu   int // CPU to pin the worker's thread to; -1 for none

	arena  []packet.Desc
	free   []*packet.Desc   // LIFO stack of unused arena slots
	rx     [][]*packet.Desc // receive scratch, one batch per owned port
	active []int            // owned ports with packets this pass
	first  int              // rotates which active port goes first

	in   []*spsc.Ring[*packet.Desc] // by source worker: packets for our ports
	inb  [][]*packet.Desc           // by source worker: this pass's batch from in
	out  []*spsc.Ring[*packet.Desc] // by destination worker
	ret  []*spsc.Ring[*packet.Desc] // by source worker: their frames to give back
	back []*spsc.Ring[*packet.Desc] // by destination worker: our frames coming home

	pollfds []unix.PollFd // every owned port's descriptors, when all have some
	pollTS  unix.Timespec

	view  marking.View // scratch, reused for every marker call
	event Event        // scratch for taps
}

func newWorker(s *Switch, id int, cfg Config) *worker {
	w := &worker{
		s: s, id: id, batch: cfg.Batch, spin: cfg.Spin, cpu: -1,
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
	mem := make([]byte, cfg.Frames*cfg.FrameSize)
	for i := range w.arena {
		w.arena[i].Buf = mem[i*cfg.FrameSize : (i+1)*cfg.FrameSize : (i+1)*cfg.FrameSize]
		w.free = append(w.free, &w.arena[i])
	}
	return w
}

// noPort16 marks a descriptor not yet forwarded.
const noPort16 = 0xffff

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
func (w *worker) markerDrop(p *port, d *packet.Desc, c *marking.Chain, stage marking.Stage, v *marking.View, r DropReason, now int64) {
	p.c.drops[r].Add(1)
	if p.tap.Load() != nil {
		d.MarkValue, d.MarkThreshold = v.Value, v.Threshold
		sojourn := int64(-1)
		if stage == marking.Dequeue {
			sojourn = now - d.EnqTime
		}
		w.tapEvent(p, EventDrop, d, now, r, p.markerIndex(stage, c.Decider()), sojourn)
	}
	w.release(d)
}

// noteMark records in d which member of chain c marked it and what it compared.
func (w *worker) noteMark(p *port, d *packet.Desc, c *marking.Chain, stage marking.Stage, v *marking.View) {
	d.MarkedBy = p.markerIndex(stage, c.Decider())
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

// poll runs one pass and returns the packets it moved.
func (w *worker) poll(now int64) int {
	n := 0
	for _, r := range w.back {
		if r == nil {
			continue
		}
		for d, ok := r.Pop(); ok; d, ok = r.Pop() {
			w.free = append(w.free, d)
		}
	}
	// Receive a batch on every port, then process the batches interleaved,
	// one packet per port at a time, starting with a different port each
	// pass. Processing whole batches port by port would let every packet of
	// a later port find the buffer the earlier ports just filled, and so be
	// marked or dropped more often: unfair by polling order alone.
	// Packets other workers received for our ports are sources too, one per
	// ring, interleaved with ours.
	np := len(w.ports)
	active := w.active[:0]
	for i, p := range w.ports {
		if n += w.receive(p, i, now); len(w.rx[i]) > 0 {
			active = append(active, i)
		}
	}
	for j, r := range w.in {
		if r == nil {
			continue
		}
		b := w.inb[j][:0]
		for len(b) < w.batch {
			d, ok := r.Pop()
			if !ok {
				break
			}
			b = append(b, d)
		}
		w.inb[j] = b
		if n += len(b); len(b) > 0 {
			active = append(active, np+j)
		}
	}
	if len(active) > 0 {
		w.first++
		start := w.first % len(active)
		for k, more := 0, true; more; k++ {
			more = false
			for j := range active {
				switch i := active[(start+j)%len(active)]; {
				case i < np && k < len(w.rx[i]):
					w.ingress(w.ports[i], w.rx[i][k], now)
					more = true
				case i >= np && k < len(w.inb[i-np]):
					d := w.inb[i-np][k]
					w.toEgress(w.s.ports[d.OutPort], d, now)
					more = true
				}
			}
		}
	}
	for _, p := range w.ports {
		n += w.serve(p, now)
		p.held.Store(int64(len(p.pending) + p.delay.len()))
	}
	return n
}

// receive fills w.rx[i] with a batch from p, the worker's i-th port, and
// counts and taps it; the pipeline runs later.
func (w *worker) receive(p *port, i int, now int64) int {
	w.rx[i] = w.rx[i][:0]
	k := min(w.batch, len(w.free))
	if k == 0 {
		return 0 // every frame is queued; leave the rest in the device
	}
	batch := w.rx[i][:k]
	copy(batch, w.free[len(w.free)-k:])
	w.free = w.free[:len(w.free)-k]
	n, err := p.dev.Receive(batch)
	w.free = append(w.free, batch[n:]...)
	p.health(w.s, "receive", &p.rxErr, err)
	w.rx[i] = batch[:n]
	var bytes uint64
	for _, d := range batch[:n] {
		bytes += uint64(d.Len)
		d.InPort = uint16(p.idx)
		if d.RxTime == 0 {
			d.RxTime = now
		}
		d.OutPort = noPort16
		w.tapEvent(p, EventIngress, d, d.RxTime, 0, 0, -1)
	}
	p.c.rxPackets.Add(uint64(n))
	p.c.rxBytes.Add(bytes)
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
	d.Queue = w.s.cls.queue(d, p.nq)
	if o := int(w.s.owner[out]); o != w.id {
		if !w.out[o].Push(d) {
			w.drop(in, d, DropCrossWorker, now)
		}
		return
	}
	w.toEgress(p, d, now)
}

// toEgress hands d to its egress port: through the delay line when the port
// emulates one, else straight to admission and the queue.
func (w *worker) toEgress(p *port, d *packet.Desc, now int64) {
	if p.delay != nil {
		if !p.delay.push(d, now) {
			w.drop(p, d, DropDelayFull, now)
		}
		return
	}
	w.enqueue(p, d, now)
}

var bufferDrop = [buffer.NumReasons]DropReason{
	buffer.PoolFull:         DropPoolFull,
	buffer.DynamicThreshold: DropDynamicThreshold,
	buffer.StaticCap:        DropStaticCap,
	buffer.Marker:           DropEnqueueMarker,
}

// enqueue admits d to the buffer, runs the enqueue markers and queues it.
// The markers see the occupancy the packet finds, read before admission.
func (w *worker) enqueue(p *port, d *packet.Desc, now int64) {
	q := int(d.Queue)
	mmu := w.s.mmu
	d.EnqTime = now
	var v *marking.View
	if p.enq != nil {
		v = w.fillView(p, d, now, q)
	}
	if r := mmu.Admit(p.idx, q, d.Len); r != buffer.Admitted {
		w.drop(p, d, bufferDrop[r], now)
		return
	}
	if v != nil {
		switch p.enq.Decide(v, d.ECN) {
		case marking.Drop:
			mmu.Release(p.idx, q, d.Len)
			mmu.CountDrop(p.idx, q, buffer.Marker, d.Len)
			w.markerDrop(p, d, p.enq, marking.Enqueue, v, DropEnqueueMarker, now)
			return
		case marking.Mark:
			if d.ECN.IsECT() && packet.SetCE(d) { // a packet that arrived CE was marked upstream
				p.qc[q].markedEnq.Add(1)
				w.noteMark(p, d, p.enq, marking.Enqueue, v)
			}
		}
	}
	if !p.sched.Enqueue(d, now) {
		mmu.Release(p.idx, q, d.Len)
		w.drop(p, d, DropQueueFull, now)
		return
	}
	p.qc[q].enqueued.Add(1)
	p.qc[q].enqBytes.Add(uint64(d.Len))
}

// fillView loads the marker view for d in queue q of p. The queue and port
// backlogs come from the scheduler, whose plain counters this worker owns
// and which equal the buffer's (admitted, not yet dequeued) at both stages;
// the pool figures are the shared pool's, the occupancy the Dynamic
// Threshold and BCC compare (002 §IV-B). The pool's packet count is not
// tracked per packet and stays 0.
func (w *worker) fillView(p *port, d *packet.Desc, now int64, q int) *marking.View {
	mmu := w.s.mmu
	qi := &p.qinfo[q]
	v := &w.view
	*v = marking.View{
		Now: now, EnqTime: d.EnqTime, Len: d.Len, Port: p.idx, Queue: q,
		PoolBytes: mmu.PoolSharedBytes(p.pool), PoolSize: mmu.PoolSize(p.pool),
		Quantum: qi.Quantum, Weight: qi.PortWeight, WeightSum: qi.PortWeightSum, Strict: qi.Strict,
		RoundTime: p.sched.RoundTime(now), LineRate: p.shaper.Rate(), BusyWeightSum: p.sched.BusyWeightSum(),
	}
	v.QueueBytes, v.QueuePackets = p.sched.Backlog(q)
	v.PortBytes, v.PortPackets = p.sched.Len()
	v.QueueEmptySince, v.PortEmptySince = p.sched.EmptySince(q)
	return v
}

// serve moves due packets out of the delay line, then dequeues what the
// shaper allows, runs the dequeue markers and transmits.
func (w *worker) serve(p *port, now int64) int {
	if p.delay != nil {
		for d := p.delay.pop(now); d != nil; d = p.delay.pop(now) {
			w.enqueue(p, d, now)
		}
	}
	if len(p.pending) > 0 && !w.transmit(p, p.pending) {
		return 0 // the device is still full
	}
	mmu := w.s.mmu
	tx := p.tx[:0]
	for len(tx) < w.batch && p.shaper.Ready(now) {
		d := p.sched.Dequeue(now)
		if d == nil {
			break
		}
		q := int(d.Queue)
		mmu.Release(p.idx, q, d.Len)
		p.qc[q].dequeued.Add(1)
		p.qc[q].deqBytes.Add(uint64(d.Len))
		p.sojourn[q].add(now - d.EnqTime)
		if p.deq != nil {
			v := w.fillView(p, d, now, q)
			switch p.deq.Decide(v, d.ECN) {
			case marking.Drop:
				mmu.CountDrop(p.idx, q, buffer.Marker, d.Len)
				w.markerDrop(p, d, p.deq, marking.Dequeue, v, DropDequeueMarker, now)
				continue
			case marking.Mark:
				if d.ECN.IsECT() && packet.SetCE(d) { // not if already CE, here or upstream
					p.qc[q].markedDeq.Add(1)
					w.noteMark(p, d, p.deq, marking.Dequeue, v)
				}
			}
		}
		p.shaper.Take(now, d.Len)
		d.TxTime = now
		w.tapEvent(p, EventEgress, d, now, 0, d.MarkedBy, now-d.EnqTime)
		tx = append(tx, d)
	}
	if len(tx) == 0 {
		return 0
	}
	w.transmit(p, tx)
	return len(tx)
}

// transmit hands ds to the device, releases the frames it took, and keeps
// the rest in p.pending. It reports whether the device took everything.
func (w *worker) transmit(p *port, ds []*packet.Desc) bool {
	n, err := p.dev.Transmit(ds)
	p.health(w.s, "transmit", &p.txErr, err)
	var bytes uint64
	for _, d := range ds[:n] {
		bytes += uint64(d.Len)
		w.release(d)
	}
	p.c.txPackets.Add(uint64(n))
	p.c.txBytes.Add(bytes)
	rest := ds[n:]
	if err != nil && !errors.Is(err, ports.ErrClosed) && len(rest) > 0 {
		// A device error (link down, say) loses the frames it refused:
		// count them rather than retry them forever.
		for _, d := range rest {
			w.drop(p, d, DropTxError, d.TxTime)
		}
		rest = nil
	}
	// p.pending may alias ds; copy keeps the order either way.
	p.pending = p.pending[:copy(p.pending[:cap(p.pending)][:len(rest)], rest)]
	return len(p.pending) == 0
}

// run is the worker's poll-mode loop: poll until idle for spin passes, then
// wait on its ports, until stop is set.
func (w *worker) run(stop *atomic.Bool) error {
	idle := 0
	for !stop.Load() {
		now := w.s.clock.Now()
		if w.poll(now) > 0 || w.backlogged() {
			idle = 0
			continue
		}
		idle++
		if w.spin < 0 || idle < w.spin {
			if idle&63 == 0 {
				runtime.Gosched()
			}
			continue
		}
		w.wait()
	}
	return nil
}

// backlogged reports whether any egress port still holds packets the shaper
// will release soon; the worker keeps polling rather than sleeping then.
func (w *worker) backlogged() bool {
	for _, p := range w.ports {
		if len(p.pending) > 0 || p.delay.len() > 0 {
			return true
		}
		if b, _ := p.sched.Len(); b > 0 {
			return true
		}
	}
	return false
}

// idleWait bounds one wait of an idle worker, in ns.
const idleWait = 200_000

// wait sleeps until one of the worker's ports has work or idleWait passes:
// in one ppoll on all their descriptors when every port offers them, else
// on each port in turn.
func (w *worker) wait() {
	if w.pollfds != nil {
		for i := range w.pollfds {
			w.pollfds[i].Events, w.pollfds[i].Revents = unix.POLLIN, 0
		}
		w.pollTS = unix.NsecToTimespec(idleWait)
		unix.Ppoll(w.pollfds, &w.pollTS, nil) // EINTR or an error: the next pass finds out
		return
	}
	per := int64(idleWait / max(1, len(w.ports)))
	for _, p := range w.ports {
		if wt, ok := p.dev.(ports.Waiter); ok {
			if ready, _ := wt.Wait(per); ready {
				return
			}
			continue
		}
		runtime.Gosched()
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
