package config

import "gopkg.in/yaml.v3"

// The types in this file are the file's shape: what yaml.v3 decodes into,
// strictly (unknown keys are errors). Pointers mark keys whose absence
// differs from their zero value. Validation turns them into a Config.

type fileYAML struct {
	LogLevel     string         `yaml:"log_level"`
	Workers      *int           `yaml:"workers"`
	Frames       *int           `yaml:"frames"`
	FrameSize    *int           `yaml:"frame_size"`
	Batch        *int           `yaml:"batch"`
	Spin         *int           `yaml:"spin"`
	NeverSleep   *bool          `yaml:"never_sleep"`
	BusyPoll     *bool          `yaml:"busy_poll"` // the old name of never_sleep, for one release
	CPUs         []int          `yaml:"cpus"`
	AFXDP        afxdpYAML      `yaml:"afxdp"`
	Telemetry    telemetryYAML  `yaml:"telemetry"`
	Pools        []poolYAML     `yaml:"pools"`
	Forwarding   forwardingYAML `yaml:"forwarding"`
	Classifier   classifierYAML `yaml:"classifier"`
	PortDefaults portYAML       `yaml:"port_defaults"`
	Ports        []portYAML     `yaml:"ports"`
	Capture      captureYAML    `yaml:"capture"`
	Control      controlYAML    `yaml:"control"`
}

type afxdpYAML struct {
	Mode           string `yaml:"mode"`
	ZeroCopy       string `yaml:"zerocopy"`
	Queues         []int  `yaml:"queues"`
	Frames         *int   `yaml:"frames"`
	FrameSize      *int   `yaml:"frame_size"`
	FillRing       *int   `yaml:"fill_ring"`
	CompletionRing *int   `yaml:"completion_ring"`
	RxRing         *int   `yaml:"rx_ring"`
	TxRing         *int   `yaml:"tx_ring"`
	TxBudget       *int   `yaml:"tx_budget"`
	TxHash         bool   `yaml:"tx_hash"`
	Transmit       string `yaml:"transmit"`
	LiveMin        *int   `yaml:"live_min"`
	RxTimestamp    string `yaml:"rx_timestamp"`
	TxTimestamp    string `yaml:"tx_timestamp"`
	Force          bool   `yaml:"force"`
}

type telemetryYAML struct {
	Enabled           *bool     `yaml:"enabled"`
	Listen            *string   `yaml:"listen"`
	QueueSamplePeriod *Duration `yaml:"queue_sample_period"`
	QueueSamples      *int      `yaml:"queue_samples"`
	Hosts             []string  `yaml:"hosts"`
}

type captureYAML struct {
	Dir        *string           `yaml:"dir"`
	Quota      *Size             `yaml:"quota"`
	RingMemory *Size             `yaml:"ring_memory"`
	Captures   []captureSpecYAML `yaml:"captures"`
}

type controlYAML struct {
	Socket *string `yaml:"socket"`
	Group  *string `yaml:"group"`
}

// captureSpecYAML is a capture.Spec as the file writes it: the port by
// name, max_bytes as a size.
type captureSpecYAML struct {
	Port      string `yaml:"port"`
	Direction string `yaml:"direction"`
	Filter    string `yaml:"filter"`
	Queue     *int   `yaml:"queue"`
	DSCP      *int   `yaml:"dscp"`
	Format    string `yaml:"format"`
	Path      string `yaml:"path"`
	SnapLen   *int   `yaml:"snaplen"`
	MaxBytes  *Size  `yaml:"max_bytes"`
	MaxFiles  *int   `yaml:"max_files"`
	Ring      *int   `yaml:"ring"`
}

type poolYAML struct {
	Name string `yaml:"name"`
	Size *Size  `yaml:"size"`
}

type forwardingYAML struct {
	Learning   *bool        `yaml:"learning"`
	AgeTime    *Duration    `yaml:"age_time"`
	TableSize  *int         `yaml:"table_size"`
	MACLimit   *int         `yaml:"mac_limit"`
	FloodRate  *int         `yaml:"flood_rate"`
	FloodBurst *int         `yaml:"flood_burst"`
	Patches    []patchYAML  `yaml:"patches"`
	MACs       []macYAML    `yaml:"macs"`
	Prefixes   []prefixYAML `yaml:"prefixes"`
}

