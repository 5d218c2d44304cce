package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Progress is a sink's running tally, passed to SinkConfig.Progress.
type Progress struct {
	Elapsed    time.Duration // since Run started
	Received   uint64        // frames of the sink's run
	Lost       uint64        // sequence gaps so far (a reordered frame may still fill one)
	Reordered  uint64
	Duplicated uint64
	CE         uint64
	PPS        float64       // frames/s over the last interval, every run
	BPS        float64       // bit/s over the last interval (frame sizes plus Overhead)
	P50, P99   time.Duration // one-way latency so far
}

// String formats p as the one-line progress the CLI prints.
func (p Progress) String() string {
	return fmt.Sprintf("%6.1fs  rx %s %s  lost %d  reord %d  dup %d  ce %d  lat p50 %v p99 %v",
		p.Elapsed.Seconds(), siString(p.PPS, "pps"), siString(p.BPS, "bit/s"),
		p.Lost, p.Reordered, p.Duplicated, p.CE, p.P50, p.P99)
}

func (s *Sink) progress(now int64) Progress {
	t := s.Totals()
	dt := float64(now-s.progLast) / 1e9
	p := Progress{
		Elapsed: time.Duration(now - s.progStart),
		PPS:     float64(t.Packets-s.progPackets) / dt,
		BPS:     float64(t.Bytes-s.progBytes+(t.Packets-s.progPackets)*uint64(s.cfg.Overhead)) * 8 / dt,
		P50:     time.Duration(s.hist.ValueAtQuantile(50)),
		P99:     time.Duration(s.hist.ValueAtQuantile(99)),
	}
	for _, id := range s.active {
		fs := s.flows[id]
		p.Received += fs.received
		p.Lost += fs.lost()
		p.Reordered += fs.reordered
		p.Duplicated += fs.dup
		p.CE += fs.ce
	}
	s.progLast, s.progPackets, s.progBytes = now, t.Packets, t.Bytes
	return p
}

// lost is the number of sequence numbers from 0 to the highest seen that
// never arrived. Generators number every flow from 0, so a sink started
// after its generator counts the frames it missed as lost.
func (fs *flowState) lost() uint64 {
	if fs.top < 0 || uint64(fs.top+1) <= fs.unique {
		return 0
	}
	return uint64(fs.top+1) - fs.unique
}

// Latency summarizes one-way latencies in nanoseconds.
type Latency struct {
	Count    int64   `json:"count"`
	Min      int64   `json:"min_ns"`
	Mean     float64 `json:"mean_ns"`
	P50      int64   `json:"p50_ns"`
	P90      int64   `json:"p90_ns"`
	P99      int64   `json:"p99_ns"`
	P999     int64   `json:"p999_ns"`
	Max      int64   `json:"max_ns"`
	Negative uint64  `json:"negative"` // frames stamped after they arrived: the clocks disagree; not recorded
	Clamped  uint64  `json:"clamped"`  // frames over MaxLatency, recorded as MaxLatency
	// Sample is the fraction of frames whose latency was sampled (XDP
	// sink; 0 means every frame's, as the AF_XDP sink records), and
	// SamplesLost the samples a full ring lost (their frames were counted).
	Sample      float64 `json:"sample,omitempty"`
	SamplesLost uint64  `json:"samples_lost,omitempty"`
	// TxClock and RxClock name the clocks of the TX and RX stamps
	// (ClockMonotonic, "phc0") where the caller checked them
	// (Latency.Checked); Withheld says why the figures were dropped:
	// stamps on two clocks not known to agree.
	TxClock  string `json:"tx_clock,omitempty"`
	RxClock  string `json:"rx_clock,omitempty"`
	Withheld string `json:"withheld,omitempty"`
}

// FlowReport is one flow's counters.
type FlowReport struct {
	Flow       int    `json:"flow"`
	DSCP       uint8  `json:"dscp"`
	Received   uint64 `json:"received"` // frames, duplicates included
	Lost       uint64 `json:"lost"`
	Reordered  uint64 `json:"reordered"`
	Duplicated uint64 `json:"duplicated"`
	Late       uint64 `json:"late"` // reordered beyond the duplicate window
	CE         uint64 `json:"ce"`
	Bytes      uint64 `json:"bytes"`
	Highest    int64  `json:"highest_seq"` // −1 when nothing arrived
	// CPUs is how many CPUs the flow arrived on (XDP sink): with more
	// than one, reordering and duplicates are only seen among each CPU's
	// frames (XDPSink).
	CPUs int `json:"cpus,omitempty"`
}

// Report is what a sink counted.
type Report struct {
	Run        uint16 `json:"run"`
	Mode       string `json:"mode"`     // SinkXDP or SinkAFXDP: how the sink received
	Received   uint64 `json:"received"` // frames of the run, duplicates included
	Lost       uint64 `json:"lost"`
	Reordered  uint64 `json:"reordered"`
	Duplicated uint64 `json:"duplicated"`
	Late       uint64 `json:"late"`
	CE         uint64 `json:"ce"`
	Bytes      uint64 `json:"bytes"`     // frame sizes, FCS included
	Foreign    uint64 `json:"foreign"`   // frames that are not a generator's
	Malformed  uint64 `json:"malformed"` // of those, frames whose headers are cut short or invalid
	Stale      uint64 `json:"stale"`     // frames of another run
	// Unknown counts frames of the run whose flow id is beyond the XDP
	// sink's flow table (SinkConfig.Flows).
	Unknown uint64       `json:"unknown_flows,omitempty"`
	First   int64        `json:"first_ns"`
	Last    int64        `json:"last_ns"`
	Seconds float64      `json:"seconds"` // from the first frame to the last
	PPS     float64      `json:"pps"`
	BPS     float64      `json:"bps"` // frame sizes plus Overhead
	Latency Latency      `json:"latency"`
	Flows   []FlowReport `json:"flows"`
}

