package bench

import (
	"time"

	"github.com/ecnswitch/ecnswitch/internal/buildinfo"
	"github.com/ecnswitch/ecnswitch/loadgen"
)

// Trial is one generator run through a device at one offered load.
type Trial struct {
	Device Device `json:"device"`
	Size   int    `json:"size"`
	// Kind is "max" (unpaced), "sweep" or "search".
	Kind string `json:"kind"`
	// TargetPPS is the paced rate; 0 for the unpaced trial.
	TargetPPS    float64         `json:"target_pps"`
	Sent         uint64          `json:"sent"`
	Received     uint64          `json:"received"` // distinct frames
	Lost         uint64          `json:"lost"`     // Sent − Received
	LossRatio    float64         `json:"loss_ratio"`
	OfferedPPS   float64         `json:"offered_pps"`   // Sent / Trial
	ForwardedPPS float64         `json:"forwarded_pps"` // Received / Trial
	Reordered    uint64          `json:"reordered"`
	Duplicated   uint64          `json:"duplicated"`
	CE           uint64          `json:"ce"`
	Latency      loadgen.Latency `json:"latency"`
	GeneratorLag int64           `json:"generator_late_ns"` // schedule the generator gave up (it could not keep the rate)
	// Short says the generator offered less than TargetPPS·(1−Resolution):
	// it could not keep the rate, so the trial says nothing about higher ones.
	Short bool `json:"short"`
	// DeviceDropped counts the frames the device reported dropping during
	// the trial, DeviceDrops the same by reason (ecnswitch: its drop
	// reasons, and xsk_rx for its sockets' kernel drops; the bridge: the
	// dropped counters of the bridge and its ports; an external device:
	// none, its counters are its own). SinkDropped counts those the
	// sink's socket dropped (RX ring full, no fill frame), or with the
	// XDP sink those its interface dropped (a veth's ring full, a NIC's
	// missed and FIFO errors: the device sent faster than the sink's
	// receive took them): loss the measurement caused, not the device.
	DeviceDropped uint64            `json:"device_dropped"`
	DeviceDrops   map[string]uint64 `json:"device_drops,omitempty"`
	SinkDropped   uint64            `json:"sink_dropped"`
	Pass          bool              `json:"pass"` // LossRatio ≤ LossTolerance
}

// Result sums up one device at one frame size.
type Result struct {
	Device Device `json:"device"`
	Size   int    `json:"size"`
	// MaxOfferedPPS and MaxForwardedPPS come from the unpaced trial: the
	// most the generator offered and what reached the sink (a).
	MaxOfferedPPS   float64 `json:"max_offered_pps"`
	MaxForwardedPPS float64 `json:"max_forwarded_pps"`
	MaxLossRatio    float64 `json:"max_loss_ratio"`
	// ThroughputPPS is the RFC 2544 throughput (b): the highest offered
	// rate that passed; 0 if none did. GeneratorBound says the unpaced
	// trial itself passed, so the device may forward more than the
	// generator could offer.
	ThroughputPPS  float64 `json:"throughput_pps"`
	GeneratorBound bool    `json:"generator_bound"`
	// ThroughputLatency is the latency of the trial at the throughput.
	ThroughputLatency loadgen.Latency `json:"throughput_latency"`
	Trials            int             `json:"trials"`
}

// BoundBy says what limited the unpaced trial: "device" when the
// generator offered more than reached the sink, "generator" when all of
// it arrived (the device may forward more than the generator offered).
func (r Result) BoundBy() string {
	if r.MaxOfferedPPS > r.MaxForwardedPPS {
		return "device"
	}
	return "generator"
}

// SwitchReport is what RunSwitch measured.
type SwitchReport struct {
	Start   time.Time `json:"start"`
	Seconds float64   `json:"seconds"`
	Kernel  string    `json:"kernel"`
	CPUs    int       `json:"cpus"`
	// Build is the build of ecnswitch and the machine that measured.
	Build buildinfo.Info `json:"build"`
	// Generator is the generator's mode, GeneratorXDP or GeneratorAFXDP;
	// GeneratorNote says why live frames were not used, if they were not.
	Generator     string `json:"generator"`
	GeneratorNote string `json:"generator_note,omitempty"`
	// Sink is the sink's mode, loadgen.SinkXDP or loadgen.SinkAFXDP;
	// SinkNote says why the XDP sink was not used, if it was not.
	Sink     string `json:"sink"`
	SinkNote string `json:"sink_note,omitempty"`
	// External describes the external device and its interfaces, when
	// the run measured one (SwitchOptions.External).
	External *ExternalReport `json:"external,omitempty"`
	// Stamps says which clocks the TX and RX stamps were on, and whether
	// their latencies could be reported (checked again after every
	// trial; a trial whose check failed has its Latency withheld).
	Stamps loadgen.ClockCheck `json:"stamps"`
	// Skipped are the devices not measured, with the reason.
	Skipped map[Device]string `json:"skipped,omitempty"`
	Options struct {
		Sizes         []int     `json:"sizes"`
		Devices       []Device  `json:"devices"`
		Trial         string    `json:"trial"`
		Sweep         []float64 `json:"sweep"`
		Iterations    int       `json:"iterations"`
		Resolution    float64   `json:"resolution"`
		LossTolerance float64   `json:"loss_tolerance"`
		Flows         int       `json:"flows"`
		Mix           string    `json:"mix"`
	} `json:"options"`
	Results []Result `json:"results"`
	Trials  []Trial  `json:"trials"`
}

// Result returns the result of dev at size, or false.
func (r *SwitchReport) Result(dev Device, size int) (Result, bool) {
	for _, x := range r.Results {
		if x.Device == dev && x.Size == size {
			return x, true
		}
	}
	return Result{}, false
}
