package main

import (
	"encoding/json"
	"flag"
	"fmt"

	"github.com/ecnswitch/ecnswitch/internal/buildinfo"
)

// commands returns ecnswitch's command tree.
func commands() *command {
	return &command{
		name: "ecnswitch",
		help: "ecnswitch is a userspace switch on AF_XDP ports for datacenter ECN research: it queues,\n" +
			"schedules, shapes and marks real traffic as the papers' switches do.",
		subs: []*command{
			runCommand(),
			validateCommand(),
			statsCommand(),
			captureCommand(),
			setCommand(),
			getCommand(),
			testbedCommand(),
			dctcpCommand(),
			demoCommand(),
			experimentCommand(),
			benchCommand(),
			closedloopCommand(),
			endpointCommand(),
			doctorCommand(),
			versionCommand(),
			completionCommand(),
		},
	}
}

// versionCommand is `ecnswitch version`, also `ecnswitch --version`.
func versionCommand() *command {
	return &command{
		name: "version", synopsis: "[--json]",
		summary: "print the build (version, VCS revision, Go) and the machine (kernel, CPU model)",
		help: "Print the module version and the VCS revision the binary was built from (with\n" +
			"\"modified\" if the work tree had uncommitted changes), the commit time, the Go\n" +
			"version, and this machine's kernel release and CPU model: what every report,\n" +
			"JSON output and pcapng section header of ecnswitch records.",
		setup: func(fs *flag.FlagSet) action {
			asJSON := fs.Bool("json", false, "print it as JSON")
			return func(e *env, _ []string) int {
				i := buildinfo.Read()
				if !*asJSON {
					writeVersion(e.stdout, i)
					return exitOK
				}
				b, err := json.MarshalIndent(i, "", "  ")
				if err != nil {
					return e.fail("version", err)
				}
				fmt.Fprintf(e.stdout, "%s\n", b)
				return exitOK
			}
		},
	}
}
