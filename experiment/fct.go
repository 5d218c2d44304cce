package experiment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"gonum.org/v1/plot"

	"github.com/ecnswitch/ecnswitch/demo"
)

// fctExperiment is the papers' realistic-workload experiment as 001 §5.1.2
// runs it on its testbed (Fig. 7, balanced traffic): flows of the
// web-search workload arrive as a Poisson process at a load of the
// bottleneck, each in a random one of 4 DWRR queues, and their
// completion times are compared scheme by scheme. fct runs the web-search
// workload the paper's testbed ran; fct-data-mining the same with the
// data-mining workload, which the paper ran only in simulation.
func fctExperiment(workload string) Experiment {
	if workload == fctDataMining {
		return Experiment{
			Name:    "fct-" + fctDataMining,
			Paper:   "the MQ-ECN paper's realistic-workload testbed experiment (001 §5.1.2, Fig. 7, balanced traffic) with the data-mining workload, which the paper ran only in simulation (001 §5.2)",
			Summary: "fct with the data-mining workload (VL2): FCT of small and large flows per scheme at 20, 50, 80% load",
			Run:     func(ctx context.Context, env Env) (*Report, error) { return runFCT(ctx, env, fctDataMining) },
		}
	}
	return Experiment{
		Name:    "fct",
		Paper:   "the MQ-ECN paper's realistic-workload testbed experiment (001 §5.1.2, Fig. 7, balanced traffic), with the web-search workload all the papers use",
		Summary: "Poisson web-search flows from 4 hosts to 1 over 4 DWRR queues at 20, 50, 80% load: FCT of small and large flows per scheme",
		Run:     func(ctx context.Context, env Env) (*Report, error) { return runFCT(ctx, env, fctWorkload) },
	}
}

// The experiment's setting (001 §5.1): 4 equal-quantum DWRR queues, the
// demo's 96 KB port buffer and K = 32 KB, the hosts' RTO_min 10 ms; and
// the persistent connections each server opens per queue before the
// flows start (more open as flows need them).
const (
	fctRTO      = 10 * time.Millisecond
	fctConns    = 4
	fctQueues   = 4
	fctSmall    = 100_000    // bytes: small flows are (0, 100 KB] (001 §5.1.2)
	fctLarge    = 10_000_000 // bytes: large flows are over 10 MB
	fctDrain    = 60 * time.Second
	fctWorkload = "web-search"
	// fctDataMining is the other workload the papers draw flows from.
	fctDataMining = "data-mining"
)

var (
	fctLoads   = []float64{0.2, 0.5, 0.8}
	fctSchemes = []string{demo.PerQueue, demo.MQECN, demo.ECNSharp}
)

// fctFlow is one flow of a run: when it arrives, from which sender, in
// which queue, how large, and its completion time once done.
type fctFlow struct {
	at    time.Duration // arrival, from the start of the run
	host  int           // sending host, 0 to 3
	queue int
	size  int64 // bytes
	fct   time.Duration
	done  bool
}

// fctArrivals draws the flows of one run: Poisson arrivals at the rate
// that offers load to a port of rate bit/s (CDF.FlowRate) for duration,
// sizes from cdf, sender and queue uniformly at random. The same seed
// draws the same flows, so every scheme sees the same traffic.
func fctArrivals(cdf *CDF, load float64, rate int64, duration time.Duration, seed uint64) []fctFlow {
	rng := rand.New(rand.NewPCG(seed, math.Float64bits(load)))
	lambda := cdf.FlowRate(load, rate)
	var fs []fctFlow
	for t := 0.0; ; {
		t += rng.ExpFloat64() / lambda
		if t >= duration.Seconds() {
			return fs
		}
		fs = append(fs, fctFlow{
			at: time.Duration(t * 1e9), host: rng.IntN(demo.Hosts - 1), queue: rng.IntN(fctQueues),
			size: cdf.Quantile(rng.Float64()),
		})
	}
}

