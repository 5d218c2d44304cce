package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/user"
	"path/filepath"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/ecnswitch/ecnswitch/capture"
	"github.com/ecnswitch/ecnswitch/config"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/internal/httpguard"
	"github.com/ecnswitch/ecnswitch/telemetry"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// Final is what a daemon leaves behind: its counters once the workers
// stopped, and the final status of every capture that was running.
type Final struct {
	Stats    *telemetry.StatsResponse // nil when the switch never ran
	Captures []capture.Status
}

// Preflight checks what would otherwise fail halfway through opening the
// ports of cfg: privileges, the interfaces, the CPUs.
func Preflight(cfg *config.Config) error {
	if err := CheckPrivileges(); err != nil {
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

// devices returns the devices of cfg's ports.
func devices(cfg *config.Config) []Device {
	devs := make([]Device, len(cfg.Ports))
	for i, p := range cfg.Ports {
		devs[i] = Device{Name: p.Name, Interface: p.Interface, AFXDP: p.AFXDP}
	}
	return devs
}

// Run is the daemon: it runs the switch of cfg, with its captures,
// telemetry, runtime control and link watch, until ctx is done or the
// workers stop, then shuts everything down in order (see the package doc).
// Each receive from reload reads cfg's file again and applies what changed
// (Runtime.Reload; SIGHUP in `ecnswitch run`); a nil reload never does.
// It returns the final counters once the switch ran, and the final status
// of every capture.
func Run(ctx context.Context, cfg *config.Config, log *zap.Logger, reload <-chan struct{}) (fin Final, err error) {
	if cpus := cfg.Switch.CPUs; len(cpus) > 0 {
		if err := pinCPUs(cpus); err != nil {
			return fin, fmt.Errorf("cpus: %w", err)
		}
		log.Info("pinned to CPUs", zap.Ints("cpus", cpus))
	}
	capDir, err := filepath.Abs(cfg.Capture.Dir)
	if err != nil {
		return fin, fmt.Errorf("capture.dir: %w", err)
	}
	dc, err := cfg.Dataplane()
	if err != nil {
		return fin, err
	}
	clock := timestamp.NewMonotonic()
	sw, err := Open(dc, devices(cfg), clock, log)
	if err != nil {
		return fin, err
	}
	defer func() {
		if cerr := sw.Close(); cerr != nil {
			log.Error("closing ports", zap.Error(cerr))
		} else {
			log.Info("ports closed, XDP programs detached")
		}
	}()

	rt := NewRuntime(cfg, sw.Switch, log)
	caps := capture.New(sw.Switch, sw.Clock(), capture.Options{
		Dir: capDir, Quota: cfg.Capture.Quota, RingMemory: cfg.Capture.RingMemory, Log: log.Named("capture"),
	})
	closeCaptures := func() {
		if caps != nil {
			fin.Captures, caps = caps.Close(), nil
		}
	}
	defer closeCaptures()
	if err := startCaptures(caps, cfg.Capture.Captures); err != nil {
		return fin, err
	}
	stopTelemetry, err := serveTelemetry(cfg, sw, clock, rt, log)
	if err != nil {
		return fin, err
	}
	defer stopTelemetry()
	stopControl, err := serveControl(cfg, caps, rt, log)
	if err != nil {
		return fin, err
	}
	defer stopControl()

	watchCtx, cancelWatch := context.WithCancel(ctx)
	defer cancelWatch()
	ifaces := map[string]string{}
	for _, p := range cfg.Ports {
		ifaces[p.Interface] = p.Name
	}
	gone := make(chan error, 1)
	if err := watchLinks(watchCtx, ifaces, log, func(err error) {
		select {
		case gone <- err:
		default:
		}
	}); err != nil {
		log.Warn("not watching link state", zap.Error(err))
	}

	log.Info("ecnswitch running; SIGINT or SIGTERM stops it, SIGHUP reloads its config", zap.Strings("ports", cfg.PortNames()))
	sw.Start()
	var goneErr error
wait:
	for {
		select {
		case <-sw.Exited():
			break wait
		case <-ctx.Done():
			log.Info("stopping workers")
			break wait
		case goneErr = <-gone:
			log.Error("a port's interface is gone; stopping", zap.Error(goneErr))
			break wait
		case <-reload:
			log.Info("reloading the config", zap.String("file", cfg.Path()))
			if recs, err := rt.Reload(ctx); err != nil {
				log.Error("config reload refused; the switch keeps running with its settings", zap.Error(err))
			} else {
				log.Info("config reloaded", zap.Int("changes", len(recs)))
			}
		}
	}
	runErr := errors.Join(sw.stopWorkers(), goneErr)
	for i, a := range sw.Frames() {
		lvl := zap.InfoLevel
		if a.Violations != 0 || !a.AtRest() {
			lvl = zap.ErrorLevel
		}
		log.Log(lvl, "UMEM frames at stop", zap.String("port", cfg.Ports[i].Name), zap.Int("total", a.Total), zap.Int("free", a.Free),
			zap.Int("fill", a.Fill), zap.Int("rx", a.Rx), zap.Int("tx", a.Tx), zap.Int("completion", a.Completion),
			zap.Int("in_kernel", a.InKernel()), zap.Int("driver", a.Driver), zap.Bool("link_down", a.LinkDown),
			zap.Uint64("violations", a.Violations))
	}
	fin.Stats = &telemetry.StatsResponse{TimeNS: clock.Now(), Stats: sw.Stats(), PoolNames: cfg.Pools}
	// The APIs first, so that no capture starts after the Manager closed.
	stopTelemetry()
	stopControl()
	closeCaptures()
	return fin, runErr
}

// startCaptures starts the captures the config lists; the Manager creates
// the directory and the sub-directories their paths name.
func startCaptures(m *capture.Manager, specs []capture.Spec) error {
	for i, s := range specs {
		if _, err := m.Start(s); err != nil {
			return fmt.Errorf("capture.captures[%d]: %w", i, err)
		}
	}
	return nil
}

// serveTelemetry starts the telemetry server of cfg, read-only, whose
// /stats reports rt's running settings, and returns the function that
// shuts it down (once).
func serveTelemetry(cfg *config.Config, sw *Switch, clock timestamp.Clock, rt *Runtime, log *zap.Logger) (stop func(), err error) {
	t := cfg.Telemetry
	if !t.Enabled {
		log.Info("telemetry disabled")
		return func() {}, nil
	}
	tel, err := telemetry.New(sw.Switch, telemetry.Options{
		Listen: t.Listen, SamplePeriod: t.QueueSamplePeriod, Samples: t.QueueSamples,
		PoolNames: cfg.Pools, Clock: clock, Logger: log, Hosts: t.Hosts,
		Config: func() any { return rt.Running() },
	})
	if err != nil {
		return nil, err
	}
	warnExposedAPI(t.Listen, log)
	if err := tel.Start(); err != nil {
		return nil, err
	}
	return once(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := tel.Shutdown(ctx); err != nil {
			log.Warn("telemetry shutdown", zap.Error(err))
		}
	}), nil
}

// serveControl serves the capture API and runtime control (rt's Handler)
// on cfg's control socket, whose file mode (0600, or 0660 with
// control.group) decides who may start and stop captures and change the
// running switch, and returns the function that shuts it down (once) and
// removes the socket.
func serveControl(cfg *config.Config, caps *capture.Manager, rt *Runtime, log *zap.Logger) (stop func(), err error) {
	c := cfg.Control
	if c.Socket == "" {
		log.Info("no control socket (control.socket is empty): 'ecnswitch capture', 'set' and 'get' cannot reach this switch")
		return func() {}, nil
	}
	gid := -1
	if c.Group != "" {
		if gid, err = lookupGroup(c.Group); err != nil {
			return nil, fmt.Errorf("control.group: %w", err)
		}
	}
	ln, err := httpguard.ListenUnix(c.Socket, gid)
	if err != nil {
		return nil, fmt.Errorf("control.socket: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/capture/", caps.Handler())
	rh := rt.Handler()
	mux.Handle("/config", rh)
	mux.Handle("/config/", rh)
	srv := httpguard.NewServer(httpguard.Guard(mux, httpguard.AllowHosts()), httpguard.Timeouts{}, zap.NewStdLog(log.Named("control")))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("control socket", zap.Error(err))
		}
	}()
	mode := "0600"
	if gid >= 0 {
		mode = "0660, group " + c.Group
	}
	log.Info("control socket listening", zap.String("socket", c.Socket), zap.String("mode", mode))
	return once(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			log.Warn("control socket shutdown", zap.Error(err))
		}
		<-done
	}), nil
}

// lookupGroup returns the id of a group given by name or number.
func lookupGroup(g string) (int, error) {
	if n, err := strconv.Atoi(g); err == nil {
		return n, nil
	}
	gr, err := user.LookupGroup(g)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(gr.Gid)
}

// once returns a function that calls f the first time only.
func once(f func()) func() {
	done := false
	return func() {
		if !done {
			done = true
			f()
		}
	}
}

// warnExposedAPI warns when the telemetry server listens beyond the
// loopback interface.
func warnExposedAPI(listen string, log *zap.Logger) {
	host, _, err := net.SplitHostPort(listen)
	if err != nil || host == "localhost" {
		return
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return
	}
	log.Warn("telemetry listens beyond loopback: anyone who reaches it can read the switch's counters and queue depths (control stays on the socket)",
		zap.String("listen", listen))
}
