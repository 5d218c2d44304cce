// Command ecnswitch is the userspace ECN switch: it runs the switch on
// AF_XDP ports from a YAML config, validates configs, shows a running
// switch's counters, captures what it marked or dropped, builds the
// network-namespace testbed, and load-tests.
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
//	ecnswitch closedloop table          the closed-loop marking experiments in virtual time, into docs/marking.md
//
// Every subcommand takes --log-level (debug, info, warn, error).
// examples/ecnswitch.yaml documents every config key.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ecnswitch/ecnswitch/config"
	"github.com/ecnswitch/ecnswitch/testbed/dctcp"
)

// env is what a subcommand reads and writes, so tests can run commands
// in-process.
type env struct {
	stdout, stderr io.Writer
}

// command is one subcommand.
type command struct {
	name, args, help string
	run              func(e *env, args []string) int
}

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // the command ran and failed
	exitUsage = 2 // bad flags or arguments
)

func commands() []command {
	return []command{
		{"run", "-c FILE", "run the switch on the config's ports until SIGINT/SIGTERM", runCmd},
		{"validate", "-c FILE", "check a config and print a summary", validateCmd},
		{"stats", "[--addr HOST:PORT] [--json] [--interval D]", "show a running switch's counters, refreshed like top", statsCmd},
		{"capture", "start --port P [flags] | stop ID | status [--socket PATH] [--json]", "capture a running switch's packets (e.g. --filter marked) to pcapng or pcap", captureCmd},
		{"testbed", "up -n N [--state FILE] | down [--state FILE]", "create or remove hosts in network namespaces", testbedCmd},
		{dctcp.Name, "load | unload [--force] | status", "DCTCP for a kernel without it: ecnswitch's, as BPF struct_ops", dctcpCmd},
		{"demo", "", "run the MQ-ECN static-flow demo on a testbed", demoCmd},
		{"experiment", "NAME | list [flags]", "rerun one of the papers' experiments on a testbed: report.md and plots", experimentCmd},
		{"bench", "gen | sink | switch | tcp | cacheline [flags]", "AF_XDP traffic generator and sink, and benchmarks against DPDK testpmd, OVS and a Linux bridge", benchCmd},
		{"closedloop", "table [flags]", "rerun the closed-loop marking experiments in virtual time; rewrite docs/marking.md's table", closedloopCmd},
		{"endpoint", "recv [flags] | send --to ADDR:PORT [flags]", "DX, DCTCP and ECN* endpoints over UDP (transport/udp): a receiver, and senders that log each flow", endpointCmd},
	}
}

func main() {
	os.Exit(ecnswitch(&env{stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:]))
}

// ecnswitch dispatches args to a subcommand and returns the exit code.
func ecnswitch(e *env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(e.stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(e, args[1:])
		}
	}
	fmt.Fprintf(e.stderr, "ecnswitch: unknown command %q\n\n", args[0])
	usage(e.stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: ecnswitch COMMAND [flags]")
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n  %9s %s\n", c.name, c.args, "", c.help)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'ecnswitch COMMAND -h' for a command's flags; examples/ecnswitch.yaml documents the config.")
}

// flagSet returns a FlagSet for a subcommand that prints its usage to
// e.stderr, with the --log-level flag every command has.
func (e *env) flagSet(name, args, help string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("ecnswitch "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: ecnswitch %s %s\n\n%s\n\nflags:\n", name, args, help)
		fs.PrintDefaults()
	}
	level := fs.String("log-level", "", "log level: debug, info, warn, error (default: the config's log_level, else info)")
	return fs, level
}

// parse parses a subcommand's flags, rejecting positional arguments when
// maxArgs is 0. It returns false with the exit code when the command
// should stop.
func parse(fs *flag.FlagSet, args []string, maxArgs int) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return exitOK, false
		}
		return exitUsage, false
	}
	if fs.NArg() > maxArgs {
		fmt.Fprintf(fs.Output(), "%s: unexpected arguments: %s\n", fs.Name(), strings.Join(fs.Args()[maxArgs:], " "))
		fs.Usage()
		return exitUsage, false
	}
	return exitOK, true
}

// fail prints an error the way every command does and returns exitFail.
func (e *env) fail(cmd string, err error) int {
	fmt.Fprintf(e.stderr, "ecnswitch %s: %v\n", cmd, err)
	return exitFail
}

// loadConfig parses the flags of a command that takes -c FILE and loads
// the config. When it fails it has said why, and returns the exit code.
func loadConfig(e *env, fs *flag.FlagSet, path *string, args []string) (*config.Config, int, bool) {
	if code, ok := parse(fs, args, 0); !ok {
		return nil, code, false
	}
	if *path == "" {
		fmt.Fprintf(e.stderr, "%s: -c FILE is required\n", fs.Name())
		fs.Usage()
		return nil, exitUsage, false
	}
	cfg, err := config.Load(*path)
	if err != nil {
		fmt.Fprintln(e.stderr, err)
		return nil, exitFail, false
	}
	return cfg, 0, true
}
