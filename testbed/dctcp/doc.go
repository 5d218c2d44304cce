// Package dctcp gives a kernel built without tcp_dctcp a DCTCP congestion
// control named "dctcp", loaded as a BPF struct_ops tcp_congestion_ops, so
// that testbed hosts run the transport the papers ran (DCTCP, Alizadeh et
// al., SIGCOMM 2010): α ← (1−g)·α + g·F once per window of data, with F
// the window's marked fraction and g = 1/16, and cwnd ← cwnd·(1 − α/2) on
// an ECN echo. bpf/dctcp.c is the program, written after Linux's
// net/ipv4/tcp_dctcp.c (same fixed point, same initial α = 1, same
// receiver-side echo state machine); its flags carry TCP_CONG_NEEDS_ECN, so
// every packet of a connection, its SYN included, is ECN-capable.
//
// The object is built by bpf2go (go generate, with clang and libbpf-dev's
// headers: scripts/deps.sh --dev) and committed with its Go bindings, so
// building needs no clang. Its kernel types come from bpf/vmlinux.h, a
// hand-written header of the dozen fields the program touches, each
// relocated by name against the running kernel's BTF (CO-RE) when
// cilium/ebpf loads it.
//
// # Registration and holders
//
// Acquire registers the congestion control with link.AttachStructOps and
// pins the link in bpffs, once per holder, under
// DefaultPinDir/holders/HOLDER. The kernel keeps "dctcp" registered for as
// long as any pin exists, so the processes that loaded it may exit, and
// the kernel itself counts the holders: Release removes one holder's pin,
// and the last one out unregisters it. A testbed is a holder
// ("testbed-ID"); so is `ecnswitch dctcp load` ("cli"). A kernel that has
// its own dctcp (built in or a module, which Acquire loads by asking for
// it) is used as it is, and nothing is pinned.
//
// Unregistering takes the name out of net.ipv4.tcp_available_congestion_control
// at once (and with it out of the allowed list); sockets and network
// namespaces that still use the algorithm keep it, unlisted, until they
// close. Processes agree through a flock on the pin directory: Acquire,
// Release and Unload take it exclusively, Stat shared.
//
// A network namespace other than the initial one may make dctcp its
// default only once it is in net.ipv4.tcp_allowed_congestion_control
// (testbed and `ecnswitch dctcp load` put it there). Ask before that and
// the kernel refuses with EPERM, and keeps the reference it took on the
// algorithm before refusing (tcp_set_default_congestion_control, Linux
// 6.18): after its unregistration, that registration's memory then stays
// until reboot. Allow first.
//
// # Both ends
//
// Linux answers an ECN-capable SYN's request for ECN only from a listener
// whose congestion control needs ECN (tcp_ecn_create_request), so DCTCP
// negotiates ECN with DCTCP. Towards a cubic listener the connection has
// no ECN, and the program's init switches it to reno, without ECT, as
// tcp_dctcp.c switches to its dctcp-reno.
//
// # Observing α
//
// The kernel's DCTCP reports α through inet_diag (INET_DIAG_DCTCPINFO,
// from get_info), which the kernel does not let a BPF congestion control
// implement. The program therefore publishes, per socket, α after each
// window and the sums of α and of the windows' marked fractions in an
// sk_storage map pinned at DefaultPinDir/alpha; ReadStats reads it for a
// socket of the calling process.
package dctcp
