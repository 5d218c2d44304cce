package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/testbed"
	"github.com/ecnswitch/ecnswitch/testbed/bulk"
	"github.com/ecnswitch/ecnswitch/testbed/dctcp"
)

// Names of the marking schemes, as Options.Schemes takes them. A preset
// that runs one of marking's registered schemes is named as the scheme
// (its aliases, such as mq-ecn and ecn-sharp, are accepted too); the others
// are RED and PMSB configurations of the demo's own. Every threshold
// derives from the standard threshold K = λ·C·RTT with λ = 1 (001 §2.2
// Eq. 1), RTT = K/C being the time C takes to send K.
const (
	PerPort      = "per-port"             // per-port ECN, standard threshold (001 §2.2.3)
	PerQueue     = "per-queue"            // per-queue ECN, standard threshold (001 §2.2.1)
	MQECN        = marking.SchemeMQECN    // MQ-ECN (001 §3.3)
	QueueMinimum = "queue-minimum"        // per-queue ECN, minimum threshold w_i/Σw·K (001 §2.2.2 Eq. 2)
	PMSB         = marking.SchemePMSB     // port ≥ K and queue ≥ w_i/Σw·K, at enqueue (003 Algorithm 1)
	PMSBDequeue  = "pmsb-dequeue"         // PMSB at dequeue (003 §IV-C)
	CoDel        = marking.SchemeCoDel    // CoDel marking at dequeue, Options.CoDel (RFC 8289; 000 §5.2's baseline)
	TCN          = marking.SchemeTCN      // sojourn time > K/C, at dequeue (000 §2.1 Eq. 1)
	ECNSharp     = marking.SchemeECNSharp // ECN♯ by its rule of thumb with every target K/C, at dequeue (000 §3.4)
	NoMarking    = "none"                 // no marker: a port for delay-based senders (DX, 004), outside AllSchemes
)

// Schemes returns the names of the schemes Run runs by default, in order:
// the three of the MQ-ECN paper's argument.
func Schemes() []string { return []string{PerPort, PerQueue, MQECN} }

// AllSchemes returns the name of every scheme Run knows: Schemes, then the
// other papers' markers on the same port.
func AllSchemes() []string {
	return []string{PerPort, PerQueue, MQECN, QueueMinimum, PMSB, TCN, ECNSharp, PMSBDequeue, CoDel}
}

// ownTitles are the table's names of the presets that are not a
// registered scheme; a registered scheme's is its Title.
var ownTitles = map[string]string{
	PerPort:      "per-port ECN",
	PerQueue:     "per-queue ECN",
	QueueMinimum: "per-queue minimum",
	PMSBDequeue:  "PMSB at dequeue",
	NoMarking:    "no marking",
}

// canonical returns the name the demo knows scheme name by — a registered
// scheme's alias becomes its name — and whether it knows it.
func canonical(name string) (string, bool) {
	if _, ok := ownTitles[name]; ok {
		return name, true
	}
	if s, ok := marking.Lookup(name); ok && slices.Contains(AllSchemes(), s.Name) {
		return s.Name, true
	}
	return name, false
}

// Title returns scheme name as the table prints it, or "" for an unknown
// name.
func Title(name string) string {
	name, ok := canonical(name)
	if !ok {
		return ""
	}
	if t, ok := ownTitles[name]; ok {
		return t
	}
	s, _ := marking.Lookup(name)
	return s.Title
}

// Defaults of Options, the MQ-ECN testbed's settings (001 §4.2, §5.1;
// notes/prior-art.md §3).
const (
	DefaultDuration = 10 * time.Second
	DefaultWarmup   = time.Second
	DefaultRate     = 995_000_000 // 99.5% of 1 Gbit/s (001 §4.2)
	DefaultBucket   = 2500        // bytes, the prototype's (001 §4.2); see Options.Bucket
	DefaultBuffer   = 96 << 10    // bytes per port, shared by its queues (001 §5.1)
	DefaultK        = 32 << 10    // bytes, the standard threshold at 1 Gbit/s (001 §5.1)
	DefaultBeta     = 0.75        // MQ-ECN's round-time EWMA weight (001 §5)
	// DefaultCC is the hosts' TCP: DCTCP, which the MQ-ECN testbed ran
	// (001 §5.1: "DCTCP is enabled"), the kernel's or testbed/dctcp's BPF
	// one. Where neither loads, Run says so and runs FallbackCC.
	DefaultCC = dctcp.Name
	// FallbackCC is the hosts' TCP when DCTCP does not load: cubic, which
	// cuts its window to 0.7 on an ECN echo, once per round trip.
	FallbackCC = "cubic"
	// DefaultRTOMin is the hosts' least retransmission timeout: the MQ-ECN
	// testbed's 10 ms (001 §5.1), not Linux's 200 ms.
	DefaultRTOMin = 10 * time.Millisecond
)

