package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/ports/afxdp"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// Device is the device of one switch port: the interface it drives over
// AF_XDP and the socket's options.
type Device struct {
	Name      string // the switch port's name, for errors and logs
	Interface string
	AFXDP     afxdp.Options // Logger nil: the switch's
}

// Devices returns one Device per interface, each port named after its
// interface, all with opts.
func Devices(ifaces []string, opts afxdp.Options) []Device {
	devs := make([]Device, len(ifaces))
	for i, name := range ifaces {
		devs[i] = Device{Name: name, Interface: name, AFXDP: opts}
	}
	return devs
}

// OpenPorts opens an AF_XDP port on every device's interface, in order,
// and closes those already open if one fails. It is the one place
// ecnswitch opens the ports of a switch. A device whose options name a
// shared UMEM its driver cannot bind on (afxdp.ErrUMEMMode: zero-copy
// beside copy mode) opens with a UMEM of its own instead: frames to and
// from it are then copied.
func OpenPorts(devs []Device, log *zap.Logger) ([]*afxdp.Port, error) {
	var open []*afxdp.Port
	for i, d := range devs {
		opts := d.AFXDP
		if opts.Logger == nil {
			opts.Logger = log
		}
		p, err := afxdp.Open(d.Interface, opts)
		if errors.Is(err, afxdp.ErrUMEMMode) {
			log.Warn("port cannot share the switch's UMEM; it gets its own, and frames to and from it are copied",
				zap.String("port", d.Name), zap.Error(err))
			opts.UMEM = nil
			p, err = afxdp.Open(d.Interface, opts)
		}
		if err != nil {
			closePorts(open, log)
			return nil, fmt.Errorf("ports[%d] (%s): %w", i, d.Name, err)
		}
		info := p.Info()
		log.Info("port open", zap.String("port", d.Name), zap.String("interface", d.Interface),
			zap.Stringer("attach", info.Attach), zap.Bool("zerocopy", info.ZeroCopy), zap.Ints("queues", info.Queues),
			zap.Bool("sharedUMEM", info.SharedUMEM), zap.Stringer("transmit", info.Transmit))
		open = append(open, p)
	}
	return open, nil
}

// sharedUMEM makes the one UMEM of a switch of cfg on devs
// (afxdp.NewSwitchUMEM) and points each device at it: frames then move
// from port to port, and between the ports and the dataplane, without a
// copy. It returns nil when nothing can be shared.
func sharedUMEM(cfg dataplane.Config, devs []Device) (*afxdp.UMEM, error) {
	ifaces := make([]string, len(devs))
	opts := make([]afxdp.Options, len(devs))
	for i, d := range devs {
		ifaces[i], opts[i] = d.Interface, d.AFXDP
	}
	u, err := afxdp.NewSwitchUMEM(ifaces, opts, max(cfg.Workers, 1)*cmp.Or(cfg.Frames, dataplane.DefaultFrames))
	if u != nil {
		for i := range devs {
			devs[i].AFXDP = opts[i]
		}
	}
	return u, err
}

func closePorts(ps []*afxdp.Port, log *zap.Logger) {
	for _, p := range ps {
		if err := p.Close(); err != nil {
			log.Warn("close", zap.String("port", p.Name()), zap.Error(err))
		}
	}
}

// Switch is a switch on AF_XDP ports: the dataplane, the goroutine that
// runs its workers, and the ports, which Stop closes.
type Switch struct {
	*dataplane.Switch
	ports  []*afxdp.Port
	umem   *afxdp.UMEM // shared by the ports and the dataplane; nil if none
	cancel context.CancelFunc
	exited chan struct{} // closed when the workers have stopped
	runErr error         // the workers' error, once exited is closed
}

