package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

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
			"SIGHUP reloads the config file: what can change while the switch runs (markers,\n" +
			"weights, rates, α: see 'ecnswitch set') is applied; anything else (ports added or\n" +
			"removed, queue counts, workers) is refused, naming the key, and the switch keeps\n" +
			"running as it was. Needs root, or CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF and CAP_IPC_LOCK.",
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
	reload, restore := hangups()
	defer restore()
	unwatch := context.AfterFunc(ctx, func() {
		log.Info("signal received; a second one kills the process")
		stop() // a second signal kills the process
	})
	defer unwatch()
	fin, err := node.Run(ctx, cfg, log, reload)
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

// hangups turns each SIGHUP (systemctl reload, kill -HUP), which would
// kill the process by default, into a receive on reload, for node.Run to
// reload the config. SIGHUPs that come while a reload waits are one
// reload. It returns the function that restores the default.
func hangups() (reload <-chan struct{}, restore func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	out := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				select {
				case out <- struct{}{}:
				default: // one is waiting already
				}
			case <-done:
				return
			}
		}
	}()
	return out, func() {
		signal.Stop(hup)
		close(done)
	}
}
