package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/ecnswitch/ecnswitch/node"
	"github.com/ecnswitch/ecnswitch/testbed"
	"github.com/ecnswitch/ecnswitch/testbed/dctcp"
)

// cliHolder is the hold `ecnswitch dctcp load` takes, and unload releases.
const cliHolder = "cli"

// dctcpCommand is `ecnswitch dctcp`: DCTCP for a kernel without it.
func dctcpCommand() *command {
	return &command{
		name: dctcp.Name, synopsis: "load | unload [--force] | status", // named after the congestion control
		summary: "DCTCP for a kernel without it: ecnswitch's, as BPF struct_ops (root)",
		help: "DCTCP for this kernel's TCP: where the kernel has no dctcp, ecnswitch's, loaded as\n" +
			"BPF struct_ops and pinned in bpffs (" + dctcp.DefaultPinDir + "). Needs root.",
		subs: []*command{
			{name: "load", synopsis: "[flags]", summary: "make dctcp available to every network namespace",
				help: "Make the congestion control dctcp available: the kernel's if it has one (loading\n" +
					"its module), else ecnswitch's BPF DCTCP, registered and pinned so that it outlives\n" +
					"this command. Adds dctcp to net.ipv4.tcp_allowed_congestion_control, so that any\n" +
					"network namespace may make it its default. 'ecnswitch dctcp unload' undoes it. Needs root.",
				setup: dctcpLoadSetup},
			{name: "unload", synopsis: "[--force]", summary: "release what 'dctcp load' holds",
				help: "Release what 'ecnswitch dctcp load' holds. ecnswitch's BPF DCTCP is unregistered\n" +
					"when no testbed holds it too; --force unregisters it whoever holds it. Sockets\n" +
					"and namespaces that use it keep it until they close. Needs root.",
				setup: dctcpUnloadSetup},
			{name: "status", synopsis: "[flags]", summary: "say where dctcp comes from and who holds it",
				help:  "Say where this kernel's dctcp comes from and, for ecnswitch's BPF DCTCP, who holds it.",
				setup: dctcpStatusSetup},
		},
	}
}

func dctcpLoadSetup(fs *flag.FlagSet) action {
	level := logLevelFlag(fs, "info", "")
	return func(e *env, _ []string) int {
		log, err := newLogger(*level, e.stderr)
		if err != nil {
			return e.usageError("dctcp load", "%v", err)
		}
		if err := node.CheckPrivileges(); err != nil {
			return e.fail("dctcp load", err)
		}
		src, err := dctcp.Acquire(cliHolder, dctcp.Options{Logger: log})
		if err != nil {
			return e.fail("dctcp load", err)
		}
		added, err := testbed.AllowCongestionControl(dctcp.Name)
		if err != nil {
			return e.fail("dctcp load", fmt.Errorf("allow %s: %w", dctcp.Name, err))
		}
		if err := printDCTCP(e, dctcp.Options{Logger: log}); err != nil {
			return e.fail("dctcp load", err)
		}
		if added {
			fmt.Fprintf(e.stdout, "allowed  added %s to net.ipv4.tcp_allowed_congestion_control\n", dctcp.Name)
		}
		if src == dctcp.BPF {
			fmt.Fprintf(e.stdout, "\nuse it:   sysctl -w net.ipv4.tcp_congestion_control=%s   (per namespace), or TCP_CONGESTION per socket\n", dctcp.Name)
			fmt.Fprintln(e.stdout, "unload:   ecnswitch dctcp unload")
		}
		return exitOK
	}
}

func dctcpUnloadSetup(fs *flag.FlagSet) action {
	force := fs.Bool("force", false, "unregister it even while testbeds hold it")
	level := logLevelFlag(fs, "info", "")
	return func(e *env, _ []string) int { return dctcpUnload(e, *force, *level) }
}

func dctcpUnload(e *env, force bool, level string) int {
	log, err := newLogger(level, e.stderr)
	if err != nil {
		return e.usageError("dctcp unload", "%v", err)
	}
	if err := node.CheckPrivileges(); err != nil {
		return e.fail("dctcp unload", err)
	}
	o := dctcp.Options{Logger: log}
	st, err := dctcp.Stat(o)
	if err != nil {
		return e.fail("dctcp unload", err)
	}
	if st.Source != dctcp.BPF {
		fmt.Fprintf(e.stdout, "dctcp    %s: not ecnswitch's, nothing to unload\n", describeSource(st.Source))
		return exitOK
	}
	if force {
		held, err := dctcp.Unload(o)
		if err != nil {
			return e.fail("dctcp unload", err)
		}
		fmt.Fprintf(e.stdout, "dctcp    unregistered (it was held by %s)\n", strings.Join(held, ", "))
		return exitOK
	}
	unloaded, err := dctcp.Release(cliHolder, o)
	if err != nil {
		return e.fail("dctcp unload", err)
	}
	if unloaded {
		fmt.Fprintln(e.stdout, "dctcp    unregistered")
		return exitOK
	}
	left := slices.DeleteFunc(st.Holders, func(h string) bool { return h == cliHolder })
	fmt.Fprintf(e.stdout, "dctcp    still registered: held by %s (testbed down releases a testbed's hold; --force unregisters it now)\n",
		strings.Join(left, ", "))
	return exitOK
}

func dctcpStatusSetup(fs *flag.FlagSet) action {
	level := logLevelFlag(fs, "info", "")
	return func(e *env, _ []string) int {
		log, err := newLogger(*level, e.stderr)
		if err != nil {
			return e.usageError("dctcp status", "%v", err)
		}
		if err := printDCTCP(e, dctcp.Options{Logger: log}); err != nil {
			return e.fail("dctcp status", err)
		}
		return exitOK
	}
}

// printDCTCP prints where dctcp comes from, who holds it, and whether
// network namespaces may make it their default.
func printDCTCP(e *env, o dctcp.Options) error {
	st, err := dctcp.Stat(o)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "dctcp    %s\n", describeSource(st.Source))
	if st.Source == dctcp.BPF {
		fmt.Fprintf(e.stdout, "holders  %s   (pins in %s/holders; bpftool link show id %d)\n",
			strings.Join(st.Holders, ", "), dctcp.DefaultPinDir, st.Link)
	}
	if st.Source != dctcp.Missing {
		b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
		if err != nil {
			return err
		}
		if !slices.Contains(strings.Fields(string(b)), dctcp.Name) {
			fmt.Fprintf(e.stdout, "allowed  no: only the initial network namespace may default to it (ecnswitch dctcp load allows it)\n")
		}
	}
	return nil
}

func describeSource(s dctcp.Source) string {
	switch s {
	case dctcp.Missing:
		return "not registered: this kernel has no dctcp ('ecnswitch dctcp load' registers ecnswitch's)"
	case dctcp.Kernel:
		return "the kernel's own (tcp_dctcp)"
	case dctcp.BPF:
		return "ecnswitch's BPF struct_ops DCTCP (testbed/dctcp)"
	}
	return "registered by another BPF program, not ecnswitch's"
}
