// Package testbed builds the hosts ecnswitch switches between: each host is
// a network namespace wired by a veth pair to the namespace the switch runs
// in, all hosts in one flat L2 subnet of the benchmarking range
// 198.18.0.0/15 (RFC 2544), optionally with IPv6 from 2001:2::/48 (RFC
// 5180). The switch end of each pair is a port for ecnswitch to drive; the
// switch itself has no address, so ARP, NDP and everything else cross it.
//
// Every host is ready for kernel TCP through an AF_XDP forwarder
// (DESIGN.md, "Test hosts and addresses"; notes/afxdp.md): GRO, GSO and TSO
// are off on both ends so frames leave at wire size and fit a UMEM frame,
// and TX checksum offload is off on the host end, because with it on the
// host hands veth CHECKSUM_PARTIAL packets whose checksum an AF_XDP
// forwarder copies unfinished and the receiver drops. Hosts request ECN in
// TCP (net.ipv4.tcp_ecn=1) unless told not to, and default to a congestion
// control that reacts to ECN marks — cubic unless Options.CongestionControl
// says otherwise — rather than the machine's default, which may be bbr and
// ignore them; Testbed.ECNWarning says when the choice leaves the switch's
// marks without effect. dctcp, the papers' transport, is the kernel's
// where it has one and otherwise testbed/dctcp's, a BPF struct_ops
// congestion control that Up registers and the last Down unregisters.
// Options.RTOMin sets the hosts' minimum retransmission timeout
// (net.ipv4.tcp_rto_min_us), which the papers lowered from Linux's 200 ms.
// Options.ECT1Ports makes the hosts' TCP flows of chosen ports L4S on the
// wire: testbed/ect1's tc egress program rewrites their ECT(0) to ECT(1)
// (with dctcp, scalable senders for a DualQ port; Linux 6.18's TCP cannot
// send ECT(1) data itself).
//
// Up records every namespace and interface it creates, as it creates it,
// in a JSON state file, so that Down (in the same process, or in another
// through Load) removes exactly those and nothing else, also after a crash
// or a partial Up. Names carry a unique ID and interface names stay within
// 15 bytes, so concurrent testbeds never collide; testbedtest picks IDs and
// non-overlapping subnets for tests.
//
// Host.Do runs code in a host's namespace; ListenTCP, DialTCP (with a DSCP),
// ListenUDP and DialUDP are built on it, and the bulk sub-package moves bulk
// TCP between hosts.
package testbed
