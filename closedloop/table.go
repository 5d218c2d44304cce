package closedloop

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Markers delimit the generated table in docs/marking.md.
const (
	BeginMarker = "<!-- closed-loop:begin -->"
	EndMarker   = "<!-- closed-loop:end -->"
)

// ErrNoMarkers is returned by ReplaceSection when the document lacks the
// begin and end markers, in that order.
var ErrNoMarkers = errors.New("closedloop: " + BeginMarker + " … " + EndMarker + " not found")

// Command is the command that regenerates the table, as the doc names it.
const Command = "ecnswitch closedloop table"

// schemeOrder is every scheme, in the order the tables print them.
var schemeOrder = [...]Scheme{PerPort, PerQueue, PerQueueMin, MQECN, PMSB, TCN, ECNSharp}

// Schemes returns every scheme in table order.
func Schemes() []Scheme { return append([]Scheme(nil), schemeOrder[:]...) }

// ECNSharpTestbedPstTarget is the pst_target of ECN♯'s own testbed (000
// §5.2: 85 µs for base RTTs of 70–210 µs), run as a second ECN♯ variant
// next to the rule of thumb, which at a fixed RTT sets pst_target equal to
// ins_target.
const ECNSharpTestbedPstTarget = 85 * time.Microsecond

// StaticFlows returns the static-flow experiment of 001 §2.2.3 and §5.1.1
// for cc: two equal-quantum DWRR queues, one flow in queue 1 and four in
// queue 2, under every scheme (and ECN♯ a second time with its testbed's
// pst_target).
func StaticFlows(cc CC) []Scenario {
	var out []Scenario
	for _, s := range schemeOrder {
		out = append(out, Scenario{Scheme: s, CC: cc, Queues: 2, Flows: []int{1, 4}})
	}
	return append(out, Scenario{Scheme: ECNSharp, CC: cc, Queues: 2, Flows: []int{1, 4}, PstTarget: ECNSharpTestbedPstTarget})
}

// The RTT-variation experiment: ECN♯'s testbed spread base RTTs over
// 70–210 µs (000 §5.2), "3× RTT variations"; RTTVariation gives one flow
// each end of it.
const (
	RTTVariationMin = 70 * time.Microsecond
	RTTVariationMax = 210 * time.Microsecond
)

// rttSchemes are the schemes of the RTT-variation table: current practice
// (per-queue standard and TCN with a threshold from the high-percentile
// RTT), ECN♯ by its rule of thumb, and ECN♯ and CoDel with its testbed's
// values.
var rttSchemes = [...]struct {
	scheme Scheme
	pst    time.Duration
}{{PerQueue, 0}, {TCN, 0}, {ECNSharp, 0}, {ECNSharp, ECNSharpTestbedPstTarget}, {CoDel, 0}}

// RTTVariation returns the RTT-variation experiment of 000 §2.3 and §5.2
// for cc and scheme: one queue and two long-lived flows with base RTTs of
// 70 and 210 µs, the ends of ECN♯'s testbed range. Every threshold is set
// from the high-percentile RTT, 210 µs, as current practice does (000
// §2.3), except ECN♯'s pst_target, λ times the mean RTT (000 §3.4), unless
// pst overrides it, and CoDel's. Here, unlike with one base RTT, ECN♯'s
// persistent rule sits below its instantaneous one.
func RTTVariation(cc CC, scheme Scheme, pst time.Duration) Scenario {
	return Scenario{Scheme: scheme, CC: cc, Queues: 1, Flows: []int{2}, RTT: RTTVariationMin, RTTMax: RTTVariationMax, PstTarget: pst}
}

// ActiveQueues returns the experiment of 001 §2.2.1 (Fig. 1) for cc and
// scheme: a port with four equal-quantum DWRR queues and eight flows, all
// in one queue (active = 1) or two in each of the four (active = 4).
func ActiveQueues(cc CC, scheme Scheme, active int) Scenario {
	flows := make([]int, active)
	for i := range flows {
		flows[i] = 8 / active
	}
	return Scenario{Scheme: scheme, CC: cc, Queues: 4, Flows: flows}
}

// label names a scenario's marking in a table row.
func (s Scenario) label() string {
	if s.Scheme == ECNSharp && s.PstTarget > 0 {
		return fmt.Sprintf("%v (pst_target %v)", s.Scheme, s.PstTarget)
	}
	return s.Scheme.String()
}

// Tables holds the results the doc reports.
type Tables struct {
	Static []Result    // StaticFlows for each congestion control
	Active [][2]Result // ActiveQueues with 1 and 4 active queues, per scheme and cc
	RTT    []Result    // RTTVariation per scheme and cc
}

// Collect runs every scenario of the doc's tables, with warm-up and
// duration overriding the defaults when not zero. progress, if not nil, is
// called after each run.
func Collect(warmup, duration time.Duration, progress func(Result)) (Tables, error) {
	var t Tables
	run := func(sc Scenario) (Result, error) {
		sc.Warmup, sc.Duration = warmup, duration
		r, err := Run(sc)
		if err == nil && progress != nil {
			progress(r)
		}
		return r, err
	}
	for _, cc := range []CC{ECNStar, DCTCP} {
		for _, sc := range StaticFlows(cc) {
			r, err := run(sc)
			if err != nil {
				return t, err
			}
			t.Static = append(t.Static, r)
		}
	}
	for _, cc := range []CC{ECNStar, DCTCP} {
		for _, s := range schemeOrder {
			var pair [2]Result
			for i, active := range []int{1, 4} {
				r, err := run(ActiveQueues(cc, s, active))
				if err != nil {
					return t, err
				}
				pair[i] = r
			}
			t.Active = append(t.Active, pair)
		}
	}
	for _, cc := range []CC{ECNStar, DCTCP} {
		for _, s := range rttSchemes {
			r, err := run(RTTVariation(cc, s.scheme, s.pst))
			if err != nil {
				return t, err
			}
			t.RTT = append(t.RTT, r)
		}
	}
	return t, nil
}

