package experiment

import (
	"bytes"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"

	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/internal/buildinfo"
)

// TestScaling: a 10 Gbit/s paper's time constant grows tenfold (and a
// bit) at 995 Mbit/s, so that its threshold keeps its bytes (000 §3.2
// Eq. 2): ECN♯'s 85 µs pst_target is 106 KB at 10 Gbit/s, and the scaled
// target is the same 106 KB at 995 Mbit/s.
func TestScaling(t *testing.T) {
	s := Scaling{PaperRate: 10e9, Rate: 995e6}
	if got, want := s.Factor(), 10e9/995e6; math.Abs(got-want) > 1e-12 {
		t.Errorf("Factor = %g, want %g", got, want)
	}
	d := s.Time(85 * time.Microsecond)
	if want := time.Duration(854271); d < want-1 || d > want+1 { // 85 µs × 10/0.995
		t.Errorf("Time(85µs) = %v, want %v", d, want)
	}
	paper := Scaling{Rate: 10e9}.Bytes(85 * time.Microsecond)
	if got := s.Bytes(d); got < paper-1 || got > paper+1 {
		t.Errorf("scaled target holds %d B at 995 Mbit/s, the paper's %d B at 10 Gbit/s", got, paper)
	}
	if !strings.Contains(s.String(), "10 Gbit/s") || !strings.Contains(s.String(), "995 Mbit/s") || !strings.Contains(s.String(), "10.05") {
		t.Errorf("String() = %q: want both rates and the factor", s)
	}
	if same := (Scaling{PaperRate: 995e6, Rate: 995e6}).String(); !strings.Contains(same, "as they are") {
		t.Errorf("unscaled String() = %q", same)
	}
}

// TestBusy: a run below MinBusy is not comparable when the machine
// limited it, and the report says so beside the number.
func TestBusy(t *testing.T) {
	for _, c := range []struct {
		load demo.Load
		text string
	}{
		{testLoad(0.99), "99.0%"},
		{testLoad(0.95), "95.0%"},
		{testLoad(0.9499), "95.0% (not comparable)"},
		{demo.Load{Busy: 0.5}, "50.0%"}, // nothing limited it: the scheme's utilisation
	} {
		if got := loadBusy(c.load); got != c.text {
			t.Errorf("busy %g: %q, want %q", c.load.Busy, got, c.text)
		}
	}
	for _, c := range []struct {
		claim Claim
		want  string
		busy  string
	}{
		{Claim{Rule: Rule{holds: true}, Loads: []demo.Load{testLoad(0.97), testLoad(0.98)}}, "holds", "97.0–98.0%"},
		{Claim{Rule: Rule{holds: false}, Loads: []demo.Load{testLoad(0.97)}}, "does not hold", "97.0%"},
		{Claim{Rule: Rule{holds: true}, Loads: []demo.Load{testLoad(0.97), testLoad(0.93)}}, "holds (not comparable)", "93.0–97.0% (not comparable)"},
		{Claim{Rule: Rule{holds: false}, Loads: []demo.Load{testLoad(0.5)}}, "does not hold (not comparable)", "50.0% (not comparable)"},
	} {
		if got := c.claim.Verdict(); got != c.want {
			t.Errorf("%+v: Verdict %q, want %q", c.claim, got, c.want)
		}
		if got := c.claim.busyRange(); got != c.busy {
			t.Errorf("%+v: busy %q, want %q", c.claim, got, c.busy)
		}
	}
}

