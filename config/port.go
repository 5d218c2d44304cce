package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// Rates a port may be shaped to: a switch port's, from 1 Mbit/s to
// 400 Gbit/s (or 0, unshaped).
const (
	MinRate = 1_000_000       // bit/s: 1 Mbit
	MaxRate = 400_000_000_000 // bit/s: 400 Gbit
)

// portNames checks the ports' names and interfaces and returns the index
// of each name.
func (c *checker) portNames(f *fileYAML) map[string]int {
	names := map[string]int{}
	ifaces := map[string]int{}
	for i := range f.Ports {
		p := &f.Ports[i]
		key := fmt.Sprintf("ports[%d]", i)
		switch {
		case p.Name == "":
			c.errf(key+".name", "missing; every port needs a unique name")
		case !validName(p.Name):
			c.errf(key+".name", "%q: want 1 to %d letters, digits, '_', '.', ':' or '-', starting with a letter or digit", p.Name, maxNameLen)
		default:
			if j, dup := names[p.Name]; dup {
				c.errf(key+".name", "%q already names ports[%d]", p.Name, j)
			}
			names[p.Name] = i
		}
		iface := p.Interface
		if iface == "" {
			iface = p.Name
		}
		if len(iface) > maxIfName || strings.ContainsAny(iface, "/ \t\n") || iface == "." || iface == ".." {
			c.errf(key+".interface", "%q is not a Linux interface name (1 to %d bytes, no '/' or spaces)", iface, maxIfName)
		} else if j, dup := ifaces[iface]; dup && iface != "" {
			c.errf(key+".interface", "%q is already driven by ports[%d]", iface, j)
		}
		ifaces[iface] = i
	}
	return names
}

// port checks port i and appends it to the switch and the devices.
func (c *checker) port(cfg *Config, f *fileYAML, i int) {
	y := &f.Ports[i]
	k := func(sub string) string { return c.portKey(i, sub) }
	dev := Port{Name: y.Name, Interface: y.Interface}
	if dev.Interface == "" {
		dev.Interface = dev.Name
	}
	dev.AFXDP = c.afxdp(i, &y.AFXDP, cfg.Switch.FrameSize)
	p := dataplane.PortConfig{Name: y.Name, Worker: -1}

	nq := c.intIn(k("queues"), y.Queues, scheduler.DefaultQueues, 1, scheduler.MaxQueues)
	if y.Scheduler.Kind == scheduler.DualQ.String() {
		if y.Queues != nil && *y.Queues != 2 {
			c.errf(k("queues"), "%d for scheduler kind dualq, which has 2 queues (Classic and L4S)", *y.Queues)
		}
		nq = 2
	}
	mtu := c.intIn(k("mtu"), y.MTU, scheduler.DefaultMTU, scheduler.MinMTU, scheduler.MaxMTU)
	if mtu > cfg.Switch.FrameSize {
		c.errf(k("mtu"), "%d above frame_size %d; the switch's frames must hold the largest frame", mtu, cfg.Switch.FrameSize)
	}

	var rate int64
	if y.Rate != nil {
		rate = y.Rate.BPS
		if rate != 0 && (rate < MinRate || rate > MaxRate) {
			c.errf(k("rate"), "%q outside [%s, %s] (or 0 for unshaped)", y.Rate, FormatRate(MinRate), FormatRate(MaxRate))
			rate = 0
		}
	}
	overhead := scheduler.OverheadEthernet
	if c.oneOf(k("overhead"), y.Overhead, "ethernet", "ethernet", "none") == "none" {
		overhead = scheduler.OverheadNone
	}
	bucket := dataplane.DefaultBucket(rate)
	if y.Bucket != nil {
		if b := y.Bucket.N; b < 0 || b > scheduler.MaxBucket {
			c.errf(k("bucket"), "%q outside [0, %s]", y.Bucket, FormatSize(scheduler.MaxBucket))
		} else {
			bucket = b
		}
	}
	p.Shaper = scheduler.ShaperConfig{Rate: rate, Bucket: bucket, Overhead: overhead}
	p.Scheduler, p.DualQ = c.scheduler(i, &y.Scheduler, nq, mtu, rate, overhead)

	if y.Pool != "" {
		p.Pool = slices.Index(cfg.Pools, y.Pool)
		if p.Pool < 0 {
			c.errf(k("pool"), "%q is not a pool; pools are %s", y.Pool, strings.Join(cfg.Pools, ", "))
			p.Pool = 0
		}
	}
	p.Queues = c.buffer(i, &y.Buffer, nq, cfg.Switch.Pools[p.Pool].Size)
	p.Trim = c.trim(i, y.Trim, nq, mtu, p.Queues, p.Scheduler, cfg.Switch.Classifier)

	switch c.oneOf(k("non_ect"), y.NonECT, "drop", "drop", "pass") {
	case "pass":
		p.NonECT = marking.NonECTPass
	default:
		p.NonECT = marking.NonECTDrop
	}
	if y.Worker != nil {
		p.Worker = c.intIn(k("worker"), y.Worker, -1, -1, cfg.Switch.Workers-1)
	}
	p.Delay = c.delay(i, &y.Delay, nq, cfg.Switch.Classifier)
	if y.Coalesce != nil {
		switch d := y.Coalesce.D; {
		case d < 0 || d > dataplane.MaxCoalesce:
			c.errf(k("coalesce"), "%q outside [0, %v]", y.Coalesce, dataplane.MaxCoalesce)
		case d == 0:
			p.Coalesce = -1 // none: every packet goes to the device at its departure
		default:
			p.Coalesce = d
		}
	}
	p.INT = c.inband(i, y.INT, rate)
	if p.INT != nil && p.INT.DSCP != nil && p.Trim != nil && int(*p.INT.DSCP) == int(p.Trim.DSCP) {
		// Every trimmed header would then be looked into as an INT packet.
		c.errf(k("int.dscp"), "%d is trim.dscp, which marks trimmed packets; give INT packets another DSCP", *p.INT.DSCP)
	}
	cfg.Switch.Ports = append(cfg.Switch.Ports, p)
	cfg.Ports = append(cfg.Ports, dev)
}