// Open opens devs and builds the dataplane of cfg over them, port i of
// cfg on devs[i], with clock; the workers do not run until Start. A nil
// logger logs nothing.
func Open(cfg dataplane.Config, devs []Device, clock timestamp.Clock, log *zap.Logger) (*Switch, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if len(devs) != len(cfg.Ports) {
		return nil, fmt.Errorf("node: %d devices for %d configured ports", len(devs), len(cfg.Ports))
	}
	devs = slices.Clone(devs)
	umem, err := sharedUMEM(cfg, devs)
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	closeUMEM := func() {
		if umem != nil {
			if err := umem.Close(); err != nil {
				log.Warn("close UMEM", zap.Error(err))
			}
		}
	}
	xsks, err := OpenPorts(devs, log)
	if err != nil {
		closeUMEM()
		return nil, err
	}
	ps := make([]ports.Port, len(xsks))
	for i, p := range xsks {
		ps[i] = p
	}
	if umem != nil {
		cfg.Memory = umem
	}
	sw, err := dataplane.New(cfg, ps, clock, log.Named("dataplane"))
	if err != nil {
		closePorts(xsks, log)
		closeUMEM()
		return nil, err
	}
	return &Switch{Switch: sw, ports: xsks, umem: umem}, nil
}

// Start starts the workers. They run until Stop, or until one fails
// (Exited). The process gets a P (GOMAXPROCS) per worker on top of one per
// CPU (see dataplane.Switch.Run), so that its other goroutines (the demo's
// hosts, telemetry) keep the CPUs the workers leave them.
func (s *Switch) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.exited = cancel, make(chan struct{})
	reserveProcs(s.Workers())
	go func() {
		s.runErr = s.Run(ctx)
		close(s.exited)
	}()
}

// reserveProcs raises GOMAXPROCS to at least a P per CPU plus one per
// worker. It never lowers it: another switch of the process may still
// run, and an idle P costs nothing.
func reserveProcs(workers int) {
	if need := runtime.NumCPU() + workers; runtime.GOMAXPROCS(0) < need {
		runtime.GOMAXPROCS(need)
	}
}

// Start opens devs, builds cfg over them and starts the workers: Open,
// then Switch.Start.
func Start(cfg dataplane.Config, devs []Device, clock timestamp.Clock, log *zap.Logger) (*Switch, error) {
	s, err := Open(cfg, devs, clock, log)
	if err != nil {
		return nil, err
	}
	s.Start()
	return s, nil
}

// Exited is closed when the workers have stopped: after Stop, or earlier
// if one failed. It is nil before Start.
func (s *Switch) Exited() <-chan struct{} { return s.exited }

// Ports returns the switch's AF_XDP ports in the order of its config.
func (s *Switch) Ports() []*afxdp.Port { return s.ports }

// KernelDrops returns the frames the kernel dropped on the ports' sockets
// before the switch saw them (no fill frame, RX ring full, too large).
func (s *Switch) KernelDrops() uint64 {
	var n uint64
	for _, p := range s.ports {
		n += p.Stats().RxDropped
	}
	return n
}

// Frames returns where each port's UMEM frames are once they are at rest
// (afxdp.FrameAccount.AtRest), or a second has passed: every frame of a
// port's reserve is free or on one of its rings, but those a zero-copy
// driver keeps for receiving and those waiting for a downed link, and
// none was handed back twice (Violations). The workers must have
// stopped: it drives the ports itself.
func (s *Switch) Frames() []afxdp.FrameAccount {
	as := make([]afxdp.FrameAccount, len(s.ports))
	for i, p := range s.ports {
		as[i] = p.Settle(time.Second)
	}
	return as
}

// Close closes the ports, which detaches the XDP programs, and then the
// UMEM they shared with the dataplane. The workers must have stopped.
func (s *Switch) Close() error {
	err := s.Switch.Close()
	if s.umem != nil {
		err = errors.Join(err, s.umem.Close())
		s.umem = nil
	}
	return err
}

// Stop stops the workers, waits for them, and closes the ports, which
// detaches the XDP programs. It returns the workers' error joined with
// the ports'.
func (s *Switch) Stop() error {
	return errors.Join(s.stopWorkers(), s.Close())
}

// stopWorkers stops the workers, if they were started, and returns their
// error.
func (s *Switch) stopWorkers() error {
	if s.cancel == nil {
		return nil
	}
	s.cancel()
	<-s.exited
	return s.runErr
}