// TestReportWrite writes a report with a claim, a table and a plot, and
// checks report.md and that the plot is a PNG.
func TestReportWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "x")
	r := &Report{
		Name: "x", Title: "x: a test", Paper: "001 §5.1.1", Command: "ecnswitch experiment x",
		Date: time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC),
		Build: buildinfo.Info{Version: "(devel)", Revision: "106b487abcde", GoVersion: "go1.26.0",
			Kernel: "6.18.44", CPU: "AMD EPYC", CPUs: 2, Arch: "amd64"},
		Setup:   []string{"Two hosts."},
		Scaling: Scaling{PaperRate: 10e9, Rate: 995e6}.String(),
		Claims: []Claim{
			{Source: "001 Fig. 3(a)", What: "ratio", Paper: "1.34", Ours: "1.50", Loads: []demo.Load{testLoad(0.97)}, Rule: Rule{true, "in [1.1, 2.7]"}},
			{Source: "001 Fig. 6(b)", What: "a|b", Paper: "−32%", Ours: "−5%", Loads: []demo.Load{testLoad(0.90)}, Rule: Rule{false, "lower by 10–70%"}},
		},
		Tables: []Table{{Title: "runs", Header: []string{"scheme", "busy"}, Rows: [][]string{{"MQ-ECN", Busy(0.97)}}, Note: "a note"}},
		Plots: []Plot{{File: "cdf.png", Caption: "a CDF", Draw: func(path string) error {
			p, err := newPlot("t", "µs", "CDF", []Line{cdf("a", []time.Duration{3, 1, 2})})
			if err != nil {
				return err
			}
			return saveTiles(path, 2, []*plot.Plot{p, p}, 200, 150)
		}}},
		Limits: []string{"stops at 8 senders"},
	}
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# x: a test\n",
		"Made by `ecnswitch experiment x` on 2026-11-23 18:00 UTC.",
		"\n\nRan on ecnswitch (devel) (106b487abcde) built with go1.26.0 on Linux 6.18.44, 2 × AMD EPYC (amd64).\n\n",
		"## Scaling\n\nThe paper measured at 10 Gbit/s",
		"| 001 Fig. 3(a) | ratio | 1.34 | 1.50 | 97.0% | **holds** | in [1.1, 2.7] | – |",
		`| 001 Fig. 6(b) | a\|b | −32% | −5% | 90.0% (not comparable) | **does not hold (not comparable)** | lower by 10–70% | machine-limited in 1 of 1 runs: CPU 1 100% busy |`,
		"## runs\n\n| scheme | busy |\n| --- | --- |\n| MQ-ECN | 97.0% |\n\na note\n",
		"![cdf.png](cdf.png)\n\na CDF",
		"## Limits\n\n- stops at 8 senders\n",
	} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	f, err := os.Open(filepath.Join(dir, "cdf.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("cdf.png: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 100 {
		t.Errorf("cdf.png is %v: want two 200×150 pt tiles side by side", b)
	}
}

// TestCDFLine: the empirical CDF steps 1/n at each sorted sample.
func TestCDFLine(t *testing.T) {
	l := cdf("x", []time.Duration{3 * time.Microsecond, time.Microsecond, 2 * time.Microsecond, 2 * time.Microsecond})
	want := [][2]float64{{1, 0.25}, {2, 0.5}, {2, 0.75}, {3, 1}}
	for i, xy := range l.XY {
		if xy.X != want[i][0] || xy.Y != want[i][1] {
			t.Errorf("point %d = (%g, %g), want %v", i, xy.X, xy.Y, want[i])
		}
	}
}

func TestLookup(t *testing.T) {
	for _, name := range Names() {
		x, err := Lookup(name)
		if err != nil || x.Name != name || x.Run == nil || x.Paper == "" || x.Summary == "" {
			t.Errorf("Lookup(%q) = %+v, %v", name, x, err)
		}
	}
	if _, err := Lookup("bogus"); err == nil || !strings.Contains(err.Error(), `"bogus": want one of mqecn-static`) {
		t.Errorf("Lookup(bogus) = %v", err)
	}
}

// TestWorkloads: the shipped distributions parse, have the published
// means (web search ≈ 1.6 MB, DCTCP and pFabric; data mining ≈ 7.4 MB,
// VL2 and pFabric), and sampling them by Quantile reproduces the CDF.
func TestWorkloads(t *testing.T) {
	for _, c := range []struct {
		name       string
		mean       float64 // bytes, from the points
		median     int64   // Quantile(0.5)
		small      float64 // fraction of flows of at most 100 KB
		tailBytes  float64 // fraction of the bytes in flows over 10 MB
		tailApprox float64
	}{
		// Web search: median between (33, 0.4) and (53, 0.53) packets.
		// Flows over 10 MB (6849 packets) hold 34.8% of the bytes.
		{"web-search", 1665830.8, int64(math.Round((33 + 20*0.1/0.13) * 1460)), 0.53 + 0.07*(68.49-53)/80, 0.348, 0.01},
		// Data mining: half the flows are one packet; flows over 10 MB
		// hold 98.3% of the bytes.
		{"data-mining", 7470236, 1460, 0.8 + 0.1*(68.49-7)/260, 0.983, 0.01},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, err := Workload(c.name)
			if err != nil {
				t.Fatal(err)
			}
			if m := w.Mean(); math.Abs(m-c.mean) > 1 {
				t.Errorf("Mean = %.1f B, want %.1f", m, c.mean)
			}
			if q := w.Quantile(0.5); q != c.median {
				t.Errorf("Quantile(0.5) = %d, want %d", q, c.median)
			}
			if lo, hi := w.Quantile(0), w.Quantile(1); lo != int64(w.sizes[0]) || hi != int64(w.sizes[len(w.sizes)-1]) {
				t.Errorf("Quantile(0), Quantile(1) = %d, %d: want the smallest and largest size", lo, hi)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			const n = 400_000
			var sum, small, tail float64
			for range n {
				s := float64(w.Quantile(rng.Float64()))
				sum += s
				if s <= 100_000 {
					small++
				}
				if s > 10e6 {
					tail += s
				}
			}
			if got := sum / n; math.Abs(got-c.mean)/c.mean > 0.05 {
				t.Errorf("mean of %d draws %.0f B, want %.0f within 5%%", n, got, c.mean)
			}
			if got := small / n; math.Abs(got-c.small) > 0.005 {
				t.Errorf("%.4f of draws ≤ 100 KB, want %.4f", got, c.small)
			}
			if got := tail / sum; math.Abs(got-c.tailBytes) > c.tailApprox {
				t.Errorf("%.3f of the bytes in flows over 10 MB, want about %.2f", got, c.tailBytes)
			}
			// λ = load·C/(8·mean): 50% of 995 Mbit/s.
			if got, want := w.FlowRate(0.5, 995e6), 0.5*995e6/(8*c.mean); math.Abs(got-want) > 1e-9*want {
				t.Errorf("FlowRate = %g, want %g", got, want)
			}
		})
	}
	if _, err := Workload("cache"); err == nil || !strings.Contains(err.Error(), "want one of web-search, data-mining") {
		t.Errorf("Workload(cache) = %v", err)
	}
}

