//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/*
 * DCTCP as a BPF struct_ops tcp_congestion_ops, for kernels built without
 * tcp_dctcp.
 *
 * The algorithm is DCTCP's (Alizadeh et al., "Data Center TCP (DCTCP)",
 * SIGCOMM 2010, §3.1):
 *
 *   once per window of data (about one RTT), with F the fraction of the
 *   window's packets that arrived marked,
 *       α ← (1 − g)·α + g·F                                      (Eq. 1)
 *   and on congestion (an ECN echo, once per window),
 *       cwnd ← cwnd·(1 − α/2)                                    (Eq. 2)
 *
 * It follows Linux's net/ipv4/tcp_dctcp.c, which has the same structure as
 * a module: α in units of 1/1024 (DCTCP_MAX_ALPHA), g = 1/2^4
 * (dctcp_shift_g = 4), α = 1 on a new connection (dctcp_alpha_on_init =
 * 1024), a window counted in delivered packets from tp->delivered and
 * tp->delivered_ce, Reno's slow start and additive increase, the kernel's
 * ECN echo state machine for the receiver side (CE state changes are
 * acknowledged at once, so that the sender's F is exact, §3.1 "Simple
 * Marking at the Switch" / "ECN-Echo at the Receiver"), and a halving on
 * loss. The kernel's BPF selftest progs/bpf_dctcp.c showed which of
 * tcp_dctcp.c's writes a struct_ops program may make. Left out:
 * get_info (the kernel refuses it from BPF, so α is published in an
 * sk_storage map instead, see dctcp_alpha) and tcp_plb (Protective Load
 * Balancing, off unless net.ipv4.tcp_plb_enabled is set).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char _license[] SEC("license") = "GPL";

/* include/net/tcp.h (6.18): tcp_sock.ecn_flags bits and the congestion
 * control's flags. #defines, so not in the kernel's BTF. */
#define TCP_ECN_MODE_RFC3168 (1 << 0)
#define TCP_ECN_DEMAND_CWR (1 << 2)
#define TCP_ECN_MODE_ACCECN (1 << 4)
#define TCP_ECN_MODE_ANY (TCP_ECN_MODE_RFC3168 | TCP_ECN_MODE_ACCECN)
#define TCP_CONG_NEEDS_ECN (1 << 1)

#define DCTCP_MAX_ALPHA 1024U
#define DCTCP_SHIFT_G 4 /* g = 1/16 */
#define DCTCP_ALPHA_ON_INIT DCTCP_MAX_ALPHA

/* Reno, as tcp_dctcp.c uses it (kfuncs of net/ipv4/bpf_tcp_ca.c). */
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;

/* The per-connection state, in the socket's icsk_ca_priv as tcp_dctcp.c
 * keeps it (13 u64 of room). */
struct dctcp {
	__u32 old_delivered;
	__u32 old_delivered_ce;
	__u32 prior_rcv_nxt;
	__u32 dctcp_alpha;
	__u32 next_seq;
	__u32 ce_state;
	__u32 loss_cwnd;
	__u32 seen_ssthresh; /* snd_ssthresh and snd_cwnd as the last callback */
	__u32 seen_cwnd;     /* left them: see dctcp_guard */
};

/* What a socket's α did, published once per window for user space to
 * read by socket (a file descriptor as the key). The kernel's DCTCP
 * reports α through INET_DIAG_DCTCPINFO, from get_info, which a BPF
 * congestion control may not implement. */
struct dctcp_stats {
	__u32 alpha;     /* α·1024 after the last update */
	__u32 windows;   /* α updates so far */
	__u64 alpha_sum; /* Σ α·1024 over the updates */
	__u64 frac_sum;  /* Σ F·1024 over the updates: each window's marked fraction */
	__u32 repairs;   /* invalid snd_ssthresh values put right (dctcp_guard) */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct dctcp_stats);
} dctcp_alpha SEC(".maps");

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

static __always_inline struct dctcp *inet_csk_ca(const struct sock *sk)
{
	return (struct dctcp *)inet_csk(sk)->icsk_ca_priv;
}

