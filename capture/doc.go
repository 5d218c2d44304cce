// Package capture writes pcap and pcapng files of the packets a running
// switch received, sent (after any CE mark) or dropped, per port, with the
// switch's own timestamps — and, in pcapng, a comment on every packet
// saying what happened and why: the marker that set CE or the drop reason,
// the queue, the sojourn time, and the value and threshold the marker
// compared. Its main use is a file of exactly the packets ecnswitch marked.
//
// # Model
//
// A Manager owns the captures of one *dataplane.Switch. Each capture has a
// Spec (port, direction ingress|egress|drops, filter all|marked|dropped|trimmed,
// optional queue and DSCP, format, path, snap length, rotation, ring size).
// The Manager sets one dataplane.Tap per port that has captures; the tap
// runs on the port's worker and shows each event to every capture of the
// port. A capture's Record path filters the event, then copies at most
// snaplen bytes of the frame and a small fixed record (time, queue,
// sojourn, marker, value, threshold, drop reason) into the next slot of a
// bounded lock-free single-producer/single-consumer ring of fixed-size
// slots. It never blocks, locks or allocates: when the ring is full the
// packet is skipped and counted (skipped_ring_full), so capture cannot slow
// forwarding. A writer goroutine per capture drains the ring into the
// files, polling every millisecond when the ring is empty.
//
// All the events of a port come from the one worker that owns the port, so
// each ring has exactly one producer. Stop takes the capture off the tap,
// waits until the worker is out of the ring (see gate), lets the writer
// write what the ring holds, and closes the file, so the final counters
// account for every selected packet: written + skipped_ring_full +
// lost_write_error.
//
// # Timestamps
//
// Every packet's timestamp is the switch's timestamp of its event, from
// the same clock the markers read: the receive time for ingress, the
// dequeue time for egress, the drop time for drops. That clock is
// monotonic nanoseconds with an arbitrary origin, so at each capture's
// start the Manager reads a (wall, mono) pair — Options.Wall and the
// switch clock, back to back — and writes wall + (t − mono). Timestamps are
// therefore exact relative to one another and to the markers' decisions,
// and as accurate in absolute terms as the wall clock was at start; they do
// not follow later wall-clock steps. pcap files use nanosecond resolution
// (pcapgo.NewWriterNanos); pcapng files declare if_tsresol 9.
//
// An ingress timestamp is the best stamp the switch has for the packet:
// the NIC's hardware stamp where the port reads one (put on the switch
// clock), else the worker's clock when it received the batch. A pcapng
// file's if_description says which ("… ingress stamps by phc0", "by
// worker", "by link" for memory ports).
//
// # Formats
//
// Both formats are little-endian, link type Ethernet, with nanosecond
// timestamps: pcap with magic 0xa1b23c4d; pcapng with one Section Header
// Block, one Interface Description Block (if_name = the port's name,
// if_description = what the capture selects, if_tsresol = 9, the snap
// length) and an Enhanced Packet Block per packet (pcapng §4.3), which
// carries an epb_flags direction (inbound for ingress, outbound for
// egress) and an opt_comment such as
//
//	egress port c queue 1: marked CE by mqecn (value 41000, threshold 32000); sojourn 212.000us
//	egress port c queue 0: sent unmarked; sojourn 3.125us
//	drop port c queue 0: dropped (enqueue_marker) by dctcp (value 16500, threshold 15000)
//	drop port c queue 0: dropped (dynamic_threshold)
//	trim port c queue 0: trimmed (static_cap) from 1514 to 106 bytes
//	egress port c queue 7: sent trimmed; sojourn 1.250us
//	drop port c queue 7: dropped (static_cap) after trimming
//	ingress port a: received
//	egress port c queue 0: sent unmarked; sojourn 3.125us; INT (switch clock monotonic): added, 0 hops left; records, newest first: {queue 0: 4500 B, t 1250000 ns, tx 987654 B, 995 Mbit/s}
//
// A packet leaving a port with INT (dataplane.INT) has its INT records
// decoded into the comment (package intmd), newest first, with what the
// port did: added its record, or had no room for it.
//
// A port that trims (dataplane.Trim) drops the packet its queue refuses
// and sends its header on, as SAI has it: the drops capture shows the
// trim, the frame as cut, with the refusal's reason; the header's later
// egress or drop says it was trimmed. Filter trimmed keeps only trimmed
// packets, on egress or in drops.
//
// Both are encoded by github.com/gopacket/gopacket's pcapgo: Writer for
// pcap, NgWriter.WritePacketWithOptions for pcapng, whose NgPacketOptions
// carry the comment and the direction. Tests read every file back with
// pcapgo's Reader or NgReader (and a strict reader of their own for the
// comments), decode the frames with gopacket's layers, and check them with
// tshark, which scripts/deps.sh installs.
//
// Value and threshold are in the marker's own unit: bytes or packets for
// queue-length markers, ns for sojourn-time markers.
//
// # Rotation
//
// A capture starts a new file before a packet would make the current one
// larger than max_bytes (DefaultMaxBytes unless set; Unlimited never
// rotates), and a file always holds at least one packet. File k is the path itself for k = 0 and the path with .k
// before its extension after that: marked.pcapng, marked.1.pcapng,
// marked.2.pcapng, … Numbers only grow, so files never get renamed while a
// reader has them open; the oldest is deleted when a new one would exceed
// max_files (DefaultMaxFiles unless set; Unlimited keeps all), leaving the
// newest max_files.
//
// # Limits
//
// What captures may cost is bounded by the Manager: at most MaxCaptures
// run at once; their rings together take at most Options.RingMemory; and
// with a directory, Options.Quota bounds its bytes: a capture starts only
// if the files already there (those of running captures aside), the most
// every running capture may keep and the most it may keep itself
// (Spec.DiskBound: max_files × max_bytes, and a record) fit, so a capture
// that could grow without bound never starts under a quota.
//
// # Files
//
// With Options.Dir set (the daemon always sets it), a Spec.Path is a name
// beneath that directory. The Manager opens the directory once as an
// os.Root, creating it mode 0750, and refuses it when its group or others
// may write to it unless the switch's user owns it. Each file is created
// mode 0600 with O_EXCL beneath the root: an entry already at the name (a
// file of an earlier run, a planted symlink) is removed first, never
// followed, and os.Root keeps ".." and symlinks in the path from leading
// out of the directory. No two running captures may have first names whose
// rotated families (below) meet, so rotation never makes two captures
// write one file.
//
// # Wiring
//
// The daemon (package node) builds the Manager next to the switch with the
// switch's clock, starts the captures its config lists with Start, serves
// Handler (POST /capture/start, POST /capture/stop?id=N, GET
// /capture/status) on its control socket only — a UNIX socket of mode
// 0600, never the TCP telemetry listener — and calls Close on shutdown.
// `ecnswitch capture start|stop|status` uses Client against that socket.
package capture
