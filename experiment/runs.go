package experiment

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/internal/cpustat"
)

// Repeated runs, and what the machine did in them: every verdict rests on
// the median of DefaultRuns runs (issue 26: "single 10 s runs flip
// verdicts"), and every report says, per run, where the CPUs' time went
// and what the switch dropped, by reason and kind.

// DefaultRuns is how many times each configuration runs.
const DefaultRuns = 3

// runs returns how many times each configuration runs: Env.Runs, or
// DefaultRuns.
func (e Env) runs() int {
	if e.Runs > 0 {
		return e.Runs
	}
	return DefaultRuns
}

// demoRuns runs demo.Run with o on one testbed, its schemes in env.runs()
// rounds (every scheme once a round, in order, so that the machine's drift
// spreads over all of them), and returns each round as a result of its
// own.
func (e Env) demoRuns(ctx context.Context, o demo.Options) ([]*demo.Result, error) {
	n := e.runs()
	if len(o.Schemes) == 0 {
		o.Schemes = demo.Schemes()
	}
	one := o.Schemes
	o.Schemes = nil
	for range n {
		o.Schemes = append(o.Schemes, one...)
	}
	res, err := e.demo(ctx, o)
	if err != nil {
		return nil, err
	}
	return splitRounds(res, len(one), n)
}

// splitRounds cuts res, whose schemes ran in n rounds of k, into one
// result a round.
func splitRounds(res *demo.Result, k, n int) ([]*demo.Result, error) {
	if len(res.Schemes) != k*n {
		return nil, fmt.Errorf("%d scheme runs, want %d rounds of %d", len(res.Schemes), n, k)
	}
	out := make([]*demo.Result, n)
	for i := range out {
		r := *res
		r.Schemes = slices.Clone(res.Schemes[i*k : (i+1)*k])
		out[i] = &r
	}
	return out, nil
}

// schemeRuns returns scheme name's result in each of rs.
func schemeRuns(rs []*demo.Result, name string) []demo.SchemeResult {
	var out []demo.SchemeResult
	for _, r := range rs {
		if s, ok := scheme(r, name); ok {
			out = append(out, s)
		}
	}
	return out
}

// loadsOf returns the loads of the schemes' runs.
func loadsOf(ss ...[]demo.SchemeResult) []demo.Load {
	var ls []demo.Load
	for _, s := range ss {
		for _, r := range s {
			ls = append(ls, r.Load)
		}
	}
	return ls
}

// fmtRuns formats runs with f: the median and, for more than one run, the
// range and count.
func fmtRuns(r Runs, f string) string {
	return r.Format(func(x float64) string { return fmt.Sprintf(f, x) })
}

// busyOnly returns loads of runs that recorded only their ports' busy
// fractions (demo.Load.Unmeasured): each is comparable from MinBusy up,
// the rule before runs measured the machine.
func busyOnly(busy ...float64) []demo.Load {
	ls := make([]demo.Load, len(busy))
	for i, b := range busy {
		ls[i] = demo.Load{Busy: b, WorkerCPU: -1, Unmeasured: true}
	}
	return ls
}

// loadRow is one run's line of a load table.
type loadRow struct {
	label string
	load  demo.Load
	drops demo.Drops // in the window, on every port
}

// loadTable says where each run's time went: the port's busy fraction,
// each CPU's split, the worker's own busy fraction and the senders' TCP
// limits; then what the switch dropped, by reason and kind.
func loadTable(rows []loadRow) Table {
	t := Table{
		Title:  "Where each run's time went, and what the switch dropped",
		Header: []string{"run", "port busy", "CPUs (/proc/stat)", "worker", "senders (TCP_INFO)", "machine limit", "drops in the window, by reason and kind"},
		Note: fmt.Sprintf("A CPU is saturated from %.0f%% busy; senders limit the rate when cwnd-limited less than %.0f%% of the window "+
			"(the rest rwnd- or sndbuf-limited, or with nothing queued). The worker's figure is its own count of passes that moved packets, "+
			"which leaves out the kernel's work on its CPU. Drops count every port; Not-ECT packets a marker would have marked are counted "+
			"apart by kind (an MLD report, a SYN) and are no marker's effect on the traffic under test.", 100*demo.SaturatedCPU, 100*demo.MinCwndLimited),
	}
	for _, r := range rows {
		senders := "–"
		if r.load.Senders != nil && r.load.Senders.Flows > 0 {
			senders = r.load.Senders.String()
		}
		limit := r.load.Limit()
		switch {
		case limit == "":
			limit = "none"
		case r.load.Comparable():
			limit += " (the port kept busy)"
		}
		t.Rows = append(t.Rows, []string{r.label, loadBusy(r.load), cpus(r.load.CPUs, r.load.WorkerCPU), fmt.Sprintf("%.0f%%", 100*r.load.Worker),
			senders, limit, r.drops.String()})
	}
	return t
}

// cpus formats each CPU's split, the worker's marked.
func cpus(cs []cpustat.Split, worker int) string {
	if len(cs) == 0 {
		return "–"
	}
	var s []string
	for _, c := range cs {
		x := c.String()
		if c.CPU == worker {
			x += " [worker]"
		}
		s = append(s, x)
	}
	return strings.Join(s, ", ")
}

// demoLoadRows are the load rows of every scheme's run in rs, tagged.
func demoLoadRows(tag string, rs []*demo.Result) []loadRow {
	var rows []loadRow
	for i, r := range rs {
		for _, s := range r.Schemes {
			label := fmt.Sprintf("%s, run %d", s.Title, i+1)
			if tag != "" {
				label = tag + ", " + label
			}
			rows = append(rows, loadRow{label: label, load: s.Load, drops: s.Drops})
		}
	}
	return rows
}

// hostsText says what the hosts of a demo testbed ran: the congestion
// control, where it came from and the RTO_min, and why, from the paper
// (cite).
func hostsText(r *demo.Result, cite string) string {
	s := fmt.Sprintf("Every host runs %s, as its namespace's default and on every socket (a DCTCP sender negotiates ECN only with a "+
		"DCTCP listener, so no host is left on another). %s", r.TransportLine(), cite)
	if r.CCNote != "" {
		s += " This run's hosts fell back: " + r.CCNote + "."
	}
	return s
}

// nonECTDrop is every experiment's Not-ECT policy, as its report states it.
const nonECTDrop = "Not-ECT packets: a marker that would mark a packet that is not ECN-capable drops it (marking.NonECTDrop, " +
	"RFC 3168 §7), as the papers' switches do. Under DCTCP every TCP segment, SYNs and pure ACKs included, carries ECT(0) " +
	"(TCP_CONG_NEEDS_ECN); what stays Not-ECT is the hosts' MLD reports and neighbour discovery, ARP, and Not-ECT UDP where an " +
	"experiment sends it. The switch's drops are counted by reason and by packet kind (demo.DropTap) in the table of where each " +
	"run's time went, so that a drop of such a packet never passes for a marker's effect on the traffic under test."

// busyRuns formats the runs' busy fractions: the median, the range, and
// "(not comparable)" when the machine limited a run whose port idled.
func busyRuns(ss []demo.SchemeResult) string {
	b := over(ss, func(s demo.SchemeResult) float64 { return s.Busy })
	out := b.Format(func(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) })
	if slices.ContainsFunc(ss, func(s demo.SchemeResult) bool { return !s.Load.Comparable() }) {
		out += " (not comparable)"
	}
	return out
}
