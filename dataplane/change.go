package dataplane

import (
	"context"
	"errors"
	"fmt"

	"github.com/ecnswitch/ecnswitch/internal/spsc"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// Changes of a running switch.
//
// A port's marker chains, queue weights and rate may change while the
// switch runs. What can be built beforehand (a new chain) is built on the
// caller's goroutine, where it may allocate and fail; the rest is a
// function that the worker owning the port runs between two passes, so
// that the per-packet path takes no lock and never sees half a change.
// A change reaches the worker through a ring of its own, and the caller
// waits for its result. While the switch is not running, its owner (the
// goroutine that calls Poll) applies changes at once, on its own
// goroutine, which then must be that owner.

// change is one change for a port's worker to apply.
type change struct {
	apply func(w *worker) error
	err   error
	done  chan struct{} // closed once applied
}

// changeRing is how many changes may wait for one worker.
const changeRing = 64

// ErrBusy is returned when a worker has more changes waiting than it
// takes (changeRing): try again.
var ErrBusy = errors.New("dataplane: too many changes waiting for the port's worker")

// applyChanges applies the changes waiting for w, between two passes.
func (w *worker) applyChanges() {
	for c, ok := w.changes.Pop(); ok; c, ok = w.changes.Pop() {
		c.err = c.apply(w)
		close(c.done)
	}
}

// submit has the worker of port, a valid index, run apply between two
// passes (at once while the switch is not running) and returns its error.
// ctx bounds the wait: a change that ctx gave up on is still applied.
func (s *Switch) submit(ctx context.Context, port int, apply func(w *worker) error) error {
	p := s.ports[port]
	w := s.workers[s.owner[port]]
	s.changeMu.Lock()
	if !s.running.Load() {
		err := apply(w)
		s.changeMu.Unlock()
		return err
	}
	c := &change{apply: apply, done: make(chan struct{})}
	ok := w.changes.Push(c)
	s.changeMu.Unlock()
	if !ok {
		return ErrBusy
	}
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return fmt.Errorf("dataplane: port %s: waiting for the change: %w", p.name, ctx.Err())
	}
}

// newChangeRing returns a worker's ring of changes.
func newChangeRing() *spsc.Ring[*change] {
	r, _ := spsc.New[*change](changeRing)
	return r
}

// SetMarkers replaces port's marker chain at stage with one of specs (none
// removes it), built and checked as New builds a port's. A DualQ port's
// coupled AQM stays at the head of its dequeue chain, with its state. The counters of
// the members whose names the new chain keeps carry over, so that Stats
// counts across the change; other state (averages, random draws) starts
// afresh. Packets already queued keep the marks they got.
func (s *Switch) SetMarkers(ctx context.Context, port int, stage marking.Stage, specs []MarkerSpec) error {
	p, err := s.port(port)
	if err != nil {
		return err
	}
	key, lead := "enqueue", []marking.Member(nil)
	if stage == marking.Dequeue {
		key, lead = "dequeue", p.lead // a DualQ port keeps its AQM
	}
	st, err := newStage(key, stage, lead, specs, p.nonECT, p.nq)
	if err != nil {
		return fmt.Errorf("dataplane: port %s: %w", p.name, err)
	}
	return s.submit(ctx, port, func(w *worker) error {
		old := &p.enq
		if stage == marking.Dequeue {
			old = &p.deq
		}
		other := p.enq.Len() + p.deq.Len() - old.Len()
		if n := other + st.Len(); n > MaxMarkers {
			return fmt.Errorf("dataplane: port %s: markers: %d configured, at most %d", p.name, n, MaxMarkers)
		}
		if st.Chain != nil && old.Chain != nil {
			st.Inherit(old.Chain)
		}
		*old = st
		p.publishChains()
		return nil
	})
}

// SetQueue changes the weight and quantum of queue of port as
// scheduler.Scheduler.SetQueue does, validated as a Config is. The
// markers see the queue's new weights from the next packet on.
func (s *Switch) SetQueue(ctx context.Context, port, queue int, c scheduler.QueueConfig) error {
	p, err := s.port(port)
	if err != nil {
		return err
	}
	return s.submit(ctx, port, func(w *worker) error {
		if err := p.sched.SetQueue(queue, c); err != nil {
			return fmt.Errorf("dataplane: port %s: %w", p.name, err)
		}
		for q := range p.qinfo {
			p.qinfo[q] = p.sched.Queue(q)
		}
		return nil
	})
}

// SetShaper changes port's rate and bucket as scheduler.Shaper.Set does,
// at the time of the port's last event on its virtual line: departures
// after it follow the new rate, and the scheduler times its rounds with it
// (Scheduler.SetLineRate).
func (s *Switch) SetShaper(ctx context.Context, port int, rate, bucket int64) error {
	p, err := s.port(port)
	if err != nil {
		return err
	}
	return s.submit(ctx, port, func(w *worker) error {
		if err := p.shaper.Set(p.now, rate, bucket); err != nil {
			return fmt.Errorf("dataplane: port %s: %w", p.name, err)
		}
		if err := p.sched.SetLineRate(rate); err != nil { // the shaper took it: it is in range
			return fmt.Errorf("dataplane: port %s: %w", p.name, err)
		}
		w.reschedule(p)
		return nil
	})
}

// SetAlpha changes the Dynamic Threshold α of queue of port, as
// buffer.MMU.SetAlpha does: the next packet that queue admits compares
// against it.
func (s *Switch) SetAlpha(ctx context.Context, port, queue int, alpha float64) error {
	p, err := s.port(port)
	if err != nil {
		return err
	}
	return s.submit(ctx, port, func(*worker) error {
		if err := s.mmu.SetAlpha(port, queue, alpha); err != nil {
			return fmt.Errorf("dataplane: port %s: %w", p.name, err)
		}
		return nil
	})
}

// port returns port i, or an error naming the range.
func (s *Switch) port(i int) (*port, error) {
	if i < 0 || i >= len(s.ports) {
		return nil, fmt.Errorf("dataplane: port %d outside [0, %d]", i, len(s.ports)-1)
	}
	return s.ports[i], nil
}
