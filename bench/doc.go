// Package bench is ecnswitch's load tester: an AF_XDP traffic generator and
// sink (over any ports.Port; memory ports in tests), and the experiments
// built on them, such as RunSwitch, the RFC 2544 forwarding benchmark.
package bench
