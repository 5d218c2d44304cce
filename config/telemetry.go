package config

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"time"

	"github.com/ecnswitch/ecnswitch/telemetry"
)

// Limits of the telemetry section.
const (
	minPeriod  = time.Microsecond // queue_sample_period
	maxPeriod  = 10 * time.Second
	maxSamples = 1 << 24 // queue_samples
	maxSeries  = 1 << 26 // samples × series held by the sampler's ring (512 MiB)
)

// telemetry checks the telemetry section.
func (c *checker) telemetry(cfg *Config, f *fileYAML) {
	t := f.Telemetry
	cfg.Telemetry = Telemetry{Enabled: true, Listen: telemetry.DefaultListen, QueueSamplePeriod: telemetry.DefaultSamplePeriod, QueueSamples: telemetry.DefaultSamples}
	if t.Enabled != nil {
		cfg.Telemetry.Enabled = *t.Enabled
	}
	if t.Listen != nil {
		host, port, err := net.SplitHostPort(*t.Listen)
		n, perr := strconv.Atoi(port)
		switch {
		case err != nil:
			c.errf("telemetry.listen", "%q is not host:port (e.g. 127.0.0.1:9090, [::1]:9090, :9090 for every address)", *t.Listen)
		case perr != nil || n < 0 || n > 65535:
			c.errf("telemetry.listen", "port %q outside [0, 65535]", port)
		case host != "" && host != "localhost" && net.ParseIP(host) == nil:
			c.errf("telemetry.listen", "host %q is not an IP address or localhost", host)
		default:
			cfg.Telemetry.Listen = *t.Listen
		}
	}
	if t.QueueSamplePeriod != nil {
		if d := t.QueueSamplePeriod.D; d < minPeriod || d > maxPeriod {
			c.errf("telemetry.queue_sample_period", "%q outside [%v, %v]", t.QueueSamplePeriod, minPeriod, maxPeriod)
		} else {
			cfg.Telemetry.QueueSamplePeriod = d
		}
	}
	cfg.Telemetry.QueueSamples = c.intIn("telemetry.queue_samples", t.QueueSamples, telemetry.DefaultSamples, 2, maxSamples)
	for i, h := range t.Hosts {
		if !hostRE.MatchString(h) {
			c.errf(fmt.Sprintf("telemetry.hosts[%d]", i), "%q: want a DNS name, e.g. switch1.lab (localhost, IP addresses and this machine's name are always served)", h)
			continue
		}
		cfg.Telemetry.Hosts = append(cfg.Telemetry.Hosts, h)
	}
}

// hostRE matches a DNS name of letters, digits and hyphens.
var hostRE = regexp.MustCompile(`^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.?$`)

// telemetryMemory bounds the sampler's ring: samples × series int64s.
func (c *checker) telemetryMemory(cfg *Config) {
	if !cfg.Telemetry.Enabled {
		return
	}
	series := len(cfg.Switch.Pools)
	for _, p := range cfg.Switch.Ports {
		series += p.Scheduler.NumQueues
	}
	if n := cfg.Telemetry.QueueSamples; int64(n)*int64(series+1) > maxSeries {
		c.errf("telemetry.queue_samples", "%d samples × %d series (queues, pools and the time) exceed %d values (%d MiB); want at most %d",
			n, series+1, maxSeries, maxSeries*8>>20, maxSeries/(series+1))
	}
}
