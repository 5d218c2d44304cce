// Package telemetry serves a running switch's counters and queue depths
// over HTTP: /metrics in Prometheus format (github.com/prometheus/client_golang,
// a collector that reads dataplane.Switch.Stats on every scrape), /stats as
// JSON, and /queues, a time series of every queue's and pool's occupancy
// sampled at a fixed period (100 µs by default) into a ring — enough to draw
// the papers' queue-length-over-time plots. A /queues response is written
// as it is encoded, from one copy of at most MaxWindowValues values taken in
// short holds of the sampler's lock; longer spans come in pages (more,
// next), and a port named twice is selected once.
//
// Nothing here runs per packet: the switch keeps atomic counters and the
// buffer's byte counts, and telemetry reads them on a scrape or a sampler
// tick. The server listens on 127.0.0.1 by default, serves only reads,
// answers only requests whose Host is localhost, an IP address, the
// machine's name or one of Options.Hosts (against DNS rebinding), and has
// read, write and idle timeouts (internal/httpguard). Handle adds
// endpoints before Start.
package telemetry
