// Package config decodes ecnswitch's YAML configuration onto the switch's
// own model, a dataplane.Config (Config.Switch), plus what only the daemon
// needs: the devices it opens (Config.Ports: interface names and
// ports/afxdp options), telemetry, capture and logging. Defaults and
// limits are those of dataplane and the packages it composes; config adds
// only the file's own (names, units, rates a port may be shaped to).
//
// The file is parsed with gopkg.in/yaml.v3 into a node tree, which a
// decoder walks against the schema's Go types strictly: unknown keys, keys
// given twice, wrong types and out-of-range values are errors, each
// reported at the node it is about. Every error is an *Error naming the
// key's path in the file, the value and the allowed range, for example
//
//	ports[1].rate: "5Tbit" outside [1Mbit, 400Gbit] (or 0 for unshaped) (line 12)
//
// and Parse reports every error it finds, not just the first.
//
// # Shape
//
// examples/ecnswitch.yaml documents every key and its default. In brief:
//
//	log_level, workers, frames, frame_size, batch, spin, never_sleep, cpus
//	afxdp:        mode, zerocopy, queues, frames, frame_size, *_ring, tx_budget, tx_hash, force
//	telemetry:    enabled, listen, queue_sample_period, queue_samples, hosts
//	pools:        [{name, size}]
//	forwarding:   learning, age_time, table_size, mac_limit, flood_rate, flood_burst,
//	              patches, macs, prefixes (ports by name)
//	classifier:   dscp, use_pcp, pcp
//	port_defaults: any port key but name and interface, merged into every port
//	ports:        [{name, interface, afxdp, queues, mtu, scheduler (kind dualq:
//	               tc-dualpi2's keys), rate, bucket,
//	               overhead, pool, buffer, markers: {enqueue, dequeue}, non_ect,
//	               delay, coalesce, worker, trim: {bytes, queue, dscp, queues},
//	               int: {port, dscp, node_id}}]
//	capture:      dir, quota, ring_memory, captures: [{port (by name), direction,
//	               filter, queue, dscp, format, path (inside dir), snaplen,
//	               max_bytes, max_files, ring}]
//	control:      socket, group
//
// # Units
//
// Sizes are bytes or take a unit (96KB = 96000, 64KiB = 65536); rates are
// bit/s or take one (995Mbit, 10Gbps); durations use Go syntax (100us,
// 1.5ms). Marking thresholds (Threshold) may be bytes, packets (20pkt,
// 16x1024B), a time at the port's rate (100us: C·t) or the standard
// threshold λ·C·RTT of 001 §2.2 Eq. 1 ({lambda: 1, rtt: 100us}, or
// "1*C*RTT(100us)"); the last two resolve with the port's rate.
//
// # Markers
//
// A marker names its scheme and the scheme's parameters as the papers and
// the marking package name them: red, dctcp (RED as a cut-off at K on the
// queue, port or pool, or the "minimum" per-queue K_i with split), mqecn,
// pmsb, bcc, tcn, codel, ecnsharp, pie, pi2. The schemes, their keys, units,
// defaults and ranges are marking's registry (marking.Schemes), which this
// package reads: a key is decoded by its unit (thresholds, sizes,
// durations, rates, numbers, booleans, choices) and checked against its
// range, each error naming the key, the value as written and the range.
// docs/marking.md's tables are generated from the same registry (go
// generate ./config). Each marker becomes one dataplane.MarkerSpec (BCC
// two: its per-port and shared-pool members). Parse builds each marker
// once, so that the scheme's own checks — a dequeue-only scheme placed at
// enqueue, K_min above K_max — are reported at the marker's key
// (marking.ParamError names the key), and the switch built from the
// Config gets those very markers. BCC's buffer-model inputs (B, α, S_min,
// N) default to the port's pool and buffer settings (002 §IV-C).
//
// # Changes while the switch runs
//
// A Config keeps the document it was parsed from. Set writes `ecnswitch
// set`'s KEY=VALUE assignments into a copy of it and parses the result,
// so that a value set at run time is checked exactly as the file's is;
// Changes then compares a running Config with the next one (Set's, or the
// file's again on a reload) and returns what a running switch can apply
// (a port's marker chains, a queue's weight and quantum, a port's rate and
// bucket, a queue's α), each a Change applied through the dataplane's Set
// methods, or refuses, naming each key, what the switch fixes at start.
// Settings is what `ecnswitch get` prints of a running Config.
package config

//go:generate go run ./internal/schemedoc -root ../
