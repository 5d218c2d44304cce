// Package node runs one switch: it opens the AF_XDP ports, builds the
// dataplane over them, starts the workers, and stops everything in order.
// It is the one place ecnswitch gets a running switch from:
//
//   - Run is the daemon, `ecnswitch run`: a switch of a config file with
//     its captures, its read-only telemetry server on TCP, its control
//     socket (the capture API and runtime control, on a UNIX socket whose
//     file mode decides who may use it) and a watch on its links, until
//     the context is done or a port's interface is deleted (an error then
//     names it: its sockets and XDP program went with it, and a restart
//     picks up a successor).
//   - Runtime is runtime control: the daemon's running config, which
//     `ecnswitch set` and a reload of the file (SIGHUP) change through one
//     path (config.Set or config.Load, then config.Changes), applied by the
//     workers between two passes; `ecnswitch get` and /stats read it.
//   - Demo and BenchSwitch run the demo and the switch benchmark, each of
//     which starts and stops switches of its own configs through Start.
//
// OpenPorts is the one function that opens the AF_XDP ports of a switch.
//
// Shutdown runs in the reverse order of start-up: the telemetry server and
// the control socket first (so that no capture starts after the captures
// closed), then the captures (so that their files hold everything the
// workers handed them), then the workers, then the ports, which detaches
// the XDP programs.
package node
