package demo

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Payload bytes and wire bytes of a full-sized TCP segment at MTU 1500
// with timestamps: MSS 1448 in a 1514-byte frame that costs 1538 bytes on
// the wire (FCS, preamble and SFD, inter-frame gap). The most goodput a
// port shaped to C can carry is C·1448/1538.
const (
	segPayload = 1448
	segWire    = 1448 + 12 + 20 + 20 + 14 + 4 + 8 + 12
)

// WriteTable writes the schemes side by side, one column each: per queue
// its goodput and share, CE marks, drops, queueing delay, and what its
// flows' TCP saw; then the totals. The "queue 2 : queue 1" row is the
// experiment's point: above 1 under per-port marking, about 1 with
// per-queue marking and MQ-ECN (001 Fig. 3, Fig. 6).
func (r *Result) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\nMQ-ECN static flows on ecnswitch (001 §2.2.3, §5.1.1): h5's port shaped to %.1f Mbit/s, DWRR with 2 equal-quantum queues,\n",
		float64(r.Rate)/1e6)
	fmt.Fprintf(&b, "%d KB shared buffer, standard threshold K = %d KB; hosts' TCP: %s", r.Buffer>>10, r.K>>10, r.TransportLine())
	if r.Delay > 0 {
		fmt.Fprintf(&b, ", %v added per egress port", r.Delay)
	}
	fmt.Fprintf(&b, "; measured %v per scheme after %v of warm-up.\n\n", r.Duration, r.Warmup)

	tw := tabwriter.NewWriter(&b, 0, 0, 3, ' ', tabwriter.AlignRight)
	const labelWidth = 26
	row := func(label string, cell func(s SchemeResult) string) {
		fmt.Fprintf(tw, "%-*s\t", labelWidth, label)
		for _, s := range r.Schemes {
			fmt.Fprintf(tw, "%s\t", cell(s))
		}
		fmt.Fprintln(tw)
	}
	row("", func(s SchemeResult) string { return s.Title })
	for q := range r.Flows {
		flows := "flows"
		if r.Flows[q] == 1 {
			flows = "flow"
		}
		fmt.Fprintf(tw, "%-*s\t", labelWidth, fmt.Sprintf("queue %d (%d %s)", q+1, r.Flows[q], flows))
		for range r.Schemes {
			fmt.Fprint(tw, "\t")
		}
		fmt.Fprintln(tw)
		row("  goodput", func(s SchemeResult) string { return fmt.Sprintf("%.1f Mbit/s", s.Queues[q].Goodput/1e6) })
		row("  share", func(s SchemeResult) string { return fmt.Sprintf("%.1f%%", 100*s.Queues[q].Share) })
		row("  CE marks", func(s SchemeResult) string { return fmt.Sprint(s.Queues[q].Marks) })
		row("  drops", func(s SchemeResult) string { return fmt.Sprint(s.Queues[q].Drops) })
		row("  queueing delay, mean", func(s SchemeResult) string { return micros(s.Queues[q].MeanDelay) })
		row("  queueing delay, p99", func(s SchemeResult) string { return micros(s.Queues[q].P99Delay) })
		row("  TCP RTT, min / smoothed", func(s SchemeResult) string {
			return micros(s.Queues[q].MinRTT) + " / " + micros(s.Queues[q].SRTT)
		})
		row("  TCP retransmits", func(s SchemeResult) string { return fmt.Sprint(s.Queues[q].Retrans) })
	}
	fmt.Fprintf(tw, "%-*s\t", labelWidth, "total")
	for range r.Schemes {
		fmt.Fprint(tw, "\t")
	}
	fmt.Fprintln(tw)
	row("  goodput", func(s SchemeResult) string { return fmt.Sprintf("%.1f Mbit/s", s.Goodput()/1e6) })
	row("  of C·1448/1538", func(s SchemeResult) string { return fmt.Sprintf("%.1f%%", 100*s.Goodput()/r.MaxGoodput()) })
	if len(r.Flows) == 2 {
		row("  queue 2 : queue 1", func(s SchemeResult) string {
			if s.Queues[0].Goodput == 0 {
				return "∞"
			}
			return fmt.Sprintf("%.2f", s.Queues[1].Goodput/s.Queues[0].Goodput)
		})
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\nDelay is the switch's enqueue-to-dequeue time of each packet (mean and p99 over the measured window, the p99 within 25%).\n")
	if r.CCNote != "" {
		fmt.Fprintf(&b, "The hosts ran %s, not %s: %s.\n", r.CC, DefaultCC, r.CCNote)
	}
	b.WriteString("\nWhere the time went in each window (/proc/stat per CPU; the worker's own count; the senders' TCP_INFO):\n")
	for _, s := range r.Schemes {
		l := s.Load
		l.Busy = s.Busy
		fmt.Fprintf(&b, "  %s: %s\n", s.Title, l)
		if n := s.Drops.Total() + s.WarmupDrops.Total(); n > 0 {
			fmt.Fprintf(&b, "    drops in the warm-up: %s; in the window: %s\n", s.WarmupDrops, s.Drops)
		}
	}
	var idle, result []string
	for _, s := range r.Schemes {
		l := s.Load
		l.Busy = s.Busy
		switch {
		case s.Busy >= MinBusy:
		case !l.Comparable():
			idle = append(idle, fmt.Sprintf("%s %.1f%% (%s)", s.Title, 100*s.Busy, l.Limit()))
		default:
			result = append(result, fmt.Sprintf("%s %.1f%%", s.Title, 100*s.Busy))
		}
	}
	if len(idle) > 0 {
		fmt.Fprintf(&b, "Not comparable: the bottleneck port was busy less than %.0f%% of the time while the machine limited it: %s.\n"+
			"The shares reflect CPU contention as well as marking (a quiet machine or a lower --rate helps).\n", 100*MinBusy, strings.Join(idle, "; "))
	}
	if len(result) > 0 {
		fmt.Fprintf(&b, "Busy less than %.0f%% with no CPU saturated and the senders cwnd-limited (%s): the idle time is the scheme's and %s's utilisation, a result.\n",
			100*MinBusy, strings.Join(result, ", "), r.CC)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// TransportLine describes the hosts' TCP: "dctcp (BPF struct_ops,
// testbed/dctcp) with ECN, RTO_min 10ms".
func (r *Result) TransportLine() string {
	s := r.CC
	if r.CCSource != "" {
		s += " (" + r.CCSource + ")"
	}
	s += " with ECN, RTO_min "
	if r.RTOMin > 0 {
		return s + r.RTOMin.String()
	}
	return s + "the kernel's (200ms)"
}

// MaxGoodput returns the TCP goodput of a port shaped to Rate carrying only
// full-sized segments: Rate·1448/1538 (MSS 1448 with timestamps at MTU
// 1500; 90 bytes of TCP/IP/Ethernet headers, FCS, preamble and gap each).
func (r *Result) MaxGoodput() float64 { return float64(r.Rate) * segPayload / segWire }

// micros formats d in microseconds.
func micros(d time.Duration) string {
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}