// fctHosts cites what the paper's hosts ran.
const fctHosts = "001 §5.1: \"All the servers run Linux kernel 3.18.11 and DCTCP is enabled. We set TCP RTOmin to 10ms\"; §5.1.2: " +
	"\"The client application, running on 1 server, generates requests through persistent TCP connections to the other 8 servers\". " +
	"Our client runs on h5 and fetches from h1–h4: each keeps connections open to it, per queue, and a flow is one request on an idle one " +
	"(a new one opens when all of its server's and queue's are busy). A connection idle for longer than its RTO restarts from the initial " +
	"window (net.ipv4.tcp_slow_start_after_idle, on as in the paper's kernel)."

// fctRun is one scheme at one load, in one run.
type fctRun struct {
	scheme     string
	load       float64
	round      int // which of the runs, from 0
	flows      []fctFlow
	carried    float64 // share of the flows' bytes in flows that finished
	unfinished int
	load0      demo.Load  // the machine over the flows
	drops      demo.Drops // the switch's, every port, over the flows
}

func runFCT(ctx context.Context, env Env, workload string) (*Report, error) {
	_, duration := env.times(demo.DefaultDuration)
	cdf, err := Workload(workload)
	if err != nil {
		return nil, err
	}
	classes := make([]demo.Class, fctQueues)
	for q := range classes {
		classes[q] = demo.Class{Flows: 1, Senders: []int{0, 1, 2, 3}} // the demo's long-lived flows are not used
	}
	var runs []fctRun
	o, err := env.withBed(ctx, demo.Options{Classes: classes, RTOMin: fctRTO}, func(b *bed) error {
		for round := range env.runs() {
			for i, load := range fctLoads {
				// Every scheme of a round sees the same flows; each round
				// draws its own.
				flows := fctArrivals(cdf, load, b.options().Rate, duration, uint64(100*round+i+1))
				for _, name := range fctSchemes {
					if err := ctx.Err(); err != nil {
						return err
					}
					env.say("fct: run %d, %s at %.0f%% load: %d flows over %v", round+1, demo.Title(name), 100*load, len(flows), duration)
					r, err := runFlows(ctx, b, name, load, flows, duration)
					if err != nil {
						return fmt.Errorf("%s at %.0f%% load: %w", name, 100*load, err)
					}
					r.round = round
					env.say("fct: run %d, %s at %.0f%% load: %.1f%% of the bytes carried, %d flows unfinished; %s; drops %s",
						round+1, demo.Title(name), 100*load, 100*r.carried, r.unfinished, r.load0, r.drops)
					runs = append(runs, r)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fct: %w", err)
	}
	return fctReport(env, o, workload, duration, runs)
}

// runFlows starts the switch of scheme name, plays flows against it
// through the fetcher's persistent connections, and stops it.
func runFlows(ctx context.Context, b *bed, name string, load float64, flows []fctFlow, duration time.Duration) (fctRun, error) {
	r := fctRun{scheme: name, load: load, flows: slices.Clone(flows)}
	err := b.withSwitch(name, func(sw demo.Switch) (err error) {
		hosts := b.hosts()
		f, err := newFetcher(ctx, hosts[demo.Bottleneck], hosts[:demo.Bottleneck], fctQueues, fctConns)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, f.close()) }()

		play, cancel := context.WithTimeout(ctx, duration+fctDrain)
		defer cancel()
		st0, drops0 := sw.Stats(), switchDrops(sw)
		meter := demo.StartMeter(st0, nil)
		start := time.Now()
		var wg sync.WaitGroup
		for i := range r.flows {
			fl := &r.flows[i]
			if d := time.Until(start.Add(fl.at)); d > 0 {
				select {
				case <-play.Done():
				case <-time.After(d):
				}
			}
			if play.Err() != nil {
				break
			}
			wg.Go(func() { fl.fct, fl.done = f.fetch(play, fl.host, fl.queue, fl.size) })
		}
		wg.Wait()
		st1 := sw.Stats()
		r.load0 = meter.Stop(st1, demo.PortBusy(st0.Ports[demo.Bottleneck], st1.Ports[demo.Bottleneck], b.options().Rate, time.Since(start)))
		r.load0.Open = true
		r.drops = switchDrops(sw).Sub(drops0)
		r.carried, r.unfinished = carried(r.flows)
		return ctx.Err() // only the parent's cancellation: the drain timeout leaves flows unfinished, counted
	})
	return r, err
}

// carried returns the share of the flows' bytes that arrived, in flows
// that finished, and how many did not finish.
func carried(flows []fctFlow) (share float64, unfinished int) {
	var offered, delivered float64
	for _, f := range flows {
		offered += float64(f.size)
		if f.done {
			delivered += float64(f.size)
		} else {
			unfinished++
		}
	}
	if offered == 0 {
		return 1, 0
	}
	return delivered / offered, unfinished
}

// fctStats are the FCT statistics of one run's finished flows of a size
// class: mean and 99th percentile (nearest rank), and how many.
type fctStats struct {
	mean, p99 time.Duration
	n         int
}

func statsOf(r fctRun, keep func(size int64) bool) fctStats {
	var ds []time.Duration
	for _, f := range r.flows {
		if f.done && keep(f.size) {
			ds = append(ds, f.fct)
		}
	}
	m, p := meanP99(ds)
	return fctStats{mean: m, p99: p, n: len(ds)}
}

func small(size int64) bool { return size <= fctSmall }
func large(size int64) bool { return size > fctLarge }
func all(int64) bool        { return true }

// fctReport renders the runs, fctSchemes × fctLoads in that order.
func fctReport(env Env, o demo.Options, workload string, duration time.Duration, runs []fctRun) (*Report, error) {
	nruns := 0
	for _, r := range runs {
		nruns = max(nruns, r.round+1)
	}
	if nruns == 0 || len(runs) != nruns*len(fctSchemes)*len(fctLoads) {
		return nil, fmt.Errorf("fct: %d runs, want %d schemes × %d loads × the rounds", len(runs), len(fctSchemes), len(fctLoads))
	}
	// every returns the runs of scheme at load, one a round.
	every := func(scheme string, load float64) []fctRun {
		var out []fctRun
		for _, r := range runs {
			if r.scheme == scheme && r.load == load {
				out = append(out, r)
			}
		}
		return out
	}
	// stat returns a statistic of a size class over the runs of scheme at
	// load, in ns.
	stat := func(scheme string, load float64, keep func(int64) bool, f func(fctStats) time.Duration) Runs {
		return over(every(scheme, load), func(r fctRun) float64 { return float64(f(statsOf(r, keep))) })
	}
	meanOf := func(st fctStats) time.Duration { return st.mean }
	p99Of := func(st fctStats) time.Duration { return st.p99 }
	loadsAt := func(load float64, names ...string) []demo.Load {
		var ls []demo.Load
		for _, n := range names {
			for _, r := range every(n, load) {
				ls = append(ls, r.load0)
			}
		}
		return ls
	}
	x := fctExperiment(workload)
	title := x.Name + ": flow completion times of the " + workload + " workload over 4 DWRR queues (001 §5.1.2, Fig. 7)"
	limit := "Only the web-search workload is run: the data-mining CDF (shipped, experiment/workloads/data-mining.cdf) has flows up to 973 MB, " +
		"which at 995 Mbit/s take 8 s each, so a comparable run needs minutes per load, not " + duration.String() + "."
	paperNote := ""
	if workload != fctWorkload {
		title = x.Name + ": flow completion times of the " + workload + " workload over 4 DWRR queues (001 §5.1.2's setup)"
		limit = fmt.Sprintf("The paper's testbed ran the web-search workload only (001 §5.1.2); its numbers beside ours are web search's. "+
			"Data mining's flows reach 973 MB, 8 s each at %s: %v of arrivals holds a few such flows at most, and the large-flow numbers rest on them.", rate(o.Rate), duration)
		paperNote = " (web search)"
	}
	rep := env.report(x, title)
	rep.Setup = []string{
		fmt.Sprintf("Five testbed hosts on an ecnswitch with AF_XDP ports, every egress port shaped to %s with a %d B bucket, %d equal-quantum DWRR queues "+
			"sharing a %d KB buffer, K = %d KB (001 §5.1). Flows arrive as a Poisson process for %v at the rate that offers 20, 50 and 80%% of C to h5's port "+
			"(λ = load·C/(8·mean size), mean %.2f MB), sizes from the %s CDF (experiment/workloads/%s.cdf), each from one of h1–h4 at random "+
			"in one of the 4 queues at random (the paper's balanced pattern), to h5.",
			rate(o.Rate), o.Bucket, fctQueues, o.Buffer>>10, o.K>>10, duration, mustMean(workload)/1e6, workload, workload),
		fmt.Sprintf("Each flow is a request of the client on h5 on a persistent %s connection from its server (%d per server and queue opened before the flows, "+
			"more as needed), answered with the flow's bytes; its FCT runs from the request's write to the response's last byte. "+
			"Every scheme of a run sees the same flows, and each of the %d runs draws its own. Flows still running %v after the arrivals end count as unfinished.",
			o.CongestionControl, fctConns, nruns, fctDrain),
	}
	rep.Transport, rep.NonECT = fctHosts, nonECTDrop
	rep.Scaling = Scaling{PaperRate: o.Rate, Rate: o.Rate}.String() + " The paper's testbed is 1 GbE with the same port (001 §5.1)."
	rep.Limits = []string{
		"The port-busy rule does not apply: at 20–80% load the port is meant to idle. Instead each run says what share of its flows' bytes arrived " +
			"in flows that finished; well below 100%, the senders (one CPU for four hosts' TCP) or the switch did not keep up.",
		limit,
		fmt.Sprintf("%v of arrivals per load and run (the paper ran many thousands of flows): the large-flow numbers rest on a handful of flows.", duration),
	}
	high := fctLoads[len(fctLoads)-1]
	reduction := func(a, b float64) float64 {
		if a == 0 {
			return 0
		}
		return 1 - b/a
	}
	us := func(x float64) string { return micros(time.Duration(x)) }
	ssm, msm := stat(demo.PerQueue, high, small, meanOf), stat(demo.MQECN, high, small, meanOf)
	ssp, msp := stat(demo.PerQueue, high, small, p99Of), stat(demo.MQECN, high, small, p99Of)
	slm, mlm := stat(demo.PerQueue, high, large, meanOf), stat(demo.MQECN, high, large, meanOf)
	nLarge := func(name string) Runs {
		return over(every(name, high), func(r fctRun) float64 { return float64(statsOf(r, large).n) })
	}
	both := loadsAt(high, demo.PerQueue, demo.MQECN)
	rep.Claims = []Claim{
		{Source: "001 Fig. 7(b)", What: fmt.Sprintf("small flows' mean FCT at %.0f%% load, MQ-ECN vs per-queue standard", 100*high),
			Paper: "lower, by up to ∼61.3%" + paperNote,
			Ours:  fmt.Sprintf("%s vs %s (%s)", msm.Format(us), ssm.Format(us), lowerBy(reduction(ssm.Median(), msm.Median()), 0)),
			Loads: both, Rule: lower("MQ-ECN", ssm.Median(), msm.Median(), 0.05, 0.9)},
		{Source: "001 Fig. 7(c)", What: fmt.Sprintf("small flows' p99 FCT at %.0f%% load, MQ-ECN vs per-queue standard", 100*high),
			Paper: "lower, by up to ∼72.8%" + paperNote,
			Ours:  fmt.Sprintf("%s vs %s (%s)", msp.Format(us), ssp.Format(us), lowerBy(reduction(ssp.Median(), msp.Median()), 0)),
			Loads: both, Rule: lower("MQ-ECN", ssp.Median(), msp.Median(), 0.05, 0.95)},
		{Source: "001 Fig. 7(d)", What: fmt.Sprintf("large flows' mean FCT at %.0f%% load, MQ-ECN vs per-queue standard", 100*high),
			Paper: "similar (within 2.7%)" + paperNote,
			Ours: fmt.Sprintf("%s vs %s (%+.1f%%), %.0f and %.0f flows a run", mlm.Format(us), slm.Format(us), -100*reduction(slm.Median(), mlm.Median()),
				nLarge(demo.MQECN).Median(), nLarge(demo.PerQueue).Median()),
			Loads: both, Rule: near("MQ-ECN", mlm.Median(), slm.Median(), 0.15, "per-queue standard's").because("few large flows")},
	}
	t := Table{
		Title: "FCT by scheme and load, normalised to per-queue ECN with the standard threshold",
		Header: []string{"load", "scheme", "flows (unfinished)", "bytes carried", "overall mean", "small mean", "small p99", "large mean",
			"small mean (norm.)", "small p99 (norm.)", "large mean (norm.)"},
		Note: fmt.Sprintf("Medians of %d runs. Small flows are ≤ %d KB, large > %d MB (001 §5.1.2). FCTs in µs; normalised as the paper does, "+
			"the scheme's statistic over per-queue standard's at the same load.", nruns, fctSmall/1000, fctLarge/1000000),
	}
	norm := func(a, b time.Duration) string {
		if b == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f", float64(a)/float64(b))
	}
	var loads []loadRow
	for _, load := range fctLoads {
		med := func(name string, keep func(int64) bool, f func(fctStats) time.Duration) time.Duration {
			return time.Duration(stat(name, load, keep, f).Median())
		}
		for _, name := range fctSchemes {
			rs := every(name, load)
			m := func(f func(fctRun) float64) float64 { return over(rs, f).Median() }
			largeN := m(func(r fctRun) float64 { return float64(statsOf(r, large).n) })
			largeMean := "–"
			if largeN > 0 {
				largeMean = micros(med(name, large, meanOf))
			}
			t.Rows = append(t.Rows, []string{fmt.Sprintf("%.0f%%", 100*load), demo.Title(name),
				fmt.Sprintf("%.0f (%.0f)", m(func(r fctRun) float64 { return float64(len(r.flows)) }), m(func(r fctRun) float64 { return float64(r.unfinished) })),
				fmt.Sprintf("%.1f%%", 100*m(func(r fctRun) float64 { return r.carried })),
				micros(med(name, all, meanOf)), micros(med(name, small, meanOf)), micros(med(name, small, p99Of)), largeMean,
				norm(med(name, small, meanOf), med(demo.PerQueue, small, meanOf)), norm(med(name, small, p99Of), med(demo.PerQueue, small, p99Of)),
				norm(med(name, large, meanOf), med(demo.PerQueue, large, meanOf))})
			for _, r := range rs {
				loads = append(loads, loadRow{label: fmt.Sprintf("%.0f%%, %s, run %d", 100*load, demo.Title(name), r.round+1), load: r.load0, drops: r.drops})
			}
		}
	}
	rep.Tables = []Table{t, loadTable(loads)}
	rep.Plots = []Plot{{
		File:    "fct.png",
		Caption: "Small flows' mean and p99 FCT and large flows' mean FCT against load, normalised to per-queue ECN with the standard threshold (001 Fig. 7(b)–(d)).",
		Draw: func(path string) error {
			var ps []*plot.Plot
			for _, panel := range []struct {
				title string
				keep  func(int64) bool
				p99   bool
			}{{"small flows, mean", small, false}, {"small flows, p99", small, true}, {"large flows, mean", large, false}} {
				var lines []Line
				for _, name := range fctSchemes {
					l := Line{Label: demo.Title(name)}
					for _, load := range fctLoads {
						f := meanOf
						if panel.p99 {
							f = p99Of
						}
						x, y := stat(name, load, panel.keep, f).Median(), stat(demo.PerQueue, load, panel.keep, f).Median()
						if y > 0 {
							l.XY = append(l.XY, plotter.XY{X: 100 * load, Y: x / y})
						}
					}
					lines = append(lines, l)
				}
				p, err := newPlot(panel.title, "load (%)", "normalised FCT", lines)
				if err != nil {
					return err
				}
				ps = append(ps, p)
			}
			return saveTiles(path, 3, ps, 4*vg.Inch, 3*vg.Inch)
		},
	}}
	var slow []string
	for _, r := range runs {
		if r.carried < 0.9 {
			slow = append(slow, fmt.Sprintf("%s at %.0f%%, run %d (%.2f)", demo.Title(r.scheme), 100*r.load, r.round+1, r.carried))
		}
	}
	if len(slow) > 0 {
		rep.Limits = append(rep.Limits, "Runs whose finished flows carried less than 90% of their bytes: "+strings.Join(slow, ", ")+".")
	}
	return rep, nil
}

// orDash formats the mean of st, or "–" when it has no flows.
func orDash(st fctStats) string {
	if st.n == 0 {
		return "–"
	}
	return micros(st.mean)
}

// mustMean returns the mean flow size of a shipped workload, 0 if it does
// not parse (TestWorkloads makes sure it does).
func mustMean(name string) float64 {
	c, err := Workload(name)
	if err != nil {
		return 0
	}
	return c.Mean()
}