// Unique is the number of distinct frames received.
func (r Report) Unique() uint64 { return r.Received - r.Duplicated }

// Report sums the counters. Call it when neither Run nor Poll is running.
func (s *Sink) Report() Report {
	r := Report{Run: s.cfg.Run, Mode: SinkAFXDP, Foreign: s.foreign, Malformed: s.malformed, Stale: s.stale}
	ids := slices.Clone(s.active)
	slices.Sort(ids)
	for _, id := range ids {
		fs := s.flows[id]
		f := FlowReport{
			Flow: int(id), DSCP: fs.dscp, Received: fs.received, Lost: fs.lost(),
			Reordered: fs.reordered, Duplicated: fs.dup, Late: fs.late, CE: fs.ce,
			Bytes: fs.bytes, Highest: fs.top,
		}
		r.addFlow(f)
	}
	if s.first >= 0 {
		r.First, r.Last = s.first, s.last
		r.Seconds = float64(s.last-s.first) / 1e9
		if r.Seconds > 0 {
			r.PPS = float64(r.Received) / r.Seconds
			r.BPS = float64(r.Bytes+r.Received*uint64(s.cfg.Overhead)) * 8 / r.Seconds
		}
	}
	r.Latency = latency(s.hist, s.negative, s.clamped)
	return r
}

// latency summarizes h.
func latency(h *hdrhistogram.Histogram, negative, clamped uint64) Latency {
	l := Latency{Count: h.TotalCount(), Negative: negative, Clamped: clamped}
	if l.Count > 0 {
		l.Min, l.Mean, l.Max = h.Min(), h.Mean(), h.Max()
		l.P50 = h.ValueAtQuantile(50)
		l.P90 = h.ValueAtQuantile(90)
		l.P99 = h.ValueAtQuantile(99)
		l.P999 = h.ValueAtQuantile(99.9)
	}
	return l
}

// WriteJSON writes r as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes r as a summary and a table of flows.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "run %d (%s sink): %d frames (%d bytes) in %.3f s: %s, %s\n",
		r.Run, r.Mode, r.Received, r.Bytes, r.Seconds, siString(r.PPS, "pps"), siString(r.BPS, "bit/s"))
	fmt.Fprintf(&b, "lost %d  reordered %d  duplicated %d  late %d  CE %d  foreign %d (malformed %d)  stale %d",
		r.Lost, r.Reordered, r.Duplicated, r.Late, r.CE, r.Foreign, r.Malformed, r.Stale)
	if r.Unknown > 0 {
		fmt.Fprintf(&b, "  beyond the flow table %d", r.Unknown)
	}
	b.WriteString("\n")
	l := r.Latency
	sampled := "frames"
	if l.Sample > 0 {
		sampled = fmt.Sprintf("frames sampled, %.3g of all", l.Sample)
		if l.SamplesLost > 0 {
			sampled += fmt.Sprintf(", %d samples lost", l.SamplesLost)
		}
	}
	switch {
	case l.Withheld != "":
		fmt.Fprintf(&b, "one-way latency not reported: %s", l.Withheld)
	default:
		fmt.Fprintf(&b, "one-way latency (%d %s): min %v  mean %v  p50 %v  p90 %v  p99 %v  p99.9 %v  max %v",
			l.Count, sampled, time.Duration(l.Min), time.Duration(l.Mean), time.Duration(l.P50), time.Duration(l.P90),
			time.Duration(l.P99), time.Duration(l.P999), time.Duration(l.Max))
		if l.Negative > 0 || l.Clamped > 0 {
			fmt.Fprintf(&b, "  (%d negative: clocks disagree; %d clamped)", l.Negative, l.Clamped)
		}
	}
	if l.TxClock != "" {
		fmt.Fprintf(&b, "\nstamps: TX on %s, RX on %s", l.TxClock, l.RxClock)
	}
	b.WriteString("\n\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "flow\tdscp\treceived\tlost\treordered\tduplicated\tlate\tCE\t")
	split := 0
	for _, f := range r.Flows {
		mark := ""
		if f.CPUs > 1 {
			mark, split = "*", split+1
		}
		fmt.Fprintf(tw, "%d%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", f.Flow, mark, f.DSCP, f.Received, f.Lost, f.Reordered, f.Duplicated, f.Late, f.CE)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if split > 0 {
		fmt.Fprintf(&b, "* %d flows arrived on more than one CPU: their reordered and duplicated counts miss what crossed CPUs\n", split)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// addFlow appends f to the report's flows and adds its counts to the totals.
func (r *Report) addFlow(f FlowReport) {
	r.Flows = append(r.Flows, f)
	r.Received += f.Received
	r.Lost += f.Lost
	r.Reordered += f.Reordered
	r.Duplicated += f.Duplicated
	r.Late += f.Late
	r.CE += f.CE
	r.Bytes += f.Bytes
}
