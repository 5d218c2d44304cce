// Package ect1 makes a testbed host's TCP flows L4S-capable on the wire:
// a tc egress program (tcx, Linux ≥ 6.6) on the host's interface rewrites
// the ECN field of the host's TCP packets from ECT(0) to ECT(1) when
// their source or destination port is one of the chosen ports (AnyPort:
// every TCP packet), with the IPv4 header checksum updated incrementally
// (bpf_l3_csum_replace, RFC 1624). IPv6 packets change their traffic class
// and have no header checksum; the TCP checksum covers neither.
//
// An L4S sender marks its packets ECT(1) (RFC 9331 §4.1) and a DualQ
// Coupled AQM classifies them into its L queue by it (RFC 9332 §2.3).
// Linux 6.18 gives a TCP congestion control no way to send ECT(1) data.
// Measured on it while testbed/dctcp was built: a BPF struct_ops
// congestion control may set flag bits 0–4 (bit 2 TCP_CONG_NEEDS_ACCECN,
// 3 TCP_CONG_ECT_1_NEGOTIATION, 4 TCP_CONG_NO_FALLBACK_RFC3168), and with
// TCP_CONG_NEEDS_ECN and TCP_CONG_ECT_1_NEGOTIATION only the SYN and
// SYN-ACK leave with ECT(1) while data stay ECT(0)
// (tcp_init_congestion_control calls INET_ECN_xmit); IP_TOS cannot set a
// TCP socket's ECN bits (the kernel masks them for stream sockets:
// testbed's TestDialSetsDSCPAndKeepsECT), and a BPF program cannot write
// the socket's tos. So the codepoint is set after the stack, here:
// testbed's TestECT1Hosts sees every packet of a chosen dctcp flow leave
// ECT(1), both ways and the SYN included, with valid IPv4 checksums, and
// the flow keep ECN and dctcp.
// With testbed/dctcp's DCTCP as the congestion control, such a flow is a
// scalable sender in RFC 9331 §4.3's sense: ECT(1), a window reduction in
// proportion to the marked fraction once per round trip (α), which is
// TCP Prague's base. It lacks Prague's other parts (RTT independence,
// pacing below the window, AccECN feedback).
//
// Packets that are not ECT(0) pass as they are, so a CE mark is never
// taken away; packets of other ports are not touched. The program returns
// TCX_NEXT, leaving the packet to whatever else the interface runs.
//
// A Rewriter lives as long as its process holds it, or, once pinned in
// bpffs, until its pin is removed; a testbed pins one per host under
// DefaultPinDir and removes the pins when it goes down. The interface
// going away detaches it too.
//
// The object is built by bpf2go (go generate, with clang and libbpf-dev's
// headers: scripts/deps.sh --dev) and committed with its Go bindings, so
// building needs no clang. Its one kernel type, struct __sk_buff, comes
// from bpf/ect1.h and is relocated against the running kernel's BTF.
package ect1