// kb formats bytes in kB (1000 bytes) with one decimal.
func kb(b float64) string { return fmt.Sprintf("%.1f", b/1000) }

// us formats a duration in µs without decimals.
func us(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/1e3) }

// Markdown renders the tables, with the common parameters, as the text
// between the doc's markers.
func (t Tables) Markdown() string {
	var b strings.Builder
	if len(t.Static) > 0 {
		sc := t.Static[0].Scenario
		fmt.Fprintf(&b, "Generated by `%s`: C = %.0f Mbit/s, base RTT %v, λ = %g, K = λ·C·RTT = %d B, warm-up %v, measured %v of virtual time, queues sampled every %v.\n\n",
			Command, float64(sc.Rate)/1e6, sc.RTT, sc.Lambda, sc.K(), sc.Warmup, sc.Duration, DefaultSample)
	}
	if len(t.Static) > 0 {
		b.WriteString("**Static flows, 1 : 4** (001 §2.2.3 Fig. 3, §5.1.1 Fig. 6): two equal-quantum DWRR queues, 1 flow in queue 1 and 4 in queue 2. Shares are each queue's delivered frame bytes over C; queues in kB (mean / p99); RTT in µs from send to ACK (mean / p99).\n\n")
		b.WriteString("| cc | marking | thresholds | share q1 | share q2 | total | q1 kB | q2 kB | port kB | RTT µs | marks q1 / q2 | drops |\n")
		b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range t.Static {
			fmt.Fprintf(&b, "| %v | %s | %s | %.3f | %.3f | %.3f | %s / %s | %s / %s | %s / %s | %s / %s | %d / %d | %d |\n",
				r.Scenario.CC, r.Scenario.label(), r.Marking, r.Share[0], r.Share[1], r.Throughput,
				kb(r.QueueMean[0]), kb(r.QueueP99[0]), kb(r.QueueMean[1]), kb(r.QueueP99[1]),
				kb(r.PortMean), kb(r.PortP99), us(r.RTTMean), us(r.RTTP99), r.Marks[0], r.Marks[1], r.Drops)
		}
	}
	if len(t.Active) > 0 {
		b.WriteString("\n**Active queues, 1 vs 4** (001 §2.2.1 Fig. 1): four equal-quantum DWRR queues and 8 flows, all in one queue or two in each. Port occupancy in kB (mean / p99), RTT in µs (mean / p99); the ratio is the mean port occupancy with 4 active queues over that with 1.\n\n")
		b.WriteString("| cc | marking | 1 queue: port kB | RTT µs | total | 4 queues: port kB | RTT µs | total | ratio |\n")
		b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, p := range t.Active {
			one, four := p[0], p[1]
			fmt.Fprintf(&b, "| %v | %s | %s / %s | %s / %s | %.3f | %s / %s | %s / %s | %.3f | %.2f× |\n",
				one.Scenario.CC, one.Scenario.label(),
				kb(one.PortMean), kb(one.PortP99), us(one.RTTMean), us(one.RTTP99), one.Throughput,
				kb(four.PortMean), kb(four.PortP99), us(four.RTTMean), us(four.RTTP99), four.Throughput,
				four.PortMean/one.PortMean)
		}
	}
	if len(t.RTT) > 0 {
		sc := t.RTT[0].Scenario
		fmt.Fprintf(&b, "\n**RTT variation** (000 §2.3, §5.2): one queue, two flows with base RTTs of %v and %v; thresholds from the high-percentile RTT %v (K = λ·C·RTT = %d B), ECN♯'s pst_target from the mean %v. Queue in kB (mean / p99), RTT in µs (mean / p99).\n\n",
			sc.RTT, sc.RTTMax, sc.RTTHigh(), sc.K(), sc.RTTMean())
		b.WriteString("| cc | marking | thresholds | total | queue kB | RTT µs | marks | drops |\n")
		b.WriteString("|---|---|---|---:|---:|---:|---:|---:|\n")
		for _, r := range t.RTT {
			fmt.Fprintf(&b, "| %v | %s | %s | %.3f | %s / %s | %s / %s | %d | %d |\n",
				r.Scenario.CC, r.Scenario.label(), r.Marking, r.Throughput,
				kb(r.QueueMean[0]), kb(r.QueueP99[0]), us(r.RTTMean), us(r.RTTP99), r.Marks[0], r.Drops)
		}
	}
	return b.String()
}

// ReplaceSection returns doc with the text between BeginMarker and
// EndMarker replaced by content; the markers stay, each on its own line.
func ReplaceSection(doc []byte, content string) ([]byte, error) {
	i := bytes.Index(doc, []byte(BeginMarker))
	if i < 0 {
		return nil, ErrNoMarkers
	}
	start := i + len(BeginMarker)
	j := bytes.Index(doc[start:], []byte(EndMarker))
	if j < 0 {
		return nil, ErrNoMarkers
	}
	end := start + j
	var out bytes.Buffer
	out.Write(doc[:start])
	out.WriteString("\n")
	out.WriteString(strings.TrimSpace(content))
	out.WriteString("\n")
	out.Write(doc[end:])
	return out.Bytes(), nil
}
