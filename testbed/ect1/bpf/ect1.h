/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The few kernel types and constants ect1.c uses, written by hand instead
 * of including the system's uapi headers (whose asm/ directory is
 * per-architecture), as testbed/dctcp's vmlinux.h is. struct __sk_buff is
 * marked preserve_access_index: its field offsets are relocated by name
 * against the running kernel's BTF when cilium/ebpf loads the object.
 */
#ifndef ECT1_H
#define ECT1_H

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

/* enum bpf_map_type (uapi linux/bpf.h). */
enum {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
};

/* enum tcx_action_base (uapi linux/bpf.h, Linux ≥ 6.6): let the next
 * program of the interface's chain see the packet, or pass it when there
 * is none. */
#define TCX_NEXT -1

/* The context of a tc program (uapi linux/bpf.h): the fields ect1.c reads. */
struct __sk_buff {
	__u32 len;
	__u32 protocol; /* the frame's EtherType, network byte order */
	__u32 data;
	__u32 data_end;
} __attribute__((preserve_access_index));

/* Wire constants: Ethernet (uapi linux/if_ether.h), IP (RFC 791, RFC 8200,
 * uapi linux/in.h). */
#define ETH_HLEN 14
#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define IPPROTO_TCP 6
#define IPV4_TOS 1       /* offset of the TOS byte in the IPv4 header */
#define IPV4_PROTOCOL 9  /* of the protocol */
#define IPV4_CHECK 10    /* of the header checksum */
#define IPV6_NEXTHDR 6   /* of the next header in the IPv6 header */
#define IPV6_HLEN 40

#endif