static __always_inline __u32 max_u32(__u32 a, __u32 b)
{
	return a > b ? a : b;
}

static __always_inline __u32 min_u32(__u32 a, __u32 b)
{
	return a < b ? a : b;
}

/* The largest snd_ssthresh the kernel sets (include/net/tcp.h); it means
 * "none yet". */
#define TCP_INFINITE_SSTHRESH 0x7fffffffU

/*
 * A guard against a fault of the kernel's, not DCTCP's. On this project's
 * test machines (Linux 6.18.44, x86-64), a socket whose congestion control
 * is a BPF struct_ops one now and then enters CWR and comes out of it with
 * snd_ssthresh 0x81104110 (2165326096) and a raised snd_cwnd, though every
 * ssthresh this program returns is sane: the entries that do so are the
 * ones processed in softirq context on top of another task, where the
 * program's bpf_printk output is missing too. PRR then computes a cwnd of
 * 10^8 or more from that ssthresh, the sender bursts hundreds of KB into
 * the switch, and since the value exceeds TCP_INFINITE_SSTHRESH,
 * tcp_end_cwnd_reduction leaves the cwnd as it is. A three-callback BPF
 * Reno does the same; the kernel's built-in reno and cubic on the same
 * path never do (the tcp_probe tracepoint filtered on ssthresh > 2^31 − 1:
 * hundreds to thousands of hits in each 8 s DCTCP flow at 500 Mbit/s, none
 * in 6 runs of reno and cubic). No snd_ssthresh above
 * TCP_INFINITE_SSTHRESH is one the kernel computes, so every callback
 * checks for one on entry and puts back the snd_ssthresh and snd_cwnd
 * that the last callback left, counting the repair in
 * dctcp_stats.repairs; each callback records what it leaves on exit. The
 * burst of the ACK that met the fault is gone by then; what the guard
 * stops is the window staying at 10^8 until enough reductions halve it
 * back (retransmissions in those 8 s flows: 3,900 with the guard against
 * 11,700 without, means of 4 and 6 runs).
 */
