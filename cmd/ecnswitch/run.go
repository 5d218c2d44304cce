package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ecnswitch/ecnswitch/node"
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
	if err := node.Preflight(cfg); err != nil {
		return e.fail("run", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
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
