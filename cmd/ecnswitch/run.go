package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"go.uber.org/zap"

	"github.com/ecnswitch/ecnswitch/config"
	"github.com/ecnswitch/ecnswitch/node"
)

// runCommand is `ecnswitch run`: the switch of a config file, until
// SIGINT or SIGTERM.
func runCommand() *command {
	return &command{
		name: "run", synopsis: "-c FILE [flags]", short: map[string]string{"c": "config"},
		summary: "run the switch on the config's ports until SIGINT/SIGTERM (root)",
		help: "Run the switch: open an AF_XDP port on each configured interface, start the\n" +
			"workers and the telemetry server, and run until SIGINT or SIGTERM; then stop the\n" +
			"workers, detach the XDP programs, close the sockets and print the final counters.\n" +
			"SIGHUP is logged and ignored: the switch does not reload its config; restart it.\n" +
			"Needs root, or CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF and CAP_IPC_LOCK.",
		setup: runSetup,
	}
}

func runSetup(fs *flag.FlagSet) action {
	path := fs.String("config", "", "config `FILE` (required)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile (pprof) of the whole run to `FILE`")
	level := logLevelFlag(fs, "", "log level: debug, info, warn or error (default: the config's log_level, else info)")
	return func(e *env, _ []string) int {
		cfg, code, ok := loadConfig(e, "run", *path)
		if !ok {
			return code
		}
		return runSwitch(e, cfg, *level, *cpuProfile)
	}
}

// runSwitch runs the switch of cfg until SIGINT or SIGTERM.
func runSwitch(e *env, cfg *config.Config, level, cpuProfile string) int {
	if cpuProfile != "" {
		stop, err := startCPUProfile(cpuProfile)
		if err != nil {
			return e.fail("run", err)
		}
		defer func() {
			if err := stop(); err != nil {
				e.fail("run", err)
			}
		}()
	}
	log, err := newLogger(logLevel(level, cfg.LogLevel), e.stderr)
	if err != nil {
		fmt.Fprintln(e.stderr, "ecnswitch run:", err)
		return exitUsage
	}
	defer log.Sync()
	for _, w := range cfg.Warnings {
		log.Warn("config: " + w)
	}
	if err := node.Preflight(cfg); err != nil {
		return e.fail("run", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer ignoreHangups(log)()
	unwatch := context.AfterFunc(ctx, func() {
		log.Info("signal received; a second one kills the process")
		stop() // a second signal kills the process
	})
	defer unwatch()
	fin, err := node.Run(ctx, cfg, log)
	if fin.Stats != nil {
		fmt.Fprintln(e.stdout, "final counters:")
		renderStats(e.stdout, fin.Stats, nil)
	}
	if len(fin.Captures) > 0 {
		fmt.Fprintln(e.stdout, "\ncaptures:")
		renderCaptures(e.stdout, fin.Captures)
	}
	if err != nil {
		return e.fail("run", err)
	}
	return exitOK
}

// startCPUProfile starts writing a CPU profile to path; stop ends it and
// closes the file.
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpuprofile %s: %w", path, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("cpuprofile: %w", err)
		}
		return nil
	}, nil
}

// ignoreHangups keeps SIGHUP, which would kill the process by default (a
// closed terminal, say, or a reload a service manager was told to send),
// from stopping the switch: ecnswitch has no config reload, because a
// changed pipeline needs new queues, buffers and sockets, so it logs each
// SIGHUP, naming what to do instead, and carries on. It returns the
// function that restores the default.
func ignoreHangups(log *zap.Logger) (restore func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				log.Warn("SIGHUP ignored: ecnswitch does not reload its config; restart it to apply a change (systemctl restart ecnswitch)")
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
	}
}
