package dataplane

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/internal/spsc"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// Switch is the packet switch: ports, the shared buffer, forwarding and
// classification, and the workers that run the pipeline.
type Switch struct {
	log     *zap.Logger
	clock   timestamp.Clock
	mmu     *buffer.MMU
	fw      *forwarder
	cls     classifier
	ports   []*port
	workers []*worker
	owner   []uint8 // port index → worker index

	priority int // SCHED_FIFO priority of the workers; 0 for none

	tapMu    sync.Mutex // serializes ReplaceTap
	changeMu sync.Mutex // serializes changes (submit) and the start and end of Run

	running atomic.Bool
}

// port is one switch port with its egress state. Everything below dev is
// owned by the port's worker.
type port struct {
	idx      int
	name     string
	dev      ports.Port
	pender   ports.Pender     // dev, if it can hold taken frames unsent; nil otherwise
	mtu      int              // the largest frame dev sends (ports.MaxFramer); 0: any
	reshape  Reshaper         // nil: refused packets are dropped; a Trim's trimmer, or PortConfig.Reshape
	enq, deq chainStage       // the marker chains at the two stages
	dualq    *dualqClassifier // a DualQ port's classifier; nil on other ports
	aqm      *marking.DualPI2 // a DualQ port's coupled AQM; nil on other ports
	lead     []marking.Member // members heading the dequeue chain: aqm's
	nonECT   marking.NonECT
	chains   atomic.Pointer[portChains] // enq and deq as published for Stats
	pool     int
	nq       int
	qinfo    []scheduler.QueueInfo
	stamps   rxStamps // how received packets get their RxTime
	inband   *inband  // INT; nil when the port adds no records

	line // queues, shaper, delay line, and the times of their events

	c       portCounters
	qc      []queueCounters
	sojourn []histogram // by queue: time from enqueue to dequeue

	rxErr error        // the device's last receive error, so that only changes are logged
	txErr error        // likewise for transmit
	held  atomic.Int64 // packets in the delay line and staged for the device, published once per pass
	tap   tapPointer   // captures and probes; nil when none
}

// portChains are a port's chains as its worker last published them, for
// other goroutines to read their counters.
type portChains struct{ enq, deq *marking.Chain }

// publishChains publishes p's chains for Stats. Only p's worker (or the
// switch's owner while it does not run) calls it.
func (p *port) publishChains() { p.chains.Store(&portChains{p.enq.Chain, p.deq.Chain}) }

