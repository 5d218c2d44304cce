// Package integration holds ecnswitch's end-to-end tests: the switch of
// package dataplane on AF_XDP ports (ports/afxdp) drives the switch ends of
// a testbed (package testbed), and real kernel traffic — ARP, NDP, ICMP,
// UDP and TCP over IPv4 and IPv6 — crosses it between network namespaces.
// The tests need root and skip without it; every host, port and switch they
// make is removed in t.Cleanup.
//
// The package has no API: only this file is not a test.
package integration
