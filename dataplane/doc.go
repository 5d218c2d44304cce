// Package dataplane is the switch: it composes the leaves — packet,
// buffer, scheduler, marking, ports, timestamp — into the pipeline every
// packet runs through, and owns the model of the switch that the rest of
// ecnswitch configures.
//
// # Pipeline
//
// A worker receives a batch on each of its ports and runs every packet to
// completion:
//
//	packet.Parse → forward (patch, MAC rule, longest prefix, L2 table, flood)
//	             → classify (DSCP class selector, or PCP) → delay line
//	             → buffer admission (reserve, Dynamic Threshold or cap)
//	             → enqueue marker chain → egress queue
//
// A port with a Trim trims what admission or an enqueue marker refuses
// (packet.Trim) and admits the header to its trim queue instead of
// dropping it (SAI's trim on failed admission; NDP).
//
// then serves each egress port it owns: the shaper (a token bucket at the
// emulated line rate) decides when the scheduler may dequeue, the dequeue
// marker chain sees the sojourn time, the buffer releases the bytes, and
// the port transmits the batch. docs/architecture.md draws it.
//
// A port whose scheduler is a scheduler.DualQ is a DualQ Coupled AQM
// (RFC 9332, PortConfig.DualQ): it classifies by ECN into its L4S and
// Classic queues, and its coupled AQM, marking.DualPI2, heads its dequeue
// chain; PortStats.DualQ reports it.
//
// A port with INT (PortConfig.INT) adds its in-band telemetry record
// (INT-MD over UDP, package intmd) to the UDP packets that carry INT
// headers as they leave its virtual line, after the dequeue chain: the
// occupancy of the queue they leave and of the port, the bytes the line
// has sent, the departure time, the shaper's rate, as their instructions
// ask (HPCC's per-hop feedback). The frame grows; the buffer gives back
// what it charged (Desc.Charged) and the shaper charges the grown frame.
// PortStats.INT counts records added and packets without room for one.
//
// # Ownership
//
// A worker is a goroutine locked to an OS thread (optionally pinned, like
// a DPDK lcore). It owns its ports' receive side and their whole egress
// side — queues, scheduler, shaper, markers, delay lines — and a fixed
// arena of frames. A packet bound for another worker's port crosses a
// lock-free single-producer ring, and its frame comes home through a
// return ring. The shared buffer pool is the only state two workers write,
// through a CAS loop. Per-packet code takes no lock and allocates nothing;
// counters are atomics that Stats reads while the workers run.
//
// # Accounting
//
// Every packet that enters is counted exactly once as transmitted, queued,
// held (delay line, TX backlog, rings) or dropped with a DropReason;
// Switch.Account checks the balance; a trimmed packet counts once, as
// what became of its header. A Tap sees ingress, egress (after any CE
// mark), drop and trim events, for capture.
//
// # Configuration
//
// Config is the switch, typed: ports with their schedulers, shapers,
// buffers, marker chains and delays; pools; forwarding; classification;
// workers and frames. Its defaults and limits are the exported constants
// of this package (DefaultFrames, MaxWorkers, DefaultBucket, …), which the
// YAML layer (package config) reads rather than repeats. Config.Validate
// checks a Config without building anything; New builds the switch over
// one ports.Port per configured port, each marker once (MarkerSpec.New).
package dataplane