type patchYAML struct {
	From string `yaml:"from"`
	To   string `yaml:"to"`
}

type macYAML struct {
	MAC  string `yaml:"mac"`
	Port string `yaml:"port"`
}

type prefixYAML struct {
	Prefix string `yaml:"prefix"`
	Port   string `yaml:"port"`
}

type classifierYAML struct {
	DSCP   map[int]int `yaml:"dscp"`
	UsePCP bool        `yaml:"use_pcp"`
	PCP    map[int]int `yaml:"pcp"`
}

type portYAML struct {
	Name      string        `yaml:"name"`
	Interface string        `yaml:"interface"`
	AFXDP     afxdpYAML     `yaml:"afxdp"`
	Queues    *int          `yaml:"queues"`
	MTU       *int          `yaml:"mtu"`
	Scheduler schedulerYAML `yaml:"scheduler"`
	Rate      *Rate         `yaml:"rate"`
	Bucket    *Size         `yaml:"bucket"`
	Overhead  string        `yaml:"overhead"`
	Pool      string        `yaml:"pool"`
	Buffer    bufferYAML    `yaml:"buffer"`
	Markers   markersYAML   `yaml:"markers"`
	NonECT    string        `yaml:"non_ect"`
	Delay     delayYAML     `yaml:"delay"`
	Coalesce  *Duration     `yaml:"coalesce"`
	Worker    *int          `yaml:"worker"`
	Trim      *trimYAML     `yaml:"trim"`
	INT       *intYAML      `yaml:"int"`
}

type schedulerYAML struct {
	Kind   string                     `yaml:"kind"`
	Queues map[int]schedulerQueueYAML `yaml:"queues"`
	Beta   *float64                   `yaml:"beta"` // T_round's β, or PI2's β with kind dualq
	TIdle  *Duration                  `yaml:"t_idle"`

	// Kind dualq: tc-dualpi2's keys.
	Target            *Duration      `yaml:"target"`
	TUpdate           *Duration      `yaml:"tupdate"`
	Alpha             *float64       `yaml:"alpha"`
	CouplingFactor    *float64       `yaml:"coupling_factor"`
	StepThresh        *stepThresh    `yaml:"step_thresh"`
	MinQlenStep       *int64         `yaml:"min_qlen_step"`
	RampRange         *Duration      `yaml:"ramp_range"`
	DropOnOverload    *bool          `yaml:"drop_on_overload"`
	ECNMask           string         `yaml:"ecn_mask"`
	ClassicProtection *int           `yaml:"classic_protection"`
	TShift            *Duration      `yaml:"tshift"`
	DSCP              map[int]string `yaml:"dscp"`
	Seed              *uint64        `yaml:"seed"`
}

type schedulerQueueYAML struct {
	Weight  *int64 `yaml:"weight"`
	Quantum *Size  `yaml:"quantum"`
	Strict  bool   `yaml:"strict"`
}

type bufferYAML struct {
	bufferQueueYAML `yaml:",inline"`
	Queues          map[int]bufferQueueYAML `yaml:"queues"`
}

type bufferQueueYAML struct {
	Alpha   *float64 `yaml:"alpha"`
	Reserve *Size    `yaml:"reserve"`
	Cap     *Size    `yaml:"cap"`
}

type markersYAML struct {
	Enqueue []markerNode `yaml:"enqueue"`
	Dequeue []markerNode `yaml:"dequeue"`
}

// markerNode keeps a marker's mapping for the second, per-scheme pass:
// which keys are allowed depends on the scheme.
type markerNode struct{ node *yaml.Node }

// UnmarshalYAML implements yaml.Unmarshaler.
func (m *markerNode) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return nodeError(n, "%s is not a marker; want a mapping with a scheme key", describeNode(n))
	}
	m.node = n
	return nil
}

type delayYAML struct {
	delayParamsYAML `yaml:",inline"`
	Distribution    string                  `yaml:"distribution"`
	Seed            *uint64                 `yaml:"seed"`
	PerQueue        map[int]delayParamsYAML `yaml:"per_queue"`
	PerDSCPClass    map[int]delayParamsYAML `yaml:"per_dscp_class"`
}

type delayParamsYAML struct {
	Fixed  *Duration `yaml:"fixed"`
	Jitter *Duration `yaml:"jitter"`
}