// MinBusy is the least fraction of the time the bottleneck port may be
// busy for a run to count: below it the CPU, not the port, limited the
// flows, and the table flags the run as not comparable.
const MinBusy = 0.95

// Hosts is the number of testbed hosts: h1–h4 send (by default h1 queue
// 1's flows, h2–h4 queue 2's), h5 receives.
const Hosts = 5

// DSCPs that select the two queues (class selectors CS1 and CS2).
const (
	DSCPQueue1 = 8
	DSCPQueue2 = 16
)

// MaxClasses is the most classes (queues) Options.Classes may have.
const MaxClasses = 8

// DSCP returns the DSCP that selects queue q: class selector CS(q+1) for
// q < 7 (DSCPQueue1, DSCPQueue2, …, CS7), and 4 for the eighth queue.
func DSCP(q int) uint8 {
	if q < 7 {
		return uint8(8 * (q + 1))
	}
	return 4
}

// Class is one traffic class: its flows, the hosts that send them and its
// queue's place in the scheduler. Class i uses queue i, selected by DSCP(i).
type Class struct {
	// Flows is the number of long-lived flows, 1 to 64.
	Flows int
	// Senders are the indices (0 to Hosts−2, h1 to h4) of the hosts that
	// send the flows, which are dealt out to them in turn.
	Senders []int
	// Weight is the queue's DWRR quantum in MTUs, or its WFQ weight; 0
	// means 1 (scheduler.QueueConfig.Weight).
	Weight int64
	// Strict puts the queue at a strict-priority level above the weighted
	// one (scheduler.QueueConfig.Strict).
	Strict bool
	// Rate, if positive, caps each flow's sending rate in bit/s of frames
	// (SO_MAX_PACING_RATE, which turns on TCP's own pacing): the papers'
	// "5 Gbps TCP flow" (003 §VI-A). 0 sends as fast as TCP allows.
	Rate int64
}

// Options configure Run. The zero value of every field selects its default.
type Options struct {
	// Duration is how long each scheme is measured, after Warmup; at least
	// 100 ms. Default DefaultDuration.
	Duration time.Duration
	// Warmup runs the flows before measuring, so that slow start is over;
	// default DefaultWarmup, negative for none.
	Warmup time.Duration
	// Schemes lists the schemes to run, by name (see AllSchemes), in
	// order. Default: Schemes().
	Schemes []string

	// Rate is the egress ports' shaped rate C in bit/s. Default DefaultRate.
	Rate int64
	// Bucket is the shaper's token bucket in bytes. Default DefaultBucket,
	// the prototype's 2.5 KB (001 §4.2: "∼1.67 MTU"). Each port follows an
	// exact virtual line at C whatever the worker's passes, so the bucket
	// only bounds the burst: over any interval T the port sends at most
	// Bucket + one frame more than C·T/8. (Before the virtual line a
	// 2.5 KB bucket forfeited the credit of every pass longer than 20 µs;
	// measured here since, 2.5 KB keeps the port 97.7–99.2% busy.)
	Bucket int64
	// Buffer is each port's buffer in bytes, shared by its queues.
	// Default DefaultBuffer.
	Buffer int64
	// K is the standard marking threshold in bytes. Default DefaultK.
	K int64
	// Delay is added to every packet at every egress port before it is
	// queued (dataplane.Delay), to emulate a longer base RTT than the
	// testbed's; 0 adds none. A flow's RTT grows by twice Delay.
	Delay time.Duration
	// Flows is the number of flows in queue 1 (from h1) and in queue 2
	// (from h2–h4), each 1 to 64: a shorthand for two Classes. Default 1
	// and 4; must be zero when Classes is set.
	Flows [2]int
	// Classes, if set, are the traffic classes, 1 to MaxClasses, one queue
	// each, in place of Flows.
	Classes []Class
	// Scheduler is the ports' scheduler: DWRR (the default), WRR, WFQ or
	// SP; with some Class.Strict set, SP over it.
	Scheduler scheduler.Kind
	// CongestionControl is the hosts' TCP congestion control, their
	// namespaces' default and every demo socket's: "dctcp" cuts its window
	// by half the marked fraction's moving average, "reno" and "cubic"
	// react to an ECN echo once per round trip, bbr (the usual system
	// default here) ignores marks. Default DefaultCC; where DCTCP does not
	// load, FallbackCC runs instead and Result.CCNote says why. Any other
	// must load. A DCTCP sender negotiates ECN only with a DCTCP listener,
	// so every host runs the one given.
	CongestionControl string
	// RTOMin is the hosts' least TCP retransmission timeout
	// (net.ipv4.tcp_rto_min_us); default DefaultRTOMin, negative for the
	// kernel's 200 ms.
	RTOMin time.Duration

	// WorkerCPUs pins the switch's worker (one CPU), and HostCPUs are where
	// the hosts' receive processing runs (testbed.Options.HostCPUs); empty
	// places nothing. node.Demo fills both from dataplane.Place and keeps
	// the demo's own threads, which run the hosts' TCP, on HostCPUs.
	WorkerCPUs, HostCPUs []int
	// WorkerRX leaves the hosts' receive processing where their packets
	// arrive, on the worker's CPU, instead of steering it to HostCPUs
	// (RPS): for endpoints whose receive path is light (UDP, no TCP) while
	// the hosts' own CPU is the bottleneck. The demo's threads still run
	// on HostCPUs.
	WorkerRX bool

	// Sample, when positive, records each queue's goodput and its flows'
	// smoothed RTT (TCP_INFO, what `ss -ti` prints) every Sample during the
	// measured window, in SchemeResult.Series and SchemeResult.RTTs; at
	// least 10 ms. Default 0: nothing is recorded.
	Sample time.Duration

	// HostDelay, if set, adds HostDelay[i] to Delay at the egress port
	// towards host i (0 to Hosts−1): a sender's ACKs wait that long, so its
	// flows' base RTT grows by it (000 §2.3's RTT variation, which the
	// paper makes with netem at the senders). At most Hosts entries.
	HostDelay []time.Duration

	// ECNSharp, if set, gives ECN♯ its targets (000 §3.4's rule of thumb
	// for RTT variation); unset, all three are K/C. CoDel gives CoDel's
	// target and interval; unset, the ECN♯ paper's 85 µs and 200 µs
	// (000 §5.2, marking's defaults).
	ECNSharp marking.ECNSharpConfig
	CoDel    marking.CoDelConfig

	// Coalesce is the ports' batching window (dataplane.PortConfig.Coalesce);
	// 0 means the dataplane's default.
	Coalesce time.Duration

	// Start starts each scheme's switch: cfg, port i on interface
	// ifaces[i]. Required: node.Demo passes the switch on AF_XDP ports
	// that ecnswitch demo measures.
	Start StartFunc

	// Out receives progress lines while Run runs; nil prints nothing.
	Out io.Writer
	// Logger receives lifecycle events of the testbed, ports and switch.
	// Default zap.NewNop().
	Logger *zap.Logger

	// Subnet, ID and StateDir are passed to testbed.Up (see
	// testbed.Options); zero values select its defaults.
	Subnet   netip.Prefix
	ID       string
	StateDir string
}

