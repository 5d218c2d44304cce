// Package bulk moves bulk TCP between testbed hosts: a Receiver that counts
// the goodput of every flow it accepts, and a Sender that keeps K
// long-lived flows busy for a duration. Neither cares about namespaces: give
// the Receiver a listener and the Sender a dial function made by
// testbed.Host (ListenTCP, DialTCP) and the flows run between those hosts.
package bulk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Flow is what one TCP flow carried.
type Flow struct {
	Local, Remote string // endpoint addresses, as net.Addr.String prints them
	Bytes         int64  // bytes written (Sender) or read (Receiver)
	Done          bool   // Receiver: the sender closed the flow (EOF); Sender: the flow ended
}

// flow is a Flow being counted.
type flow struct {
	local, remote string
	bytes         atomic.Int64
	done          atomic.Bool
}

func (f *flow) snapshot() Flow {
	return Flow{Local: f.local, Remote: f.remote, Bytes: f.bytes.Load(), Done: f.done.Load()}
}

// Receiver accepts flows on a listener and reads them to the end, counting
// the bytes each delivers. Its methods are safe for concurrent use.
type Receiver struct {
	ln net.Listener
	wg sync.WaitGroup

	mu     sync.Mutex
	flows  []*flow
	conns  []net.Conn
	closed bool
	err    error // first error other than the end of a flow
}

// Serve starts a Receiver on ln, which it owns from now on: Close closes it.
func Serve(ln net.Listener) *Receiver {
	r := &Receiver{ln: ln}
	r.wg.Add(1)
	go r.accept()
	return r
}

func (r *Receiver) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				r.fail(fmt.Errorf("bulk: accept: %w", err))
			}
			return
		}
		f := &flow{local: c.LocalAddr().String(), remote: c.RemoteAddr().String()}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			c.Close()
			return
		}
		r.flows = append(r.flows, f)
		r.conns = append(r.conns, c)
		r.wg.Add(1)
		r.mu.Unlock()
		go r.read(c, f)
	}
}

func (r *Receiver) read(c net.Conn, f *flow) {
	defer r.wg.Done()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		f.bytes.Add(int64(n))
		if err == io.EOF {
			f.done.Store(true)
			return
		}
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				r.fail(fmt.Errorf("bulk: read %s: %w", f.remote, err))
			}
			return
		}
	}
}

func (r *Receiver) fail(err error) {
	r.mu.Lock()
	if r.err == nil && !r.closed {
		r.err = err
	}
	r.mu.Unlock()
}

// Addr returns the listener's address.
func (r *Receiver) Addr() net.Addr { return r.ln.Addr() }

// Flows returns a snapshot of every flow accepted so far, in accept order.
func (r *Receiver) Flows() []Flow {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Flow, len(r.flows))
	for i, f := range r.flows {
		out[i] = f.snapshot()
	}
	return out
}

// Bytes returns the goodput so far: bytes read over all flows.
func (r *Receiver) Bytes() int64 {
	var n int64
	for _, f := range r.Flows() {
		n += f.Bytes
	}
	return n
}

// Close stops accepting, closes every flow and waits for the Receiver's
// goroutines to end. It returns the first error a flow or the listener met
// before Close (a reset flow, say); a flow closed by its sender is no error.
func (r *Receiver) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	conns := r.conns
	r.mu.Unlock()
	errs := []error{r.ln.Close()}
	for _, c := range conns {
		c.Close()
	}
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(append(errs, r.err)...)
}

// Sender opens Flows TCP flows with Dial and writes to all of them as fast
// as they take data, for Duration or until its context is cancelled.
type Sender struct {
	// Dial opens one flow, e.g. a closure over testbed.Host.DialTCP with
	// the receiver's address and a DSCP.
	Dial func(ctx context.Context) (net.Conn, error)
	// Flows is the number of concurrent flows, at least 1.
	Flows int
	// Duration bounds the transfer; 0 means until the context is done.
	Duration time.Duration
	// WriteSize is the size of each write; 0 means 64 KiB.
	WriteSize int
}

// Result is what a Sender sent.
type Result struct {
	Flows   []Flow
	Bytes   int64         // bytes written over all flows
	Elapsed time.Duration // from the first dial to the last flow's close
}

// Run dials every flow, writes until Duration has passed or ctx is done,
// then half-closes each flow (FIN after the queued data) and closes it. It
// returns what each flow wrote; bytes still in socket buffers at close are
// delivered by the kernel afterwards, so a Receiver's count catches up to
// Result.Bytes once it sees every flow's EOF. Reaching the end of Duration
// or a cancelled ctx is a normal end, not an error.
func (s Sender) Run(ctx context.Context) (Result, error) {
	if s.Flows < 1 {
		return Result{}, fmt.Errorf("bulk: Flows %d: want at least 1", s.Flows)
	}
	if s.Dial == nil {
		return Result{}, errors.New("bulk: Dial is nil")
	}
	if s.Duration < 0 {
		return Result{}, fmt.Errorf("bulk: Duration %v: want >= 0", s.Duration)
	}
	size := s.WriteSize
	if size == 0 {
		size = 64 << 10
	}
	if size < 0 {
		return Result{}, fmt.Errorf("bulk: WriteSize %d: want > 0", size)
	}
	start := time.Now()
	conns := make([]net.Conn, 0, s.Flows)
	closeAll := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	for range s.Flows {
		c, err := s.Dial(ctx)
		if err != nil {
			closeAll()
			return Result{}, fmt.Errorf("bulk: dial flow %d: %w", len(conns)+1, err)
		}
		conns = append(conns, c)
	}

	var deadline time.Time
	if s.Duration > 0 {
		deadline = start.Add(s.Duration)
	}
	flows := make([]flow, len(conns))
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		flows[i].local, flows[i].remote = c.LocalAddr().String(), c.RemoteAddr().String()
		if err := c.SetWriteDeadline(deadline); err != nil {
			closeAll()
			return Result{}, fmt.Errorf("bulk: flow %d: %w", i+1, err)
		}
		// Cancelling ctx ends the writes by moving the deadline to now.
		stop := context.AfterFunc(ctx, func() { c.SetWriteDeadline(time.Unix(1, 0)) })
		wg.Go(func() {
			defer stop()
			errs[i] = write(c, &flows[i], size)
		})
	}
	wg.Wait()

	res := Result{Flows: make([]Flow, len(flows)), Elapsed: time.Since(start)}
	for i := range flows {
		res.Flows[i] = flows[i].snapshot()
		res.Bytes += res.Flows[i].Bytes
	}
	return res, errors.Join(errs...)
}

// write fills one flow until its write deadline, then closes it gracefully.
func write(c net.Conn, f *flow, size int) error {
	defer f.done.Store(true)
	buf := make([]byte, size)
	var err error
	for {
		var n int
		n, err = c.Write(buf)
		f.bytes.Add(int64(n))
		if err != nil {
			break
		}
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = nil
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok && err == nil {
		err = cw.CloseWrite()
	}
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("bulk: flow %s: %w", f.remote, err)
	}
	return nil
}
