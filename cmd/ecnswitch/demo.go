package main

import "fmt"

// demoCmd is a placeholder: the demo (an MQ-ECN static-flow run on a
// testbed, with plots) is being written in its own package, and replaces
// this file.
func demoCmd(e *env, args []string) int {
	fs, _ := e.flagSet("demo", "", "Run the MQ-ECN static-flow demo on a testbed (root).")
	if code, ok := parse(fs, args, 0); !ok {
		return code
	}
	fmt.Fprintln(e.stdout, "ecnswitch demo: the demo is being wired up and is not available in this build yet.")
	fmt.Fprintln(e.stdout, "Meanwhile: ecnswitch testbed up -n 3, then ecnswitch run -c <the config it writes>.")
	return exitFail
}
