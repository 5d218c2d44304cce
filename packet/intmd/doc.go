// Package intmd is in-band network telemetry in the INT-MD mode of the
// INT specification v2.1 (P4.org Applications WG, 2020) over UDP: the
// headers an INT source writes, the per-hop metadata a transit hop (the
// switch, at dequeue) inserts, and the parser that the capture and the
// endpoints read it back with.
//
// # Layout
//
// The INT headers follow the UDP header (spec §5.6.2, INT over UDP); which
// UDP packets carry them is a convention of the network, a UDP destination
// port or a DSCP value, that the switch is configured with. Offsets are
// from the start of the UDP payload, fields big-endian:
//
//	 0       4       8      12      16             16+4·HopML·k
//	+-------+-------+-------+-------+-- … --+-- … --+----------------
//	| shim  |     INT-MD header     | hop k | … | hop 1 | the original UDP payload
//	+-------+-------+-------+-------+-- … --+-- … --+----------------
//
//	shim (4 bytes, §5.6.2):
//	  byte 0   Type (4 bits, 1 = INT-MD) | NPT (2 bits) | reserved (2)
//	  byte 1   Length: shim + INT-MD header + stack, in 4-byte words
//	  byte 2–3 NPT 0: reserved, original DSCP; 1: original UDP port; 2: IP protocol
//	INT-MD metadata header (12 bytes, §5.7):
//	  byte 4   Ver (4 bits, 2) | D | E (hop limit hit) | M (MTU hit) | reserved
//	  byte 5   reserved
//	  byte 6   reserved (3 bits) | Hop ML (5 bits): words per hop
//	  byte 7   Remaining Hop Count
//	  byte 8–9   instruction bitmap (bit 0 is the most significant)
//	  byte 10–11 domain specific ID
//	  byte 12–13 DS instruction bitmap
//	  byte 14–15 DS flags
//	metadata stack: one record of 4·Hop ML bytes per hop, the newest first
//	(each hop inserts its record on top, §5.8).
//
// A record holds, in this order, a field for every instruction bit set:
//
//	bit 0  node ID                                  4 bytes
//	bit 1  L1 ingress port ID, egress port ID        2 + 2
//	bit 2  hop latency, ns (egress − ingress time)   4
//	bit 3  queue ID, queue occupancy in bytes        1 + 3
//	bit 4  ingress timestamp, ns                     8
//	bit 5  egress timestamp, ns                      8
//	bit 6  L2 ingress port ID, egress port ID        4 + 4
//	bit 7  egress port TX utilisation                4 (not kept: 0xffffffff)
//	bit 8  buffer ID, buffer occupancy in bytes      1 + 3
//	bit 9–14  reserved                               4 each (0xffffffff)
//	bit 15 checksum complement                       4 (not kept: 0xffffffff)
//
// then, when the domain specific ID is DomainID, a field for every DS
// instruction bit set:
//
//	DS bit 0  TX bytes: what the egress port's line has sent, in bytes as
//	          its shaper counts them (frame plus any configured overhead),
//	          before this packet (HPCC's txBytes)            8 bytes
//	DS bit 1  the egress link's rate, kbit/s (HPCC's B)     4
//	DS bit 2  port occupancy: bytes queued on the egress
//	          port, all its queues, after this packet left  4
//
// A record of another domain's DS instructions ends with 0xff bytes up to
// Hop ML. Occupancies saturate at their fields' largest value. Times are
// the switch's clock (timestamp.Name says which: the monotonic clock's ns
// since the switch started, or the virtual clock of a test): only their
// differences mean anything to an endpoint. HPCC (Li et al., SIGCOMM 2019,
// §3.2) reads qlen, txBytes, ts and B of every hop: instruction bits 3 and
// 5 and DS bits 0 and 1, 24 bytes a hop (HPCCInstructions,
// HPCCDSInstructions).
//
// # Limits
//
// The shim's Length is one byte, so the INT headers and their stack hold at
// most 255 words (1020 bytes); Hop ML is 5 bits, so a record is at most 31
// words (124 bytes); Remaining Hop Count is one byte: at most 255 hops. A
// transit hop inserts its record only when the packet grows to no more than
// the largest frame its egress carries (the caller's limit) and the shim's
// Length still fits; otherwise it forwards the packet without it and sets
// M, as it sets E when the remaining hop count is 0 (§5.8). A source must
// leave room for the records it asks for: 4·Hop ML bytes for each of the
// hops its Remaining Hop Count allows.
//
// Push moves the rest of the frame up by one record (the stack grows on
// top) and fixes the IPv4 total length and header checksum, or the IPv6
// payload length, and the UDP length and checksum (incrementally, RFC
// 1624), without allocating. UDP over IPv4 without a checksum (0) keeps
// none.
package intmd
