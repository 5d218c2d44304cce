package node

import (
	"context"
	"errors"
	"fmt"

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
// ecnswitch opens the ports of a switch.
func OpenPorts(devs []Device, log *zap.Logger) ([]*afxdp.Port, error) {
	var open []*afxdp.Port
	for i, d := range devs {
		opts := d.AFXDP
		if opts.Logger == nil {
			opts.Logger = log
		}
		p, err := afxdp.Open(d.Interface, opts)
		if err != nil {
			closePorts(open, log)
			return nil, fmt.Errorf("ports[%d] (%s): %w", i, d.Name, err)
		}
		info := p.Info()
		log.Info("port open", zap.String("port", d.Name), zap.String("interface", d.Interface),
			zap.Stringer("attach", info.Attach), zap.Bool("zerocopy", info.ZeroCopy), zap.Ints("queues", info.Queues))
		open = append(open, p)
	}
	return open, nil
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
	xsks, err := OpenPorts(devs, log)
	if err != nil {
		return nil, err
	}
	ps := make([]ports.Port, len(xsks))
	for i, p := range xsks {
		ps[i] = p
	}
	sw, err := dataplane.New(cfg, ps, clock, log.Named("dataplane"))
	if err != nil {
		closePorts(xsks, log)
		return nil, err
	}
	return &Switch{Switch: sw, ports: xsks}, nil
}

// Start starts the workers. They run until Stop, or until one fails
// (Exited).
func (s *Switch) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.exited = cancel, make(chan struct{})
	go func() {
		s.runErr = s.Run(ctx)
		close(s.exited)
	}()
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
