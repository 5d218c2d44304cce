package capture

import (
	"runtime"
	"sync/atomic"
	"time"
)

// pollInterval is how long the writer sleeps when its ring is empty.
const pollInterval = time.Millisecond

// Status is a capture's state and counters.
type Status struct {
	ID        int       `json:"id"`
	Spec      Spec      `json:"spec"`       // with the defaults filled in
	PortIndex int       `json:"port_index"` // the port Spec.Port resolved to
	Running   bool      `json:"running"`
	Started   time.Time `json:"started"`
	File      string    `json:"file"` // the file being written, or the last one

	Written         uint64 `json:"written"`           // packets in the files
	SkippedRingFull uint64 `json:"skipped_ring_full"` // selected, but the ring was full
	// FilteredOut counts events of the capture's direction that its filters
	// left out. The worker publishes it every 64 such events and with each
	// captured packet, so it may lag by up to 63, also in the final status.
	FilteredOut    uint64 `json:"filtered_out"`
	LostWriteError uint64 `json:"lost_write_error"` // taken from the ring after a write error
	Bytes          uint64 `json:"bytes"`            // written to all files, headers included
	Files          uint64 `json:"files"`            // files opened, rotated ones included
	Error          string `json:"error,omitempty"`  // the write error that stopped the files
}

// capture is one running capture: the filter and ring the port's worker
// feeds, and the writer goroutine that drains the ring into files.
type capture struct {
	id        int
	spec      Spec
	port      int
	started   time.Time
	ringBytes int64 // the ring's memory, counted against Options.RingMemory
	bound     int64 // the most its files keep on disk (Spec.DiskBound); 0 for none

	// Producer side: the port's worker.
	filter    filter
	ring      *ring
	gate      gate
	skipped   atomic.Uint64
	filtered  atomic.Uint64 // nFiltered, published
	nFiltered uint64        // the worker's own count

	// Consumer side: the writer goroutine.
	out      *fileWriter
	ownRoot  bool // out.root is the capture's own, closed when it stops
	written  atomic.Uint64
	lost     atomic.Uint64
	bytes    atomic.Uint64
	files    atomic.Uint64
	file     atomic.Pointer[string]
	err      atomic.Pointer[string]
	done     atomic.Bool   // set by stop once the worker can no longer push
	finished chan struct{} // closed by the writer when the files are closed
	hold     <-chan struct{}
}

// openFirst opens the capture's first file, so that a bad path fails Start.
func (c *capture) openFirst() error {
	if err := c.out.open(0); err != nil {
		c.out.close()
		return err
	}
	c.noteFile()
	return nil
}

func (c *capture) noteFile() {
	name := c.out.file()
	c.file.Store(&name)
	c.files.Add(1)
	c.bytes.Store(uint64(c.out.bytes()))
}

// run is the writer goroutine.
func (c *capture) run() {
	defer close(c.finished)
	if c.hold != nil {
		<-c.hold // tests stall the writer to fill the ring
	}
	for {
		if c.drain() > 0 {
			continue
		}
		if c.done.Load() {
			c.drain() // the worker has finished its last push
			c.fail(c.out.close())
			c.bytes.Store(uint64(c.out.bytes()))
			return
		}
		c.fail(c.out.flush())
		time.Sleep(pollInterval)
	}
}

// drain writes what the ring holds and returns how many records it took.
func (c *capture) drain() int {
	n := 0
	for {
		r, data, ok := c.ring.peek()
		if !ok {
			break
		}
		if c.err.Load() != nil {
			c.lost.Add(1)
		} else {
			seq := c.out.seq
			if err := c.out.write(r, data); err != nil {
				c.fail(err)
				c.lost.Add(1)
			} else {
				c.written.Add(1)
			}
			if c.out.seq != seq {
				c.noteFile()
			}
		}
		c.ring.pop()
		n++
	}
	if n > 0 {
		c.bytes.Store(uint64(c.out.bytes()))
	}
	return n
}

// fail records the first write error; the capture then only counts.
func (c *capture) fail(err error) {
	if err == nil || c.err.Load() != nil {
		return
	}
	s := err.Error()
	c.err.Store(&s)
	c.out.close()
}

// stop waits until the port's worker can no longer push (the Manager has
// already taken the capture off the port's tap), lets the writer drain the
// ring and close its file, and returns the final status.
func (c *capture) stop() Status {
	c.gate.stopped.Store(true)
	for c.gate.busy.Load() {
		runtime.Gosched()
	}
	c.done.Store(true)
	<-c.finished
	return c.status()
}

func (c *capture) status() Status {
	s := Status{
		ID: c.id, Spec: c.spec, PortIndex: c.port, Started: c.started,
		Running:         !c.gate.stopped.Load(),
		Written:         c.written.Load(),
		SkippedRingFull: c.skipped.Load(),
		FilteredOut:     c.filtered.Load(),
		LostWriteError:  c.lost.Load(),
		Bytes:           c.bytes.Load(),
		Files:           c.files.Load(),
	}
	if f := c.file.Load(); f != nil {
		s.File = *f
	}
	if e := c.err.Load(); e != nil {
		s.Error = *e
	}
	return s
}
