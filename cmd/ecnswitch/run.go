package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/ecnswitch/ecnswitch/capture"
	"github.com/ecnswitch/ecnswitch/config"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/ports/afxdp"
	"github.com/ecnswitch/ecnswitch/telemetry"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

func runCmd(e *env, args []string) int {
	fs, level := e.flagSet("run", "-c FILE", "Run the switch: open an AF_XDP port on each configured interface, start the\n"+
		"workers and the telemetry server, and run until SIGINT or SIGTERM; then stop the\n"+
		"workers, detach the XDP programs, close the sockets and print the final counters.\n"+
		"Needs root, or CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF and CAP_IPC_LOCK.")
	path := fs.String("c", "", "config file (required)")
	cfg, code, ok := loadConfig(e, fs, path, args)
	if !ok {
		return code
	}
	log, err := newLogger(logLevel(*level, cfg.LogLevel), e.stderr)
	if err != nil {
		fmt.Fprintln(e.stderr, "ecnswitch run:", err)
		return exitUsage
	}
	defer log.Sync()
	for _, w := range cfg.Warnings {
		log.Warn("config: " + w)
	}
	if err := preflight(cfg); err != nil {
		return e.fail("run", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, caps, err := serve(ctx, cfg, log, stop)
	if st != nil {
		fmt.Fprintln(e.stdout, "final counters:")
		renderStats(e.stdout, st, nil)
	}
	if len(caps) > 0 {
		fmt.Fprintln(e.stdout, "\ncaptures:")
		renderCaptures(e.stdout, caps)
	}
	if err != nil {
		return e.fail("run", err)
	}
	return exitOK
}

// preflight checks what would otherwise fail halfway through opening
// ports: privileges, the interfaces, the CPUs.
func preflight(cfg *config.Config) error {
	if err := checkPrivileges(); err != nil {
		return err
	}
	var missing []error
	for i, p := range cfg.Ports {
		if _, err := net.InterfaceByName(p.Interface); err != nil {
			missing = append(missing, fmt.Errorf("ports[%d].interface: %q (port %s): no such interface; create it or check the name (ip link show)", i, p.Interface, p.Name))
		}
	}
	if err := errors.Join(missing...); err != nil {
		return err
	}
	return dataplane.CheckCPUs(cfg.Switch.CPUs)
}

// serve opens the ports, runs the switch until ctx is done and tears
// everything down. It returns the final counters once the switch ran, and
// the final status of every capture that was running at the end.
func serve(ctx context.Context, cfg *config.Config, log *zap.Logger, stopSignals func()) (*telemetry.StatsResponse, []capture.Status, error) {
	if cpus := cfg.Switch.CPUs; len(cpus) > 0 {
		if err := pinCPUs(cpus); err != nil {
			return nil, nil, fmt.Errorf("cpus: %w", err)
		}
		log.Info("pinned to CPUs", zap.Ints("cpus", cpus))
	}
	capDir, err := filepath.Abs(cfg.Capture.Dir)
	if err != nil {
		return nil, nil, fmt.Errorf("capture.dir: %w", err)
	}
	devs, err := openPorts(cfg, log)
	if err != nil {
		return nil, nil, err
	}
	dc, err := cfg.Dataplane()
	if err != nil {
		closeAll(devs, log)
		return nil, nil, err
	}
	clock := timestamp.NewMonotonic()
	sw, err := dataplane.New(dc, devs, clock, log.Named("dataplane"))
	if err != nil {
		closeAll(devs, log)
		return nil, nil, err
	}
	defer func() {
		if err := sw.Close(); err != nil {
			log.Error("closing ports", zap.Error(err))
		} else {
			log.Info("ports closed, XDP programs detached")
		}
	}()

	// Captures stop before the ports close (defers run last first), so
	// their files hold everything the workers handed them.
	caps := capture.New(sw, sw.Clock(), capture.Options{Dir: capDir, Log: log.Named("capture")})
	var capStatus []capture.Status
	capsOpen := true
	closeCaptures := func() {
		if capsOpen {
			capsOpen = false
			capStatus = caps.Close()
		}
	}
	defer closeCaptures()
	if err := startCaptures(caps, capDir, cfg.Capture.Captures); err != nil {
		closeCaptures()
		return nil, capStatus, err
	}

	stopTelemetry := func() {}
	defer func() { stopTelemetry() }()
	if cfg.Telemetry.Enabled {
		var tel *telemetry.Server
		tel, err = telemetry.New(sw, telemetry.Options{
			Listen: cfg.Telemetry.Listen, SamplePeriod: cfg.Telemetry.QueueSamplePeriod, Samples: cfg.Telemetry.QueueSamples,
			PoolNames: cfg.Pools, Clock: clock, Logger: log,
		})
		if err == nil {
			tel.Handle("/capture/", caps.Handler())
			warnExposedAPI(cfg.Telemetry.Listen, log)
			err = tel.Start()
		}
		if err != nil {
			return nil, capStatus, err
		}
		stopTelemetry = func() {
			stopTelemetry = func() {}
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if err := tel.Shutdown(sctx); err != nil {
				log.Warn("telemetry shutdown", zap.Error(err))
			}
		}
	} else {
		log.Info("telemetry disabled: no capture API, so 'ecnswitch capture' cannot reach this switch")
	}

	watchCtx, cancelWatch := context.WithCancel(ctx)
	defer cancelWatch()
	ifaces := map[string]string{}
	for _, p := range cfg.Ports {
		ifaces[p.Interface] = p.Name
	}
	if err := watchLinks(watchCtx, ifaces, log); err != nil {
		log.Warn("not watching link state", zap.Error(err))
	}

	log.Info("ecnswitch running; SIGINT or SIGTERM stops it", zap.Strings("ports", cfg.PortNames()))
	runErr := make(chan error, 1)
	go func() { runErr <- sw.Run(ctx) }()
	var rerr error
	select {
	case rerr = <-runErr:
	case <-ctx.Done():
		log.Info("signal received; stopping workers")
		stopSignals() // a second signal kills the process
		rerr = <-runErr
	}
	st := telemetry.StatsResponse{TimeNS: clock.Now(), Stats: sw.Stats(), PoolNames: cfg.Pools}
	// The API first, so that no capture starts after the Manager closed.
	stopTelemetry()
	closeCaptures()
	return &st, capStatus, rerr
}

// openPorts opens an AF_XDP port per configured port, closing those
// already open if one fails.
func openPorts(cfg *config.Config, log *zap.Logger) ([]ports.Port, error) {
	var devs []ports.Port
	for i, p := range cfg.Ports {
		opts := p.AFXDP
		opts.Logger = log
		dev, err := afxdp.Open(p.Interface, opts)
		if err != nil {
			closeAll(devs, log)
			return nil, fmt.Errorf("ports[%d] (%s): %w", i, p.Name, err)
		}
		info := dev.Info()
		log.Info("port open", zap.String("port", p.Name), zap.String("interface", p.Interface),
			zap.Stringer("attach", info.Attach), zap.Bool("zerocopy", info.ZeroCopy), zap.Ints("queues", info.Queues))
		devs = append(devs, dev)
	}
	return devs, nil
}

func closeAll(devs []ports.Port, log *zap.Logger) {
	for _, d := range devs {
		if err := d.Close(); err != nil {
			log.Warn("close", zap.String("port", d.Name()), zap.Error(err))
		}
	}
}
