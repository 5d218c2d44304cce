package bench

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// Device is what forwards between the generator's and the sink's hosts in
// RunSwitch.
type Device string

// Devices RunSwitch compares.
const (
	// DeviceSwitch is ecnswitch with its full pipeline: L2 forwarding,
	// the DSCP classifier, 8 DWRR queues per port and DCTCP-style RED
	// marking at K = 32 KB per queue (PipelineConfig).
	DeviceSwitch Device = "ecnswitch"
	// DevicePatch is ecnswitch as a bare port-to-port patch: one queue per
	// port, no markers (PatchConfig).
	DevicePatch Device = "patch"
	// DeviceBridge is a Linux bridge over the same two veth ends, in the
	// same namespace, with ecnswitch stopped.
	DeviceBridge Device = "bridge"
	// DeviceTestpmd is DPDK's testpmd in io forwarding mode over two
	// net_af_xdp ports on the same veth ends, set up as the peer kit's
	// bench.sh does; its row is skipped when dpdk-testpmd is missing.
	DeviceTestpmd Device = "testpmd"
	// DeviceOVS is Open vSwitch's userspace datapath with the two veth
	// ends as afxdp ports and one flow between them, set up as the peer
	// kit's bench.sh does; its row is skipped when OVS is missing.
	DeviceOVS Device = "ovs-afxdp"
)

// pipelinePool is the shared buffer of the benchmark configurations.
const pipelinePool = 4 << 20

// PipelineConfig is the full-pipeline switch of DeviceSwitch over two
// ports: frames to macs[i] go out of port i (and other frames are learned
// or flooded), classified by DSCP class selector (DSCP>>3) into 8 DWRR
// queues of one MTU quantum per port, unshaped, with RED on each queue at
// K_min = K_max = 32 KB: DCTCP's cut-off marking (001 §2.2 footnote 1) at
// the "standard" 32 KB per-queue threshold of a 1 Gbit/s port (the MQ-ECN
// testbed; notes/prior-art.md §3). The buffer is one 4 MB pool.
func PipelineConfig(names []string, macs []net.HardwareAddr) dataplane.Config {
	cfg := baseConfig(names, 8, scheduler.DWRR)
	for i, m := range macs {
		cfg.Forwarding.MACs = append(cfg.Forwarding.MACs, dataplane.MACRule{MAC: m, Port: i})
	}
	red := func(q int) (marking.Marker, error) {
		return marking.NewRED(marking.REDConfig{Measure: marking.MeasureQueue, KMin: marking.Bytes(32_000)}, marking.Enqueue, q)
	}
	for i := range cfg.Ports {
		cfg.Ports[i].Enqueue = []dataplane.MarkerSpec{{Name: marking.SchemeRED, New: red}}
	}
	return cfg
}

// PatchConfig is DevicePatch: port 0 ↔ port 1 by static patch, one queue
// per port, no markers, no learning.
func PatchConfig(names []string) dataplane.Config {
	cfg := baseConfig(names, 1, scheduler.SP)
	cfg.Forwarding = dataplane.Forwarding{NoLearning: true, Patches: []dataplane.Patch{{From: 0, To: 1}, {From: 1, To: 0}}}
	return cfg
}

func baseConfig(names []string, nq int, kind scheduler.Kind) dataplane.Config {
	cfg := dataplane.Config{Pools: []buffer.PoolConfig{{Size: pipelinePool}}, Workers: 1}
	for _, n := range names {
		qs := make([]buffer.QueueConfig, nq)
		for q := range qs {
			qs[q] = buffer.QueueConfig{Cap: pipelinePool}
		}
		cfg.Ports = append(cfg.Ports, dataplane.PortConfig{
			Name:      n,
			Scheduler: scheduler.Config{Kind: kind, NumQueues: nq},
			Queues:    qs,
		})
	}
	return cfg
}

// Devices lists the names ParseDevices accepts.
func Devices() []Device {
	return []Device{DeviceSwitch, DevicePatch, DeviceTestpmd, DeviceOVS, DeviceBridge}
}

// devicesString lists Devices for error messages.
func devicesString() string {
	var names []string
	for _, d := range Devices() {
		names = append(names, string(d))
	}
	return strings.Join(names, ", ")
}

// ParseDevices reads a comma-separated list of devices.
func ParseDevices(s string) ([]Device, error) {
	var out []Device
	for _, f := range strings.Split(s, ",") {
		d := Device(strings.TrimSpace(f))
		if !slices.Contains(Devices(), d) {
			return nil, fmt.Errorf("device %q: want one of %s", f, devicesString())
		}
		out = append(out, d)
	}
	return out, nil
}