// New builds a switch over devs, which must match cfg.Ports one for one.
// The switch takes ownership of devs and closes them in Close. A nil logger
// logs nothing.
func New(cfg Config, devs []ports.Port, clock timestamp.Clock, log *zap.Logger) (*Switch, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if err := cfg.setDefaults(); err != nil {
		return nil, fmt.Errorf("dataplane: %w", err)
	}
	if len(devs) != len(cfg.Ports) {
		return nil, fmt.Errorf("dataplane: %d devices for %d configured ports", len(devs), len(cfg.Ports))
	}
	s := &Switch{log: log, clock: clock, owner: make([]uint8, len(cfg.Ports)), priority: cfg.Priority}

	bc := buffer.Config{Pools: cfg.Pools}
	maxQueues := 1
	for i := range cfg.Ports {
		pc := &cfg.Ports[i]
		bc.Ports = append(bc.Ports, buffer.PortConfig{Pool: pc.Pool, Queues: pc.Queues})
	}
	mmu, err := buffer.New(bc)
	if err != nil {
		return nil, fmt.Errorf("dataplane: %w", err)
	}
	s.mmu = mmu

	for i := range cfg.Ports {
		if cfg.Ports[i].Scheduler.Capacity == 0 {
			// Size the queue rings like the arena, so that only the buffer
			// model, never a descriptor ring, decides what is dropped.
			cfg.Ports[i].Scheduler.Capacity = cfg.Frames
		}
		p, err := newPort(i, &cfg.Ports[i], devs[i], cfg.Batch, clock.Now())
		if err != nil {
			return nil, fmt.Errorf("dataplane: ports[%d] (%s): %w", i, cfg.Ports[i].Name, err)
		}
		p.stamps = stampsOf(devs[i], clock, log)
		log.Info("port ingress stamps", zap.String("port", p.name), zap.String("source", p.stamps.source),
			zap.String("clock", timestamp.Name(clock)))
		maxQueues = max(maxQueues, p.nq)
		s.ports = append(s.ports, p)
		w := cfg.Ports[i].Worker
		if cfg.Workers == 1 || w < 0 {
			w = i % cfg.Workers
		}
		s.owner[i] = uint8(w)
	}
	if s.fw, err = newForwarder(cfg.Forwarding, len(cfg.Ports)); err != nil {
		return nil, fmt.Errorf("dataplane: %w", err)
	}
	if s.cls, err = newClassifier(cfg.Classifier, maxQueues); err != nil {
		return nil, fmt.Errorf("dataplane: %w", err)
	}
	for i := 0; i < cfg.Workers; i++ {
		w, err := newWorker(s, i, cfg)
		if err != nil {
			return nil, fmt.Errorf("dataplane: worker %d's frames: %w", i, err)
		}
		s.workers = append(s.workers, w)
	}
	for i, w := range s.owner {
		s.workers[w].ports = append(s.workers[w].ports, s.ports[i])
	}
	for _, w := range s.workers {
		for range w.ports {
			w.rx = append(w.rx, make([]*packet.Desc, 0, cfg.Batch))
		}
		for range w.in {
			w.inb = append(w.inb, make([]*packet.Desc, 0, cfg.Batch))
		}
		w.active = make([]int, 0, len(w.ports)+len(w.in))
		w.taken = make([]int, len(w.ports)+len(w.in))
		w.initPoll()
	}
	// Cross-worker rings: in[src] of worker dst carries packets src received
	// for dst's ports; back[dst] of worker src returns their frames.
	for _, dst := range s.workers {
		for _, src := range s.workers {
			if src == dst {
				continue
			}
			in, _ := spsc.New[*packet.Desc](cfg.Frames)
			back, _ := spsc.New[*packet.Desc](cfg.Frames)
			src.out[dst.id], dst.in[src.id] = in, in
			dst.ret[src.id], src.back[dst.id] = back, back
		}
	}
	return s, nil
}

func newPort(idx int, pc *PortConfig, dev ports.Port, batch int, now int64) (*port, error) {
	sched, err := scheduler.New(pc.Scheduler)
	if err != nil {
		return nil, err
	}
	nq := sched.Queues()
	if len(pc.Queues) != nq {
		return nil, fmt.Errorf("queues: %d buffer queue configs for %d scheduler queues", len(pc.Queues), nq)
	}
	shaper, err := scheduler.NewShaper(pc.Shaper, now)
	if err != nil {
		return nil, err
	}
	delay, err := newDelayLine(pc.Delay, nq)
	if err != nil {
		return nil, err
	}
	p := &port{
		idx: idx, name: pc.Name, dev: dev,
		pool: pc.Pool, nq: nq, qc: make([]queueCounters, nq), sojourn: make([]histogram, nq),
		line: newLine(sched, shaper, delay, batch, int64(pc.Coalesce), now),
	}
	for q := 0; q < nq; q++ {
		p.qinfo = append(p.qinfo, sched.Queue(q))
	}
	if err := pc.validateTrim(nq); err != nil {
		return nil, err
	}
	p.reshape = pc.Reshape
	if pc.Trim != nil {
		p.reshape = newTrimmer(pc.Trim, nq)
	}
	if pc.Scheduler.Kind == scheduler.DualQ {
		if err := pc.DualQ.validate(pc.Scheduler.Kind); err != nil {
			return nil, err
		}
		if p.aqm, err = newDualQ(idx, pc); err != nil {
			return nil, err
		}
		p.lead, p.dualq = p.aqm.Members(), newDualQClassifier(&pc.DualQ)
	} else if err := pc.DualQ.validate(pc.Scheduler.Kind); err != nil {
		return nil, err
	}
	p.pender, _ = dev.(ports.Pender)
	if m, ok := dev.(ports.MaxFramer); ok {
		p.mtu = m.MaxFrame()
	}
	if err := pc.INT.validate(pc.Shaper.Rate); err != nil {
		return nil, err
	}
	p.inband = newInband(pc.INT, pc.Scheduler.MTU, p.mtu)
	if p.enq, err = newStage("enqueue", marking.Enqueue, nil, pc.Enqueue, pc.NonECT, nq); err != nil {
		return nil, err
	}
	if p.deq, err = newStage("dequeue", marking.Dequeue, p.lead, pc.Dequeue, pc.NonECT, nq); err != nil {
		return nil, err
	}
	if n := p.enq.Len() + p.deq.Len(); n > MaxMarkers {
		return nil, fmt.Errorf("markers: %d configured, at most %d", n, MaxMarkers)
	}
	p.nonECT = pc.NonECT
	p.publishChains()
	return p, nil
}