// Switch is a running switch, as the demo measures it.
type Switch interface {
	Stats() dataplane.Stats
	ResetSojourn() // forget the queueing delays seen so far
	Stop() error   // stop the workers and close the ports
}

// StartFunc starts a switch of cfg whose port i drives the interface
// ifaces[i].
type StartFunc func(cfg dataplane.Config, ifaces []string) (Switch, error)

// Validate reports the first invalid option, naming it, its value and the
// allowed range.
func (o Options) Validate() error {
	_, err := o.withDefaults()
	return err
}

func (o Options) withDefaults() (Options, error) {
	if o.Duration == 0 {
		o.Duration = DefaultDuration
	}
	if o.Warmup == 0 {
		o.Warmup = DefaultWarmup
	}
	if o.Warmup < 0 {
		o.Warmup = 0
	}
	if len(o.Schemes) == 0 {
		o.Schemes = Schemes()
	}
	if o.Rate == 0 {
		o.Rate = DefaultRate
	}
	if o.Bucket == 0 {
		o.Bucket = DefaultBucket
	}
	if o.Buffer == 0 {
		o.Buffer = DefaultBuffer
	}
	if o.K == 0 {
		o.K = DefaultK
	}
	if o.Scheduler == 0 {
		o.Scheduler = scheduler.DWRR
	}
	switch {
	case len(o.Classes) > 0 && o.Flows != [2]int{}:
		return o, fmt.Errorf("demo: flows %v and %d classes: give one or the other", o.Flows, len(o.Classes))
	case len(o.Classes) == 0:
		if o.Flows == [2]int{} {
			o.Flows = [2]int{1, 4}
		}
		o.Classes = []Class{{Flows: o.Flows[0], Senders: []int{0}}, {Flows: o.Flows[1], Senders: []int{1, 2, 3}}}
	default:
		o.Classes = slices.Clone(o.Classes)
	}
	if o.CongestionControl == "" {
		o.CongestionControl = DefaultCC
	}
	switch {
	case o.RTOMin == 0:
		o.RTOMin = DefaultRTOMin
	case o.RTOMin < 0:
		o.RTOMin = 0 // testbed: the kernel's
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	switch {
	case o.Duration < 100*time.Millisecond:
		return o, fmt.Errorf("demo: duration %v: want at least 100ms", o.Duration)
	case o.Rate < 1e6 || o.Rate > 100e9:
		return o, fmt.Errorf("demo: rate %d bit/s outside [1e6, 1e11]", o.Rate)
	case o.Bucket < 1 || o.Bucket > 64<<20:
		return o, fmt.Errorf("demo: bucket %d bytes outside [1, %d]", o.Bucket, 64<<20)
	case o.Buffer < 4096 || o.Buffer > 1<<30:
		return o, fmt.Errorf("demo: buffer %d bytes outside [4096, %d]", o.Buffer, 1<<30)
	case o.K < 1 || o.K > o.Buffer:
		return o, fmt.Errorf("demo: k %d bytes outside [1, buffer = %d]", o.K, o.Buffer)
	case o.Delay < 0 || o.Delay > time.Second:
		return o, fmt.Errorf("demo: delay %v outside [0, 1s]", o.Delay)
	case o.RTOMin%time.Microsecond != 0 || o.RTOMin > time.Minute:
		return o, fmt.Errorf("demo: rto_min %v: want whole microseconds up to 1m (negative for the kernel's)", o.RTOMin)
	case len(o.HostDelay) > Hosts:
		return o, fmt.Errorf("demo: host_delay: %d entries, want at most %d (one per host)", len(o.HostDelay), Hosts)
	case o.Sample != 0 && (o.Sample < 10*time.Millisecond || o.Sample > o.Duration):
		return o, fmt.Errorf("demo: sample %v outside [10ms, duration = %v]", o.Sample, o.Duration)
	}
	if len(o.Classes) > MaxClasses {
		return o, fmt.Errorf("demo: %d classes: want at most %d", len(o.Classes), MaxClasses)
	}
	for i, d := range o.HostDelay {
		if d < 0 || d > time.Second {
			return o, fmt.Errorf("demo: host_delay[%d] %v outside [0, 1s]", i, d)
		}
	}
	for q, c := range o.Classes {
		if c.Flows < 1 || c.Flows > 64 {
			if o.Flows != [2]int{} {
				return o, fmt.Errorf("demo: flows[%d] %d outside [1, 64]", q, c.Flows)
			}
			return o, fmt.Errorf("demo: classes[%d].flows %d outside [1, 64]", q, c.Flows)
		}
		if len(c.Senders) == 0 {
			return o, fmt.Errorf("demo: classes[%d].senders: empty, want hosts among 0 to %d", q, Hosts-2)
		}
		for _, h := range c.Senders {
			if h < 0 || h > Hosts-2 {
				return o, fmt.Errorf("demo: classes[%d].senders: host %d outside [0, %d]", q, h, Hosts-2)
			}
		}
		if c.Rate < 0 || c.Rate > o.Rate {
			return o, fmt.Errorf("demo: classes[%d].rate %d bit/s outside [0, rate = %d]", q, c.Rate, o.Rate)
		}
		if c.Weight < 0 || c.Weight > scheduler.MaxWeight {
			return o, fmt.Errorf("demo: classes[%d].weight %d outside [0, %d]", q, c.Weight, scheduler.MaxWeight)
		}
	}
	o.Schemes = slices.Clone(o.Schemes)
	for i, s := range o.Schemes {
		name, ok := canonical(s)
		if !ok {
			return o, fmt.Errorf("demo: schemes[%d] %q: want one of %s", i, s, strings.Join(AllSchemes(), ", "))
		}
		o.Schemes[i] = name
	}
	return o, nil
}

// Result is what Run measured.
type Result struct {
	Rate     int64         // C, bit/s
	K        int64         // standard threshold, bytes
	Buffer   int64         // port buffer, bytes
	Bucket   int64         // shaper bucket, bytes
	Delay    time.Duration // added per egress port
	Flows    []int         // per class
	Warmup   time.Duration
	Duration time.Duration // requested measurement time per scheme
	CC       string        // the hosts' congestion control
	// CCSource says where CC came from: "BPF struct_ops, testbed/dctcp"
	// or "the kernel's"; CCNote, when set, why CC is not DefaultCC.
	CCSource, CCNote string
	RTOMin           time.Duration // the hosts' least RTO; 0: the kernel's
	Schemes          []SchemeResult
}

// SchemeResult is one scheme's run.
type SchemeResult struct {
	Scheme  string        // name, e.g. PerPort
	Title   string        // as the table prints it
	Elapsed time.Duration // measured window
	// Busy is the bottleneck port's wire rate over C in the window: its
	// frames plus 24 bytes each (FCS, preamble and SFD, gap) over C·T. Well
	// below 1, the port was not the bottleneck all the time.
	Busy float64
	// Peak is the most bytes the bottleneck port held at once since its
	// switch started, the flows' slow start included (003 Fig. 11).
	Peak   int64
	Queues []QueueResult // one per class
	// Worker is where the switch worker's thread spent the window:
	// fractions busy, spinning and asleep (dataplane.WorkerStats).
	Worker struct{ Busy, Spin, Sleep float64 }
	// Load is what the machine did in the window: each CPU's busy split,
	// the worker's, the senders' TCP limits; Load.Busy is Busy.
	Load Load
	// Drops are what the switch dropped on any port, by reason and kind:
	// in the warm-up (from the switch's start, SYNs included) and in the
	// window.
	WarmupDrops, Drops Drops
	// Series is each queue's goodput over the window, one Sample per
	// Options.Sample; empty unless Options.Sample was set.
	Series []Sample
	// RTTs are the smoothed RTTs of each queue's flows (TCP_INFO), every
	// flow's once per Options.Sample; empty unless Options.Sample was set.
	RTTs [][]time.Duration
}

// Sample is each queue's goodput over one sampling interval.
type Sample struct {
	At        time.Duration // end of the interval, from the start of the window
	Goodput   []float64     // bit/s of TCP payload read by the receiver, per queue
	PortBytes int64         // bytes the bottleneck port held at the end of the interval
}

// QueueResult is one queue of the bottleneck port (h5's) over the
// measured window.
type QueueResult struct {
	Flows   int
	Goodput float64 // bit/s of TCP payload read by the receiver
	Share   float64 // of all queues' goodput, 0..1
	Marks   uint64  // CE marks the switch set
	Drops   uint64  // packets the switch dropped (buffer or marker)
	// MeanDelay and P99Delay are the mean and 99th percentile of the
	// queueing delay (enqueue to dequeue) of the window's packets, the
	// percentile to within the switch histogram's 25% bucket width.
	MeanDelay, P99Delay time.Duration
	// MinRTT and SRTT are the flows' lowest and mean smoothed RTT as their
	// senders' TCP saw them (TCP_INFO) at the end of the window; Retrans
	// counts the segments they retransmitted in the window, as Drops
	// counts the switch's drops in it (slow start's losses in the warm-up
	// count in neither).
	MinRTT, SRTT time.Duration
	Retrans      uint64
}

// Goodput returns the scheme's total goodput in bit/s.
func (s SchemeResult) Goodput() float64 {
	var g float64
	for _, q := range s.Queues {
		g += q.Goodput
	}
	return g
}

// Run brings up the testbed, runs each scheme in turn, tears everything
// down and returns what it measured. On a cancelled ctx or an error it
// returns the schemes finished so far with the error; the teardown happens
// either way, and its failures are joined to the error.
func Run(ctx context.Context, o Options) (res *Result, err error) {
	o, err = o.withDefaults()
	if err != nil {
		return nil, err
	}
	if o.Start == nil {
		return nil, errors.New("demo: Options.Start is nil: run the demo through node.Demo, which starts its switches")
	}
	res = &Result{
		Rate: o.Rate, K: o.K, Buffer: o.Buffer, Bucket: o.Bucket, Delay: o.Delay, Flows: o.flows(),
		Warmup: o.Warmup, Duration: o.Duration,
	}
	say := func(format string, args ...any) { fmt.Fprintf(o.Out, format+"\n", args...) }

	say("ecnswitch demo: the MQ-ECN static-flow experiment (001 §2.2.3, §5.1.1) on real kernel TCP")
	bed, err := up(o)
	if err != nil {
		return res, err
	}
	res.CC, res.CCSource, res.CCNote, res.RTOMin = bed.Transport()
	o = bed.o
	defer func() {
		say("tearing down the testbed")
		err = errors.Join(err, bed.Down())
	}()
	tb, hosts := bed.tb, bed.Hosts()
	say("testbed %s: hosts h1–h5 in %s, switch ports %s…%s", tb.ID(), tb.Subnet(), hosts[0].SwitchIf, hosts[Hosts-1].SwitchIf)
	say("hosts' TCP: %s", res.TransportLine())
	if res.CCNote != "" {
		say("  (%s)", res.CCNote)
	}
	say("every port: shaped to %s, %v with %d queues, %d KB buffer, K = %d KB; Not-ECT packets a marker would mark are dropped (RFC 3168 §7)",
		strings.TrimSpace(mbit(float64(o.Rate))), o.Scheduler, len(o.Classes), o.Buffer>>10, o.K>>10)
	for q, c := range o.Classes {
		var hs []string
		for _, h := range c.Senders {
			hs = append(hs, hosts[h].Name)
		}
		say("queue %d: %d flows from %s (DSCP %d), to h5", q+1, c.Flows, strings.Join(hs, ", "), DSCP(q))
	}
	switch {
	case len(o.WorkerCPUs) > 0 && o.WorkerRX:
		say("CPUs: the switch worker and the hosts' receive processing on %s; the hosts' programs on %s",
			dataplane.FormatCPUs(o.WorkerCPUs), dataplane.FormatCPUs(o.HostCPUs))
	case len(o.WorkerCPUs) > 0:
		say("CPUs: the switch worker on %s; the hosts' TCP and receive processing (RPS) on %s",
			dataplane.FormatCPUs(o.WorkerCPUs), dataplane.FormatCPUs(o.HostCPUs))
	default:
		say("CPUs: not placed (no more CPUs than the one worker): the worker and the hosts share every CPU")
	}

	for i, name := range o.Schemes {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		tag := fmt.Sprintf("[%d/%d] %s", i+1, len(o.Schemes), Title(name))
		sr, err := runScheme(ctx, bed, name, func(format string, args ...any) { say(tag+": "+format, args...) })
		if err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			return res, fmt.Errorf("demo: %s: %w", name, err)
		}
		res.Schemes = append(res.Schemes, sr)
	}
	return res, nil
}

