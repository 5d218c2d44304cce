package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"gonum.org/v1/plot"

	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/testbed"
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
// demo's 96 KB port buffer and K = 32 KB.
const (
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

// fctRun is one scheme at one load.
type fctRun struct {
	scheme     string
	load       float64
	flows      []fctFlow
	carried    float64 // share of the flows' bytes in flows that finished
	unfinished int
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
	o, err := env.withBed(ctx, demo.Options{Classes: classes}, func(b *bed) error {
		for _, name := range fctSchemes {
			for i, load := range fctLoads {
				if err := ctx.Err(); err != nil {
					return err
				}
				flows := fctArrivals(cdf, load, b.options().Rate, duration, uint64(i+1))
				env.say("fct: %s at %.0f%% load: %d flows over %v", demo.Title(name), 100*load, len(flows), duration)
				r, err := runFlows(ctx, b, name, load, flows, duration)
				if err != nil {
					return fmt.Errorf("%s at %.0f%% load: %w", name, 100*load, err)
				}
				env.say("fct: %s at %.0f%% load: %.1f%% of the bytes carried, %d flows unfinished",
					demo.Title(name), 100*load, 100*r.carried, r.unfinished)
				runs = append(runs, r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fct: %w", err)
	}
	return fctReport(env, o, workload, duration, runs)
}

// runFlows starts the switch of scheme name, plays flows against it and
// stops it.
func runFlows(ctx context.Context, b *bed, name string, load float64, flows []fctFlow, duration time.Duration) (fctRun, error) {
	r := fctRun{scheme: name, load: load, flows: slices.Clone(flows)}
	err := b.withSwitch(name, func(demo.Switch) (err error) {
		hosts := b.hosts()
		rcv := hosts[demo.Bottleneck]
		ln, err := rcv.ListenTCP(0)
		if err != nil {
			return err
		}
		srv := serveSink(ln)
		defer func() { err = errors.Join(err, srv.close()) }()
		dst := netip.AddrPortFrom(rcv.IPv4, uint16(ln.Addr().(*net.TCPAddr).Port))

		play, cancel := context.WithTimeout(ctx, duration+fctDrain)
		defer cancel()
		start := time.Now()
		var wg sync.WaitGroup
		for i := range r.flows {
			f := &r.flows[i]
			if d := time.Until(start.Add(f.at)); d > 0 {
				select {
				case <-play.Done():
				case <-time.After(d):
				}
			}
			if play.Err() != nil {
				break
			}
			wg.Go(func() { f.fct, f.done = sendFlow(play, hosts[f.host], dst, demo.DSCP(f.queue), f.size) })
		}
		wg.Wait()
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

// sendFlow sends one flow of size bytes from h to dst and returns its
// completion time: from before the connection is opened until the
// receiver, having read every byte, closes its end.
func sendFlow(ctx context.Context, h testbed.Host, dst netip.AddrPort, dscp uint8, size int64) (time.Duration, bool) {
	start := time.Now()
	c, err := h.DialTCP(ctx, dst, dscp)
	if err != nil {
		return 0, false
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := io.CopyN(c, zeros{}, size); err != nil {
		return 0, false
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		return 0, false
	}
	if _, err := io.Copy(io.Discard, c); err != nil {
		return 0, false
	}
	return time.Since(start), true
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
func every(int64) bool      { return true }

// fctReport renders the runs, fctSchemes × fctLoads in that order.
func fctReport(env Env, o demo.Options, workload string, duration time.Duration, runs []fctRun) (*Report, error) {
	if len(runs) != len(fctSchemes)*len(fctLoads) {
		return nil, fmt.Errorf("fct: %d runs, want %d", len(runs), len(fctSchemes)*len(fctLoads))
	}
	at := func(scheme string, load float64) fctRun {
		i := slices.IndexFunc(runs, func(r fctRun) bool { return r.scheme == scheme && r.load == load })
		return runs[i]
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
		"Each flow is a new cubic TCP connection with ECN: it writes its bytes, half-closes, and completes when the receiver, having read them all, closes its end; " +
			"its FCT runs from before the connect to that close, so it includes the handshake (the paper's client used persistent connections). " +
			fmt.Sprintf("The same seed draws the same flows for every scheme. Flows still running %v after the arrivals end count as unfinished.", fctDrain),
	}
	rep.Scaling = Scaling{PaperRate: o.Rate, Rate: o.Rate}.String() + " The paper's testbed is 1 GbE with the same port (001 §5.1)."
	rep.Limits = []string{
		"The port-busy rule does not apply: at 20–80% load the port is meant to idle. Instead each run says what share of its flows' bytes arrived " +
			"in flows that finished; well below 100%, the senders (one CPU for four hosts' TCP) or the switch did not keep up.",
		limit,
		fmt.Sprintf("%v of arrivals per load (the paper ran many thousands of flows): the large-flow numbers rest on a handful of flows.", duration),
		"DCTCP is not in this kernel: cubic with ECN stands in for the paper's DCTCP; the paper's TCP RTO_min was 10 ms, ours is Linux's 200 ms.",
	}
	high := fctLoads[len(fctLoads)-1]
	std, mq := at(demo.PerQueue, high), at(demo.MQECN, high)
	ss, ms := statsOf(std, small), statsOf(mq, small)
	sl, ml := statsOf(std, large), statsOf(mq, large)
	reduction := func(a, b time.Duration) float64 {
		if a == 0 {
			return 0
		}
		return 1 - float64(b)/float64(a)
	}
	rep.Claims = []Claim{
		{Source: "001 Fig. 7(b)", What: fmt.Sprintf("small flows' mean FCT at %.0f%% load, MQ-ECN vs per-queue standard", 100*high),
			Paper: "lower, by up to ∼61.3%" + paperNote, Ours: fmt.Sprintf("%s vs %s (%s)", micros(ms.mean), micros(ss.mean), lowerBy(reduction(ss.mean, ms.mean), 0)),
			Rule: lower("MQ-ECN", float64(ss.mean), float64(ms.mean), 0.05, 0.9)},
		{Source: "001 Fig. 7(c)", What: fmt.Sprintf("small flows' p99 FCT at %.0f%% load, MQ-ECN vs per-queue standard", 100*high),
			Paper: "lower, by up to ∼72.8%" + paperNote, Ours: fmt.Sprintf("%s vs %s (%s)", micros(ms.p99), micros(ss.p99), lowerBy(reduction(ss.p99, ms.p99), 0)),
			Rule: lower("MQ-ECN", float64(ss.p99), float64(ms.p99), 0.05, 0.95)},
		{Source: "001 Fig. 7(d)", What: fmt.Sprintf("large flows' mean FCT at %.0f%% load, MQ-ECN vs per-queue standard", 100*high),
			Paper: "similar (within 2.7%)" + paperNote, Ours: fmt.Sprintf("%s vs %s (%+.1f%%), %d and %d flows", micros(ml.mean), micros(sl.mean), -100*reduction(sl.mean, ml.mean), ml.n, sl.n),
			Rule: near("MQ-ECN", float64(ml.mean), float64(sl.mean), 0.15, "per-queue standard's").because("few large flows")},
	}
	t := Table{
		Title: "FCT by scheme and load, normalised to per-queue ECN with the standard threshold",
		Header: []string{"load", "scheme", "flows (unfinished)", "bytes carried", "overall mean", "small mean", "small p99", "large mean",
			"small mean (norm.)", "small p99 (norm.)", "large mean (norm.)"},
		Note: fmt.Sprintf("Small flows are ≤ %d KB, large > %d MB (001 §5.1.2). FCTs in µs; normalised as the paper does, the scheme's statistic over per-queue standard's at the same load.",
			fctSmall/1000, fctLarge/1000000),
	}
	norm := func(a, b time.Duration) string {
		if b == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f", float64(a)/float64(b))
	}
	for _, load := range fctLoads {
		base := at(demo.PerQueue, load)
		bs, bl := statsOf(base, small), statsOf(base, large)
		for _, name := range fctSchemes {
			r := at(name, load)
			all, s, l := statsOf(r, every), statsOf(r, small), statsOf(r, large)
			t.Rows = append(t.Rows, []string{fmt.Sprintf("%.0f%%", 100*load), demo.Title(name),
				fmt.Sprintf("%d (%d)", len(r.flows), r.unfinished), fmt.Sprintf("%.1f%%", 100*r.carried),
				orDash(all), orDash(s), micros(s.p99), orDash(l),
				norm(s.mean, bs.mean), norm(s.p99, bs.p99), norm(l.mean, bl.mean)})
		}
	}
	rep.Tables = []Table{t}
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
						a, b := statsOf(at(name, load), panel.keep), statsOf(at(demo.PerQueue, load), panel.keep)
						x, y := a.mean, b.mean
						if panel.p99 {
							x, y = a.p99, b.p99
						}
						if y > 0 {
							l.XY = append(l.XY, plotter.XY{X: 100 * load, Y: float64(x) / float64(y)})
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
			slow = append(slow, fmt.Sprintf("%s at %.0f%% (%.2f)", demo.Title(r.scheme), 100*r.load, r.carried))
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
