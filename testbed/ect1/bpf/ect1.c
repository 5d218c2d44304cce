//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/*
 * ECT(1) for chosen TCP flows: a tc egress (tcx) program for a testbed
 * host's interface that rewrites the ECN field of the host's TCP packets
 * from ECT(0) to ECT(1) when their source or destination port is one of
 * ect1_ports (port 0 there: every TCP packet).
 *
 * Why: an L4S sender marks its packets ECT(1) (RFC 9331 §4.1), and a
 * DualQ Coupled AQM classifies them into its L queue by that codepoint
 * (RFC 9332 §2.3). Linux 6.18's TCP sends ECT(0) for a congestion control
 * that asks for ECN, also when it asks for ECT(1) negotiation
 * (tcp_init_congestion_control calls INET_ECN_xmit), and neither IP_TOS
 * nor a BPF program may set a TCP socket's ECN bits. So the codepoint is
 * set here, on the wire, after the stack.
 *
 * IPv4: the TOS byte changes and the header checksum is updated
 * incrementally (bpf_l3_csum_replace, RFC 1624); the TCP checksum does
 * not cover the TOS. IPv6: the traffic class changes; there is no header
 * checksum. IPv6 packets with extension headers before TCP are left alone.
 * Packets that are not ECT(0) (Not-ECT, CE, ECT(1) already) pass as they
 * are: the program never takes a mark away.
 */
#include "ect1.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char _license[] SEC("license") = "GPL";

#define ECN_MASK 3
#define ECN_ECT1 1
#define ECN_ECT0 2

/* The chosen ports, in host byte order; the value is unused. Port 0
 * chooses every TCP packet. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u16);
	__type(value, __u8);
} ect1_ports SEC(".maps");

/* Counters, per CPU: what the program did to the chosen flows' packets. */
enum {
	COUNT_REWRITTEN = 0, /* ECT(0) made ECT(1) */
	COUNT_LEFT = 1,      /* of a chosen flow, not ECT(0): left as it was */
	COUNT_MAX,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, COUNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} ect1_counts SEC(".maps");

static __always_inline void count(__u32 i)
{
	__u64 *n = bpf_map_lookup_elem(&ect1_counts, &i);

	if (n)
		*n += 1;
}

static __always_inline int chosen(__u16 sport, __u16 dport)
{
	__u16 any = 0;

	return bpf_map_lookup_elem(&ect1_ports, &any) ||
	       bpf_map_lookup_elem(&ect1_ports, &sport) ||
	       bpf_map_lookup_elem(&ect1_ports, &dport);
}

/* Headers this far into the frame must be in the linear part: an IPv4
 * header with all its options and the TCP ports. */
#define PULL (ETH_HLEN + 60 + 4)

/* chosen_at reads a TCP header's source and destination ports at th. */
static __always_inline int chosen_at(__u8 *th)
{
	return chosen((__u16)th[0] << 8 | th[1], (__u16)th[2] << 8 | th[3]);
}

static __always_inline void rewrite_v4(struct __sk_buff *skb)
{
	__u8 *ip = (void *)(long)skb->data + ETH_HLEN;
	void *end = (void *)(long)skb->data_end;
	__u8 *th;
	__u32 ihl;

	if ((void *)(ip + 20) > end || ip[IPV4_PROTOCOL] != IPPROTO_TCP)
		return;
	ihl = (ip[0] & 0xf) * 4;
	if (ihl < 20)
		return;
	th = ip + ihl;
	if ((void *)(th + 4) > end || !chosen_at(th))
		return;
	if ((ip[IPV4_TOS] & ECN_MASK) != ECN_ECT0) {
		count(COUNT_LEFT);
		return;
	}
	/* The checksum sums 16-bit words: the one of version, IHL and TOS
	 * changes. Both are taken as they lie in memory, which the one's
	 * complement sum does not mind. */
	__u8 word[2] = {ip[0], (ip[IPV4_TOS] & ~ECN_MASK) | ECN_ECT1};
	__u16 from, to;

	__builtin_memcpy(&from, ip, 2);
	__builtin_memcpy(&to, word, 2);
	if (bpf_l3_csum_replace(skb, ETH_HLEN + IPV4_CHECK, from, to, 2))
		return;
	if (bpf_skb_store_bytes(skb, ETH_HLEN + IPV4_TOS, &word[1], 1, 0))
		return;
	count(COUNT_REWRITTEN);
}

static __always_inline void rewrite_v6(struct __sk_buff *skb)
{
	__u8 *ip6 = (void *)(long)skb->data + ETH_HLEN;
	void *end = (void *)(long)skb->data_end;
	__u8 *th = ip6 + IPV6_HLEN;
	__u8 b1;

	if ((void *)(th + 4) > end || ip6[IPV6_NEXTHDR] != IPPROTO_TCP || !chosen_at(th))
		return;
	/* The traffic class is the low nibble of byte 0 and the high nibble
	 * of byte 1; ECN is its low two bits, bits 5 and 4 of byte 1. */
	b1 = ip6[1];
	if (((b1 >> 4) & ECN_MASK) != ECN_ECT0) {
		count(COUNT_LEFT);
		return;
	}
	b1 = (b1 & ~(ECN_MASK << 4)) | (ECN_ECT1 << 4);
	if (bpf_skb_store_bytes(skb, ETH_HLEN + 1, &b1, 1, 0))
		return;
	count(COUNT_REWRITTEN);
}

SEC("tcx/egress")
int ect1_egress(struct __sk_buff *skb)
{
	__u16 proto = bpf_ntohs(skb->protocol);

	if (proto != ETH_P_IP && proto != ETH_P_IPV6)
		return TCX_NEXT;
	if (skb->data_end - skb->data < PULL && skb->len > skb->data_end - skb->data)
		bpf_skb_pull_data(skb, skb->len < PULL ? skb->len : PULL);
	if (proto == ETH_P_IP)
		rewrite_v4(skb);
	else
		rewrite_v6(skb);
	return TCX_NEXT;
}