// chainStage is a port's marker chain at one stage, with what its
// members read, bound when the port is built.
type chainStage struct {
	*marking.Chain // nil when the stage has no markers
	stage          marking.Stage
	needs          marking.Need // the costly View fields the chain reads (marking.Needer): fillView leaves the others 0
	peers          []int        // by queue: the queue the chain reads beside it (marking.Peerer); nil for none
}

// Len returns the number of the chain's members, 0 when there is none.
func (c *chainStage) Len() int {
	if c.Chain == nil {
		return 0
	}
	return c.Chain.Len()
}

// newStage builds the chain of specs for stage, one marker each for a port
// of nq queues, behind the members lead (a DualQ port's AQM); key names
// the stage in errors.
func newStage(key string, stage marking.Stage, lead []marking.Member, specs []MarkerSpec, nonECT marking.NonECT, nq int) (chainStage, error) {
	st := chainStage{stage: stage}
	if len(lead)+len(specs) == 0 {
		return st, nil
	}
	members := make([]marking.Member, 0, len(lead)+len(specs))
	members = append(members, lead...)
	for i, sp := range specs {
		m, err := sp.New(nq)
		if err != nil {
			return st, fmt.Errorf("markers.%s[%d] (%s): %w", key, i, sp.Name, err)
		}
		members = append(members, marking.Member{Name: sp.Name, Marker: m})
	}
	c, err := marking.NewChain(stage, nonECT, members...)
	if err != nil {
		return st, fmt.Errorf("markers.%s: %w", key, err)
	}
	if st.peers, err = c.Peers(nq); err != nil {
		return st, fmt.Errorf("markers.%s: %w", key, err)
	}
	st.Chain, st.needs = c, c.Needs()
	return st, nil
}

// Poll runs one pass of every worker on the calling goroutine: receive a
// batch on every port, run the pipeline, serve every egress port once. It
// returns the number of packets received and transmitted. Tests in virtual
// time call it after each step of the clock; Run calls the same code from
// the workers' own goroutines. Poll must not be called while Run is running.
func (s *Switch) Poll() int {
	if s.running.Load() {
		panic("dataplane: Poll called while Run is running")
	}
	now := s.clock.Now()
	n := 0
	for _, w := range s.workers {
		n += w.poll(now)
	}
	return n
}

// NextEvent returns the earliest time at which the switch has something to
// do without new input: a release from a delay line, a departure on a
// virtual line, or a batch of departed packets due at its device; never
// (math.MaxInt64) when it has none. Virtual-time tests step the clock to
// it. It must not be called while Run is running.
func (s *Switch) NextEvent() int64 {
	next := int64(never)
	for _, w := range s.workers {
		for _, p := range w.ports {
			next = min(next, p.next, p.deadline())
		}
	}
	return next
}