static __always_inline void dctcp_guard(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *ca = inet_csk_ca(sk);
	struct dctcp_stats *st;

	if (tp->snd_ssthresh <= TCP_INFINITE_SSTHRESH || ca->seen_ssthresh == 0)
		return;
	tp->snd_ssthresh = ca->seen_ssthresh;
	tp->snd_cwnd = ca->seen_cwnd;
	st = bpf_sk_storage_get(&dctcp_alpha, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (st)
		st->repairs++;
}

static __always_inline void dctcp_seen(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *ca = inet_csk_ca(sk);

	ca->seen_ssthresh = tp->snd_ssthresh;
	ca->seen_cwnd = tp->snd_cwnd;
}

/* before(a, b): sequence number a precedes b, modulo 2^32. */
static __always_inline bool before(__u32 a, __u32 b)
{
	return (__s32)(a - b) < 0;
}

/* Starts a new observation window at the next byte to be sent. */
static __always_inline void dctcp_reset(const struct tcp_sock *tp, struct dctcp *ca)
{
	ca->next_seq = tp->snd_nxt;
	ca->old_delivered = tp->delivered;
	ca->old_delivered_ce = tp->delivered_ce;
}

SEC("struct_ops")
void BPF_PROG(dctcp_init, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *ca = inet_csk_ca(sk);
	unsigned char state = sk->__sk_common.skc_state;

	if ((tp->ecn_flags & TCP_ECN_MODE_ANY) || state == TCP_LISTEN || state == TCP_CLOSE) {
		ca->prior_rcv_nxt = tp->rcv_nxt;
		ca->dctcp_alpha = DCTCP_ALPHA_ON_INIT;
		ca->loss_cwnd = 0;
		ca->ce_state = 0;
		dctcp_reset(tp, ca);
		dctcp_seen(sk);
		return;
	}
	/* The peer did not agree to ECN: without marks DCTCP is Reno, and its
	 * packets must stop claiming ECT. tcp_dctcp.c switches the socket to
	 * its "dctcp-reno" ops; a BPF program switches it to reno, whose
	 * flags lack TCP_CONG_NEEDS_ECN, so the kernel clears ECT as it does
	 * for the module (tcp_reinit_congestion_control). */
	bpf_setsockopt(sk, SOL_TCP, TCP_CONGESTION, "reno", sizeof("reno"));
}

/* Eq. 2, at the first ECN echo or loss of a window: the kernel enters CWR
 * and sets cwnd to this. α/2 is α·1024 >> 11. */
static __always_inline __u32 do_ssthresh(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *ca = inet_csk_ca(sk);
	__u32 cwnd = tp->snd_cwnd;

	ca->loss_cwnd = cwnd;
	return max_u32(cwnd - ((cwnd * ca->dctcp_alpha) >> 11U), 2U);
}

/* Eq. 1, once the window that started at next_seq is acknowledged. */
static __always_inline void do_update_alpha(struct sock *sk, __u32 flags)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *ca = inet_csk_ca(sk);
	struct dctcp_stats *st;
	__u32 delivered, delivered_ce, alpha, frac;

	/* The kernel calls in_ack_event for the SYN-ACK before it calls
	 * init (tcp_rcv_synsent_state_process acks it first), on a zeroed
	 * state that init then overwrites: no window of ours. */
	if (!BPF_CORE_READ_BITFIELD(inet_csk(sk), icsk_ca_initialized))
		return;
	if (before(tp->snd_una, ca->next_seq))
		return;

	delivered = tp->delivered - ca->old_delivered;
	delivered_ce = tp->delivered_ce - ca->old_delivered_ce;
	alpha = ca->dctcp_alpha;

	/* (1 − g)·α: subtract α·g, rounded down, but at least what is left
	 * once α·g rounds to 0, so that α decays to 0 (tcp_dctcp.c's
	 * min_not_zero). */
	if (alpha >> DCTCP_SHIFT_G)
		alpha -= alpha >> DCTCP_SHIFT_G;
	else
		alpha = 0;
	/* + g·F, with F = delivered_ce / delivered in units of 1/1024. */
	frac = 0;
	if (delivered_ce) {
		alpha = min_u32(alpha + (delivered_ce << (10 - DCTCP_SHIFT_G)) / max_u32(1U, delivered),
				DCTCP_MAX_ALPHA);
		frac = min_u32((delivered_ce << 10) / max_u32(1U, delivered), DCTCP_MAX_ALPHA);
	}
	ca->dctcp_alpha = alpha;
	dctcp_reset(tp, ca);

	st = bpf_sk_storage_get(&dctcp_alpha, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (st) {
		st->alpha = alpha;
		st->windows++;
		st->alpha_sum += alpha;
		st->frac_sum += frac;
	}
}

/* A loss is congestion at full strength: halve, as Reno does. */
static __always_inline void dctcp_react_to_loss(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *ca = inet_csk_ca(sk);

	ca->loss_cwnd = tp->snd_cwnd;
	tp->snd_ssthresh = max_u32(tp->snd_cwnd >> 1U, 2U);
}

static __always_inline void do_state(struct sock *sk, __u8 new_state)
{
	/* Entering fast recovery; an RTO is handled in dctcp_cwnd_event, so
	 * that a window sees one reduction. */
	if (new_state == TCP_CA_Recovery &&
	    new_state != BPF_CORE_READ_BITFIELD(inet_csk(sk), icsk_ca_state))
		dctcp_react_to_loss(sk);
}

/* The receiver's ECN echo: DCTCP echoes CE on exactly the packets that
 * carried it, so ACKs carry ECE while the last data packet was CE, and an
 * ACK goes out at once whenever that changes (delayed ACKs would otherwise
 * blur F). tcp_dctcp.h's dctcp_ece_ack_cwr and dctcp_ece_ack_update. */
static __always_inline void dctcp_ece_ack_cwr(struct sock *sk, __u32 ce_state)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (ce_state == 1)
		tp->ecn_flags |= TCP_ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~TCP_ECN_DEMAND_CWR;
}

