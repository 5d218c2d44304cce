/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The few kernel types dctcp.c uses, written by hand instead of a 135,000-line
 * `bpftool btf dump file /sys/kernel/btf/vmlinux format c`, so that the
 * object stays small and what it touches is reviewable.
 *
 * Every struct is marked preserve_access_index: clang records each field
 * access as a CO-RE relocation by name, and cilium/ebpf rewrites the offsets
 * against the running kernel's BTF when it loads the object. Field order and
 * the fields left out therefore do not matter; names and types do. Enum
 * values that are not kernel ABI are read the same way (bpf_core_enum_value).
 * tcp_congestion_ops is the exception: it is the layout of the struct_ops
 * map's initial value, which cilium/ebpf copies into the kernel's
 * tcp_congestion_ops member by member, by name.
 */
#ifndef DCTCP_VMLINUX_H
#define DCTCP_VMLINUX_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
#define true 1
#define false 0

/* enum bpf_map_type, and the flags of maps and helpers (uapi linux/bpf.h). */
enum {
	BPF_MAP_TYPE_SK_STORAGE = 24,
};
#define BPF_F_NO_PREALLOC (1U << 0)
#define BPF_SK_STORAGE_GET_F_CREATE (1ULL << 0)

/* Socket option levels and names (uapi). */
#define SOL_TCP 6
#define TCP_CONGESTION 13

/* enum tcp_ca_state (uapi linux/tcp.h). */
enum tcp_ca_state {
	TCP_CA_Open = 0,
	TCP_CA_Disorder = 1,
	TCP_CA_CWR = 2,
	TCP_CA_Recovery = 3,
	TCP_CA_Loss = 4,
};

/* enum tcp_ca_event (include/net/tcp.h): not uapi, so dctcp.c reads the
 * values it compares with through CO-RE. */
enum tcp_ca_event {
	CA_EVENT_TX_START,
	CA_EVENT_CWND_RESTART,
	CA_EVENT_COMPLETE_CWR,
	CA_EVENT_LOSS,
	CA_EVENT_ECN_NO_CE,
	CA_EVENT_ECN_IS_CE,
};

/* enum inet_csk_ack_state_t (include/net/inet_connection_sock.h): not
 * uapi either, read through CO-RE. */
enum inet_csk_ack_state_t {
	ICSK_ACK_SCHED = 1,
	ICSK_ACK_TIMER = 2,
	ICSK_ACK_PUSHED = 4,
	ICSK_ACK_PUSHED2 = 8,
	ICSK_ACK_NOW = 16,
	ICSK_ACK_NOMEM = 32,
};

/* Socket states (include/net/tcp_states.h, mirrored in uapi as BPF_TCP_*). */
enum {
	TCP_LISTEN = 10,
	TCP_CLOSE = 7,
};

struct sock_common {
	volatile unsigned char skc_state;
} __attribute__((preserve_access_index));

struct sock {
	struct sock_common __sk_common;
} __attribute__((preserve_access_index));

struct inet_connection_sock {
	__u8 icsk_ca_state: 5;
	__u8 icsk_ca_initialized: 1;
	__u8 icsk_ca_setsockopt: 1;
	__u8 icsk_ca_dst_locked: 1;
	struct {
		__u8 pending;
	} icsk_ack;
	__u64 icsk_ca_priv[13];
} __attribute__((preserve_access_index));

struct tcp_sock {
	struct inet_connection_sock inet_conn;
	__u32 snd_cwnd;
	__u32 snd_ssthresh;
	__u32 snd_nxt;
	__u32 snd_una;
	__u32 rcv_nxt;
	__u32 delivered;
	__u32 delivered_ce;
	__u8 ecn_flags;
} __attribute__((preserve_access_index));

struct ack_sample;
struct rate_sample;
union tcp_cc_info;
struct module;

struct list_head {
	struct list_head *next, *prev;
};

#define TCP_CA_NAME_MAX 16

struct tcp_congestion_ops {
	__u32 (*ssthresh)(struct sock *sk);
	void (*cong_avoid)(struct sock *sk, __u32 ack, __u32 acked);
	void (*set_state)(struct sock *sk, __u8 new_state);
	void (*cwnd_event)(struct sock *sk, enum tcp_ca_event ev);
	void (*in_ack_event)(struct sock *sk, __u32 flags);
	__u32 (*undo_cwnd)(struct sock *sk);
	char name[TCP_CA_NAME_MAX];
	__u32 flags;
	void (*init)(struct sock *sk);
	void (*release)(struct sock *sk);
};

#endif /* DCTCP_VMLINUX_H */
