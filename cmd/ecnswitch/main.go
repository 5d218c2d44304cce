// Command ecnswitch is the userspace ECN switch: it runs the switch on
// AF_XDP ports from a YAML config, validates configs, shows a running
// switch's counters, captures what it marked or dropped, builds the
// network-namespace testbed, load-tests, and checks what the host can do.
//
//	ecnswitch run -c config.yaml        run the switch until SIGINT/SIGTERM (root)
//	ecnswitch validate -c config.yaml   check a config and summarize it
//	ecnswitch stats [--addr] [--json]   live per-port and per-queue counters of a running switch
//	ecnswitch capture start --port P    capture a port of a running switch to pcapng (--filter marked: its CE marks)
//	ecnswitch capture stop ID           stop a capture and print its final counters
//	ecnswitch capture status            list the running captures
//	ecnswitch testbed up -n N           create N hosts in network namespaces, and a config for them (root)
//	ecnswitch testbed down              remove them
//	ecnswitch dctcp load|unload|status  DCTCP for a kernel without it, as BPF struct_ops (root)
//	ecnswitch demo                      the MQ-ECN static-flow demo
//	ecnswitch experiment NAME | list    rerun one of the papers' experiments; report.md and plots to --out (root)
//	ecnswitch bench gen|sink|switch|tcp AF_XDP load generator and sink, the RFC 2544 switch benchmark, real TCP vs testpmd (root)
//	ecnswitch dctcp load|unload|status  DCTCP for a kernel without it, as BPF struct_ops (root)
//	ecnswitch closedloop table          the closed-loop marking experiments in virtual time, into docs/marking.md
//	ecnswitch endpoint recv|send        DX, DCTCP and ECN* endpoints over UDP
//	ecnswitch doctor                    what this host can do for the switch, and how to fix what it cannot
//	ecnswitch version                   the build and the machine
//	ecnswitch completion bash|zsh       a shell completion script
//
// The commands are a tree of command values (commands.go); -h, docs/cli.md,
// the man page docs/ecnswitch.1 and the shell completions are all made
// from it. Rates, sizes and durations are written as in the config
// (995Mbit, 96KB, 250us). examples/ecnswitch.yaml documents every config
// key.
package main

//go:generate go test -run ^TestGeneratedDocs$ . -update

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ecnswitch/ecnswitch/config"
)

// env is what a command reads and writes, so tests can run commands
// in-process.
type env struct {
	stdout, stderr io.Writer
	argv           []string // the arguments ecnswitch was called with, for reports to record
}

// Exit codes, the same for every command (docs/cli.md lists them).
const (
	exitOK    = 0 // the command did what it was asked
	exitFail  = 1 // the command ran and failed; stderr says why
	exitUsage = 2 // bad flags or arguments: nothing was done
)

// exitCodes document the exit codes, for -h, docs/cli.md and the man page.
var exitCodes = []struct {
	code    int
	meaning string
}{
	{exitOK, "success; also -h and --help, which print to stdout"},
	{exitFail, "the command ran and failed (a config that does not validate, a switch that is not running, a missing privilege, a benchmark that broke off; doctor: the host cannot run the switch at all); stderr says why"},
	{exitUsage, "a usage error: an unknown command or flag, a flag value that does not parse (a rate without its unit, say), a missing or extra argument; nothing was done"},
}

func main() {
	os.Exit(ecnswitch(&env{stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:]))
}

// ecnswitch runs the command args name and returns the exit code.
func ecnswitch(e *env, args []string) int {
	e.argv = args
	return commands().run(e, "ecnswitch", args)
}

// commandLine returns the command line as typed, for reports to record.
func (e *env) commandLine() string {
	return strings.TrimSpace("ecnswitch " + strings.Join(e.argv, " "))
}

// fail prints an error the way every command does and returns exitFail.
func (e *env) fail(cmd string, err error) int {
	fmt.Fprintf(e.stderr, "ecnswitch %s: %v\n", cmd, err)
	return exitFail
}

// usageError prints a usage error of the command cmd and returns
// exitUsage.
func (e *env) usageError(cmd, format string, a ...any) int {
	fmt.Fprintf(e.stderr, "ecnswitch %s: %s\n", cmd, fmt.Sprintf(format, a...))
	return exitUsage
}

// loadConfig loads the config of a command that takes -c FILE. When it
// fails it has said why, and returns the exit code.
func loadConfig(e *env, cmd, path string) (*config.Config, int, bool) {
	if path == "" {
		return nil, e.usageError(cmd, "-c FILE is required (Run 'ecnswitch %s --help' for the flags)", cmd), false
	}
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintln(e.stderr, err)
		return nil, exitFail, false
	}
	return cfg, 0, true
}