func TestParseCDFRejects(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"1 0\n", "1 points, want at least 2"},
		{"1 0\n2\n", "line 2: 1 fields, want 2"},
		{"1 0\n0 1\n", `line 2: size "0" outside [1, 1e+12] bytes`},
		{"1 0\n2 1.5\n", `line 2: fraction "1.5" outside [0, 1]`},
		{"5 0\n2 1\n", "line 2: point (2, 1) below the previous (5, 0)"},
		{"1 0.1\n2 1\n", "first fraction 0.1, want 0"},
		{"1 0\n2 0.9\n", "last fraction 0.9, want 1"},
		{"# only\n1 0 # min\n\n2 NaN\n", `line 4: fraction "NaN" outside [0, 1]`},
	} {
		if _, err := ParseCDF("t", strings.NewReader(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseCDF(%q) = %v, want %q", c.in, err, c.want)
		}
	}
}

// FuzzParseCDF: any input is rejected or gives a CDF whose quantiles lie
// between its smallest and largest size and never decrease.
func FuzzParseCDF(f *testing.F) {
	f.Add("1 0\n1 0.5\n10 1\n")
	f.Add("# x\n100 0\n100 0.2 # y\n5e6 1\n")
	f.Fuzz(func(t *testing.T, in string) {
		c, err := ParseCDF("f", strings.NewReader(in))
		if err != nil {
			return
		}
		lo, hi := c.sizes[0], c.sizes[len(c.sizes)-1]
		prev := int64(math.MinInt64)
		for i := range 101 {
			q := c.Quantile(float64(i) / 100)
			if float64(q) < math.Round(lo) || float64(q) > math.Round(hi) || q < prev {
				t.Fatalf("Quantile(%d%%) = %d: outside [%g, %g] or below %d", i, q, lo, hi, prev)
			}
			prev = q
		}
		if m := c.Mean(); m < lo || m > hi {
			t.Fatalf("Mean %g outside [%g, %g]", m, lo, hi)
		}
	})
}

// TestLowerBy: a negative reduction reads as an increase, never "-49% lower".
func TestLowerBy(t *testing.T) {
	for _, c := range []struct {
		f    float64
		prec int
		want string
	}{{0.49, 0, "49% lower"}, {-0.494, 0, "49% higher"}, {0, 0, "0% lower"}, {0.956, 1, "95.6% lower"}} {
		if got := lowerBy(c.f, c.prec); got != c.want {
			t.Errorf("lowerBy(%g, %d) = %q, want %q", c.f, c.prec, got, c.want)
		}
	}
}