// Bed is the demo's testbed: Hosts hosts, on whose switch ports the
// demo's switch runs, one scheme at a time. Run uses one; experiments that
// bring their own traffic (package experiment's fct) use Up.
type Bed struct {
	o  Options
	tb *testbed.Testbed
	// ccNote says why the hosts run FallbackCC, when they do.
	ccNote string
}

// Up validates o, fills its defaults and brings up the testbed. The
// caller must call Down.
func Up(o Options) (*Bed, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if o.Start == nil {
		return nil, errors.New("demo: Options.Start is nil: bring the testbed up through node, which starts its switches")
	}
	return up(o)
}

func up(o Options) (*Bed, error) {
	tbo := testbed.Options{Hosts: Hosts, ID: o.ID, Subnet: o.Subnet, StateDir: o.StateDir, Logger: o.Logger, HostCPUs: o.HostCPUs, RTOMin: o.RTOMin}
	if o.WorkerRX {
		tbo.HostCPUs = nil
	}
	if slices.Contains(testbed.CongestionControls(), o.CongestionControl) {
		tbo.CongestionControl = o.CongestionControl // the hosts' default too, not only the demo's sockets'
	}
	tb, err := testbed.Up(tbo)
	var note string
	if err != nil && o.CongestionControl == DefaultCC {
		note = fmt.Sprintf("%s did not load, %s stands in: %v", o.CongestionControl, FallbackCC, err)
		o.CongestionControl, tbo.CongestionControl = FallbackCC, FallbackCC
		var ferr error
		if tb, ferr = testbed.Up(tbo); ferr != nil {
			err = errors.Join(err, ferr)
		} else {
			err = nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	return &Bed{o: o, tb: tb, ccNote: note}, nil
}

// Transport returns the hosts' TCP: its congestion control, where it came
// from ("BPF struct_ops, testbed/dctcp" or "the kernel's"), why it is not
// the default when it is not, and the hosts' least RTO (0: the kernel's).
func (b *Bed) Transport() (cc, source, note string, rtoMin time.Duration) {
	source = "the kernel's"
	if b.tb.HoldsDCTCP() {
		source = "BPF struct_ops, testbed/dctcp"
	}
	return b.tb.CongestionControl(), source, b.ccNote, b.tb.RTOMin()
}

// Options returns the options the bed runs with, defaults filled in.
func (b *Bed) Options() Options { return b.o }

// Hosts returns the testbed's hosts; the last receives.
func (b *Bed) Hosts() []testbed.Host { return b.tb.Hosts() }

// Start starts the switch of scheme name on the hosts' switch ports.
func (b *Bed) Start(name string) (Switch, error) {
	name, ok := canonical(name)
	if !ok {
		return nil, fmt.Errorf("demo: scheme %q: want one of %s", name, strings.Join(AllSchemes(), ", "))
	}
	hosts := b.Hosts()
	cfg, err := switchConfig(b.o, hosts, name)
	if err != nil {
		return nil, err
	}
	ifaces := make([]string, len(hosts))
	for i, h := range hosts {
		ifaces[i] = h.SwitchIf
	}
	return b.o.Start(cfg, ifaces)
}

// Down tears the testbed down.
func (b *Bed) Down() error {
	if err := b.tb.Down(); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	return nil
}

// PortBusy returns the fraction of the time a port shaped to rate bit/s
// was sending between two snapshots of its counters elapsed apart: its
// frames plus 24 bytes each (FCS, preamble and SFD, gap) over rate·elapsed.
func PortBusy(p0, p1 dataplane.PortStats, rate int64, elapsed time.Duration) float64 {
	wire := float64(p1.TxBytes-p0.TxBytes) + 24*float64(p1.TxPackets-p0.TxPackets)
	return wire * 8 / (float64(rate) * elapsed.Seconds())
}

// Bottleneck is the index of the receiver's port, h5's.
const Bottleneck = bottleneck

// bottleneck is the index of the receiver h5's port.
const bottleneck = Hosts - 1

// hostDelay returns the delay added towards host i.
func hostDelay(o Options, i int) time.Duration {
	if i < len(o.HostDelay) {
		return o.HostDelay[i]
	}
	return 0
}

// flows returns the number of flows of each class.
func (o Options) flows() []int {
	n := make([]int, len(o.Classes))
	for q, c := range o.Classes {
		n[q] = c.Flows
	}
	return n
}

// switchConfig is the switch of scheme name over hosts' ports.
func switchConfig(o Options, hosts []testbed.Host, name string) (dataplane.Config, error) {
	// The standard threshold as λ·C·RTT with λ = 1 and the RTT that makes it
	// K at C: MQ-ECN takes it in this form (001 §3.3), and the RED markers
	// resolve the same Threshold to the same bytes.
	rtt := (o.K*8e9 + o.Rate - 1) / o.Rate
	std := marking.Standard(rtt, 1)
	if got := std.Bytes(o.Rate, 0); got != o.K {
		return dataplane.Config{}, fmt.Errorf("k %d B is not λ·C·RTT for whole-ns RTTs at C = %d bit/s (RTT %d ns gives %d B)", o.K, o.Rate, rtt, got)
	}
	enq, deq := markers(name, std, rtt, o)
	cfg := dataplane.Config{
		Workers:    1,                     // two cores: one for the worker, one for the hosts' TCP
		Spin:       dataplane.DefaultSpin, // a few idle passes, then sleep until the next departure or an arrival
		CPUs:       o.WorkerCPUs,
		Classifier: dataplane.Classifier{DSCP: map[uint8]int{}},
	}
	queues := make([]scheduler.QueueConfig, len(o.Classes))
	caps := make([]buffer.QueueConfig, len(o.Classes))
	for q, c := range o.Classes {
		cfg.Classifier.DSCP[DSCP(q)] = q
		queues[q] = scheduler.QueueConfig{Weight: c.Weight, Strict: c.Strict}
		caps[q] = buffer.QueueConfig{Cap: o.Buffer}
	}
	for i, h := range hosts {
		// One pool per port, so that each port has its own 96 KB that its
		// queues share first come first served (001 §5.1): a static cap
		// equal to the pool.
		cfg.Pools = append(cfg.Pools, buffer.PoolConfig{Size: o.Buffer})
		cfg.Ports = append(cfg.Ports, dataplane.PortConfig{
			Name: h.SwitchIf,
			Scheduler: scheduler.Config{
				Kind:     o.Scheduler,
				Queues:   slices.Clone(queues), // DWRR: Weight charged MTUs each, by default 1
				Overhead: scheduler.OverheadEthernet,
				LineRate: o.Rate,
				Beta:     DefaultBeta,
			},
			Shaper:   scheduler.ShaperConfig{Rate: o.Rate, Bucket: o.Bucket, Overhead: scheduler.OverheadEthernet},
			Pool:     i,
			Queues:   slices.Clone(caps),
			Enqueue:  enq,
			Dequeue:  deq,
			Delay:    dataplane.Delay{Fixed: o.Delay + hostDelay(o, i)},
			Coalesce: o.Coalesce,
		})
	}
	return cfg, nil
}

// markers returns the enqueue and dequeue marker chains of scheme name,
// whose thresholds derive from the standard threshold std = λ·C·rtt with
// λ = 1.
func markers(name string, std marking.Threshold, rtt int64, o Options) (enq, deq []dataplane.MarkerSpec) {
	one := func(name string, f func(nq int) (marking.Marker, error)) []dataplane.MarkerSpec {
		return []dataplane.MarkerSpec{{Name: name, New: f}}
	}
	switch name {
	case PerPort:
		enq = one("port-standard", func(nq int) (marking.Marker, error) {
			return marking.NewRED(marking.CutOff(marking.MeasurePort, std), marking.Enqueue, nq)
		})
	case PerQueue:
		enq = one("queue-standard", func(nq int) (marking.Marker, error) {
			return marking.NewRED(marking.CutOff(marking.MeasureQueue, std), marking.Enqueue, nq)
		})
	case MQECN:
		enq = one(MQECN, func(nq int) (marking.Marker, error) {
			return marking.NewMQECN(marking.MQECNConfig{RTT: rtt, Lambda: 1}, marking.Enqueue, nq)
		})
	case QueueMinimum:
		enq = one(QueueMinimum, func(nq int) (marking.Marker, error) {
			return marking.NewRED(marking.Minimum(std), marking.Enqueue, nq)
		})
	case PMSB:
		enq = one(PMSB, func(nq int) (marking.Marker, error) {
			return marking.NewPMSB(marking.PMSBConfig{PortThreshold: std}, marking.Enqueue, nq)
		})
	case PMSBDequeue:
		deq = one(PMSBDequeue, func(nq int) (marking.Marker, error) {
			return marking.NewPMSB(marking.PMSBConfig{PortThreshold: std}, marking.Dequeue, nq)
		})
	case TCN:
		deq = one(TCN, func(nq int) (marking.Marker, error) {
			return marking.NewTCN(marking.TCNConfig{Threshold: rtt}, marking.Dequeue, nq)
		})
	case ECNSharp:
		// One base RTT: RTT_p90 = mean RTT = rtt, so ins_target,
		// pst_target and pst_interval are all rtt (000 §3.4).
		cfg := o.ECNSharp
		if cfg == (marking.ECNSharpConfig{}) {
			cfg = marking.ECNSharpConfig{InsTarget: rtt, PstTarget: rtt, PstInterval: rtt}
		}
		deq = one(ECNSharp, func(nq int) (marking.Marker, error) {
			return marking.NewECNSharp(cfg, marking.Dequeue, nq)
		})
	case CoDel:
		deq = one(CoDel, func(nq int) (marking.Marker, error) {
			return marking.NewCoDel(o.CoDel, marking.Dequeue, nq)
		})
	}
	return enq, deq
}

// dial connects a flow from h to dst with DSCP dscp and congestion control
// cc. A namespace may only make an algorithm of
// net.ipv4.tcp_allowed_congestion_control its default, so the choice is
// made per socket (TCP_CONGESTION, which root may set to any algorithm the
// kernel has).
func dial(ctx context.Context, h testbed.Host, dst netip.AddrPort, dscp uint8, cc string, rate int64) (net.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := h.DialTCP(dctx, dst, dscp)
	if err != nil {
		return nil, err
	}
	err = control(c, func(fd int) error { return unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc) })
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("host %s: congestion control %q: %w", h.Name, cc, err)
	}
	if rate > 0 {
		// The pacing rate counts the bytes of the frames TCP hands down,
		// without Ethernet's 24 bytes of FCS, preamble and gap a frame.
		pace := uint64(float64(rate) / 8 * 1514 / 1538)
		err = control(c, func(fd int) error { return unix.SetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, pace) })
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("host %s: pacing rate %d B/s: %w", h.Name, pace, err)
		}
	}
	return c, nil
}