static __always_inline void dctcp_ece_ack_update(struct sock *sk, __u32 new_ce_state)
{
	struct inet_connection_sock *icsk = inet_csk(sk);
	struct dctcp *ca = inet_csk_ca(sk);

	if (ca->ce_state != new_ce_state) {
		/* An ACK still delayed acknowledges data of the old state:
		 * send it first, with the old state's echo. */
		if (icsk->icsk_ack.pending & bpf_core_enum_value(enum inet_csk_ack_state_t, ICSK_ACK_TIMER)) {
			dctcp_ece_ack_cwr(sk, ca->ce_state);
			bpf_tcp_send_ack(sk, ca->prior_rcv_nxt);
		}
		icsk->icsk_ack.pending |= bpf_core_enum_value(enum inet_csk_ack_state_t, ICSK_ACK_NOW);
	}
	ca->prior_rcv_nxt = tcp_sk(sk)->rcv_nxt;
	ca->ce_state = new_ce_state;
	dctcp_ece_ack_cwr(sk, new_ce_state);
}

static __always_inline void do_cwnd_event(struct sock *sk, enum tcp_ca_event ev)
{
	if (ev == bpf_core_enum_value(enum tcp_ca_event, CA_EVENT_ECN_IS_CE))
		dctcp_ece_ack_update(sk, 1);
	else if (ev == bpf_core_enum_value(enum tcp_ca_event, CA_EVENT_ECN_NO_CE))
		dctcp_ece_ack_update(sk, 0);
	else if (ev == bpf_core_enum_value(enum tcp_ca_event, CA_EVENT_LOSS))
		dctcp_react_to_loss(sk);
}

/* An undone reduction (a spurious retransmission) restores the window
 * from before it. */
static __always_inline __u32 do_cwnd_undo(struct sock *sk)
{
	return max_u32(tcp_sk(sk)->snd_cwnd, inet_csk_ca(sk)->loss_cwnd);
}

static __always_inline void do_cong_avoid(struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

/* The callbacks the kernel calls: each the function above, between the
 * guard against the kernel's invalid snd_ssthresh and the record of what
 * it leaves (dctcp_guard). */
SEC("struct_ops")
__u32 BPF_PROG(dctcp_ssthresh, struct sock *sk)
{
	__u32 r;

	dctcp_guard(sk);
	r = do_ssthresh(sk);
	dctcp_seen(sk);
	return r;
}

SEC("struct_ops")
void BPF_PROG(dctcp_update_alpha, struct sock *sk, __u32 flags)
{
	dctcp_guard(sk);
	do_update_alpha(sk, flags);
	dctcp_seen(sk);
}

SEC("struct_ops")
void BPF_PROG(dctcp_state, struct sock *sk, __u8 new_state)
{
	dctcp_guard(sk);
	do_state(sk, new_state);
	dctcp_seen(sk);
}

SEC("struct_ops")
void BPF_PROG(dctcp_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	dctcp_guard(sk);
	do_cwnd_event(sk, ev);
	dctcp_seen(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(dctcp_cwnd_undo, struct sock *sk)
{
	__u32 r;

	dctcp_guard(sk);
	r = do_cwnd_undo(sk);
	dctcp_seen(sk);
	return r;
}

SEC("struct_ops")
void BPF_PROG(dctcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	dctcp_guard(sk);
	do_cong_avoid(sk, ack, acked);
	dctcp_seen(sk);
}

/* The congestion control the kernel registers. TCP_CONG_NEEDS_ECN makes
 * every packet of a connection ECN-capable (ECT(0)), its SYN included,
 * whatever net.ipv4.tcp_ecn says, as for the kernel's dctcp. */
SEC(".struct_ops.link")
struct tcp_congestion_ops dctcp = {
	.init = (void *)dctcp_init,
	.in_ack_event = (void *)dctcp_update_alpha,
	.cwnd_event = (void *)dctcp_cwnd_event,
	.ssthresh = (void *)dctcp_ssthresh,
	.cong_avoid = (void *)dctcp_cong_avoid,
	.undo_cwnd = (void *)dctcp_cwnd_undo,
	.set_state = (void *)dctcp_state,
	.flags = TCP_CONG_NEEDS_ECN,
	.name = "dctcp",
};