// Run starts the workers and blocks until ctx is done, then stops them and
// returns. Each worker is a goroutine locked to an OS thread, with a timer
// slack of 1 µs so that it wakes when its next departure is due, pinned
// to its CPU if Config.CPUs names one. Run changes nothing of the process
// but its workers' threads, so several switches can run in one process.
//
// Workers keep their Ps, asleep too (they sleep in raw system calls), so
// they come on top of what the rest of the process needs: a process that
// runs a switch beside other work should raise GOMAXPROCS by Workers()
// (node does). With one P left for the rest, the hosts' TCP goroutines of
// the demo, which share its process, moved 0.03 Gbit/s instead of 1.4.
func (s *Switch) Run(ctx context.Context) error {
	s.changeMu.Lock()
	if !s.running.CompareAndSwap(false, true) {
		s.changeMu.Unlock()
		return errors.New("dataplane: switch is already running")
	}
	s.changeMu.Unlock()
	defer func() {
		// The workers have stopped: apply what they left, and from now on
		// changes apply at once.
		s.changeMu.Lock()
		for _, w := range s.workers {
			w.applyChanges()
		}
		s.running.Store(false)
		s.changeMu.Unlock()
	}()
	// A worker that fails (one that cannot be pinned, say) stops them all.
	ctx, failed := context.WithCancel(ctx)
	defer failed()
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make([]error, len(s.workers))
	for i, w := range s.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A pinned or real-time thread stays locked, so that it ends
			// with its goroutine instead of going back to the runtime's pool.
			runtime.LockOSThread()
			if w.cpu < 0 && s.priority == 0 {
				defer runtime.UnlockOSThread()
			} else if w.cpu >= 0 {
				if err := PinThread(w.cpu); err != nil {
					errs[i] = fmt.Errorf("dataplane: pin worker %d to CPU %d: %w", i, w.cpu, err)
					failed()
					return
				}
			}
			if err := unix.Prctl(unix.PR_SET_TIMERSLACK, workerTimerSlack, 0, 0, 0); err != nil {
				s.log.Warn("worker keeps the default timer slack", zap.Int("worker", i), zap.Error(err))
			}
			if s.priority > 0 {
				if err := setFIFO(s.priority); err != nil {
					errs[i] = fmt.Errorf("dataplane: worker %d: priority %d (SCHED_FIFO): %w", i, s.priority, err)
					failed()
					return
				}
			}
			if errs[i] = w.run(&stop); errs[i] != nil {
				failed()
			}
		}()
	}
	s.log.Info("switch running", zap.Int("ports", len(s.ports)), zap.Int("workers", len(s.workers)))
	<-ctx.Done()
	stop.Store(true)
	wg.Wait()
	s.log.Info("switch stopped")
	return errors.Join(errs...)
}

// Workers returns the number of the switch's workers: the goroutines,
// each locked to an OS thread, that Run starts.
func (s *Switch) Workers() int { return len(s.workers) }

// workerTimerSlack is the timer slack of worker threads in ns: how late
// the kernel may end a worker's sleep (50 µs by default).
const workerTimerSlack = 1000

// Close closes every port's device.
func (s *Switch) Close() error {
	var errs []error
	for _, p := range s.ports {
		if err := p.dev.Close(); err != nil && !errors.Is(err, ports.ErrClosed) {
			errs = append(errs, fmt.Errorf("close %s: %w", p.name, err))
		}
	}
	return errors.Join(errs...)
}

// Clock returns the clock the switch runs on, the one every event time and
// marker decision uses.
func (s *Switch) Clock() timestamp.Clock { return s.clock }

// Buffer returns the switch's buffer, for reading occupancy.
func (s *Switch) Buffer() *buffer.MMU { return s.mmu }

// health logs a device error when it first appears and when the device
// recovers (e.g. a link going down and coming back), never per packet.
func (p *port) health(s *Switch, op string, last *error, err error) {
	if err == nil {
		if *last != nil {
			s.log.Info("port recovered", zap.String("port", p.name), zap.String("op", op))
			*last = nil
		}
		return
	}
	if errors.Is(err, ports.ErrClosed) || *last != nil && (errors.Is(err, *last) || err.Error() == (*last).Error()) {
		return
	}
	*last = err
	s.log.Warn("port device error; retrying", zap.String("port", p.name), zap.String("op", op), zap.Error(err))
}

// chains returns the chains that are set.
func (c *portChains) chains() []*marking.Chain {
	var cs []*marking.Chain
	for _, ch := range [...]*marking.Chain{c.enq, c.deq} {
		if ch != nil {
			cs = append(cs, ch)
		}
	}
	return cs
}