// control runs f on c's file descriptor.
func control(c net.Conn, f func(fd int) error) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return fmt.Errorf("%T has no file descriptor", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// tcpInfo returns the lowest minimum RTT, the mean smoothed RTT and the
// total retransmitted segments of the connections (TCP_INFO).
func tcpInfo(cs []net.Conn) (minRTT, srtt time.Duration, retrans uint64) {
	var sum time.Duration
	n := 0
	for _, c := range cs {
		var ti *unix.TCPInfo
		if control(c, func(fd int) error {
			var err error
			ti, err = unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
			return err
		}) != nil {
			continue
		}
		m := time.Duration(ti.Min_rtt) * time.Microsecond
		if n == 0 || m < minRTT {
			minRTT = m
		}
		sum += time.Duration(ti.Rtt) * time.Microsecond
		retrans += uint64(ti.Total_retrans)
		n++
	}
	if n > 0 {
		srtt = sum / time.Duration(n)
	}
	return minRTT, srtt, retrans
}

// appendRTTs appends the smoothed RTT of each connection (TCP_INFO) to
// rtts.
func appendRTTs(rtts []time.Duration, cs []net.Conn) []time.Duration {
	for _, c := range cs {
		var ti *unix.TCPInfo
		if control(c, func(fd int) error {
			var err error
			ti, err = unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
			return err
		}) == nil {
			rtts = append(rtts, time.Duration(ti.Rtt)*time.Microsecond)
		}
	}
	return rtts
}

// flowsDone reports whether every flow the receivers accepted has ended.
func flowsDone(rs []*bulk.Receiver) bool {
	for _, r := range rs {
		if slices.ContainsFunc(r.Flows(), func(f bulk.Flow) bool { return !f.Done }) {
			return false
		}
	}
	return true
}

// mbit formats a rate in bit/s as Mbit/s.
func mbit(bps float64) string { return fmt.Sprintf("%6.1f Mbit/s", bps/1e6) }
