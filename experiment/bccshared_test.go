package experiment

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/marking"
)

var bccOpts = demo.Options{Rate: bccRate, Bucket: demo.DefaultBucket, Buffer: demo.DefaultBuffer, K: demo.DefaultK}

// TestBCCScale: every buffer size keeps its ratio to K (the paper's 3 MB
// pool over its 325 KB threshold), the delay lines make the base RTT K/C,
// and the 16 flows scale to 2.
func TestBCCScale(t *testing.T) {
	s := bccScale{K: demo.DefaultK, Rate: bccRate}
	if got, want := float64(s.pool())/float64(s.K), float64(bccPaperPool)/bccPaperK; math.Abs(got-want) > 1e-4 {
		t.Errorf("B/K = %g, the paper's %g", got, want)
	}
	if got := s.pool() >> 10; got != 302 {
		t.Errorf("pool %d KB, want 302 (3 MB × 32/325)", got)
	}
	if got := s.bytes(1500); got < 151_000 || got > 151_300 { // 1500 KiB × 32/325
		t.Errorf("1500 KB scales to %d B, want ≈ 151.2 KB", got)
	}
	if rtt := 2 * s.delay(); math.Abs(float64(rtt)-float64(s.K)*8e9/float64(s.Rate)) > 2 {
		t.Errorf("base RTT from the delay lines %v, want K/C", rtt)
	}
	if s.flows() != 2 {
		t.Errorf("%d flows, want 2 (16 × 0.098)", s.flows())
	}
	if str := s.String(); !strings.Contains(str, "302 KB") || !strings.Contains(str, "0.0985") {
		t.Errorf("String() = %q", str)
	}
}

// TestBCCConfig: P5 and P6 share one DT pool in the single-MMU runs and
// have one each in Table IV's; every other port has its own; the switch
// config validates; the shared-buffer member marks on the pool's
// occupancy at the scaled threshold and the per-port one at K.
func TestBCCConfig(t *testing.T) {
	ifaces := []string{"p1", "p2", "p3", "p4", "p5"}
	s := bccScale{K: bccOpts.K, Rate: bccOpts.Rate}
	for _, c := range []bccCase{{part: "fig9", threshold: 500, udpLoad: 1.2, shared: true}, {part: "table4", threshold: 150}, {part: "fig9", udpLoad: 1.2, shared: true}} {
		cfg, err := bccConfig(bccOpts, ifaces, c)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		tcp, udp := cfg.Ports[bccTCPPort], cfg.Ports[bccUDPPort]
		if (tcp.Pool == udp.Pool) != c.shared {
			t.Errorf("%+v: P5 in pool %d, P6 in pool %d", c, tcp.Pool, udp.Pool)
		}
		for _, p := range []dataplane.PortConfig{tcp, udp} {
			if cfg.Pools[p.Pool].Size != s.pool() || p.Queues[0] != (buffer.QueueConfig{Alpha: 1}) || p.Delay.Fixed != s.delay() || len(p.Enqueue) != 0 {
				t.Errorf("%+v: port %s: pool %+v, queue %+v, delay %v, %d enqueue markers", c, p.Name, cfg.Pools[p.Pool], p.Queues[0], p.Delay.Fixed, len(p.Enqueue))
			}
		}
		pools := map[int]bool{}
		for i, p := range cfg.Ports {
			if i != bccTCPPort && i != bccUDPPort && (pools[p.Pool] || p.Pool == tcp.Pool || p.Pool == udp.Pool || p.Queues[0].Cap != bccOpts.Buffer) {
				t.Errorf("%+v: port %d shares pool %d or has no cap: %+v", c, i, p.Pool, p.Queues[0])
			}
			pools[p.Pool] = true
		}
		bc := buffer.Config{Pools: cfg.Pools}
		for _, p := range cfg.Ports {
			bc.Ports = append(bc.Ports, buffer.PortConfig{Pool: p.Pool, Queues: p.Queues})
		}
		if err := bc.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}

		mark := func(v marking.View) bool {
			for _, spec := range tcp.Dequeue {
				m, err := spec.New(1)
				if err != nil {
					t.Fatal(err)
				}
				v := v
				v.Len, v.LineRate, v.PoolSize = 1514, bccOpts.Rate, s.pool()
				if m.Mark(&v) != marking.Pass {
					return true
				}
			}
			return false
		}
		k := s.bytes(c.threshold)
		switch {
		case c.threshold == 0:
			if len(tcp.Dequeue) != 1 || mark(marking.View{PortBytes: bccOpts.K - 2000, PoolBytes: s.pool()}) || !mark(marking.View{PortBytes: bccOpts.K + 2000}) {
				t.Errorf("%+v: without BCC, want per-port ECN at K alone", c)
			}
		default:
			if len(tcp.Dequeue) != 2 || tcp.Dequeue[1].Name != marking.BCCPoolMember {
				t.Errorf("%+v: dequeue chain %v", c, tcp.Dequeue)
			}
			if mark(marking.View{PortBytes: 1000, PoolBytes: k - 2000}) || !mark(marking.View{PortBytes: 1000, PoolBytes: k + 2000}) || !mark(marking.View{PortBytes: bccOpts.K + 2000}) {
				t.Errorf("%+v: want marks from a pool above %d B and a port above K", c, k)
			}
		}
	}
	if _, err := bccConfig(bccOpts, ifaces[:4], bccCase{}); err == nil {
		t.Error("4 ports: no error")
	}
}

// bccFake returns three rounds of runs of every case whose TCP goodput is
// goodput(case).
func bccFake(goodput func(c bccCase) float64) []bccRun {
	var runs []bccRun
	B := float64(bccScale{K: bccOpts.K, Rate: bccOpts.Rate}.pool())
	for round := range 3 {
		for _, c := range bccCases() {
			runs = append(runs, bccFakeRun(c, round, goodput(c), B))
		}
	}
	return runs
}

// bccFakeRun is one fake run of case c.
func bccFakeRun(c bccCase, round int, goodput, B float64) bccRun {
	r := bccRun{c: c, round: round, elapsed: 5 * time.Second, goodput: goodput, busyTCP: 0.97, busyUDP: 0.99, enq: 100_000,
		meanTCP: 20 << 10, meanUDP: B / 2, meanPool: B/2 + 20<<10, udpSent: 400_000, loadTCP: testLoad(0.97), loadUDP: testLoad(0.99)}
	if c.udpLoad == 0 {
		r.goodput2 = r.goodput
	}
	if c.threshold == 0 && c.udpLoad >= 1 {
		r.drops = 100
	}
	for i := range 10 {
		r.series = append(r.series, bccSampleAt{at: time.Duration(i) * bccSample, tcp: 20 << 10, udp: int64(B / 2), pool: int64(B/2) + 20<<10})
	}
	return r
}

func TestBCCReport(t *testing.T) {
	verdicts := func(runs []bccRun) []bool {
		rep, err := bccReport(Env{Command: "test"}, bccOpts, time.Second, 5*time.Second, runs)
		if err != nil {
			t.Fatal(err)
		}
		var v []bool
		for _, c := range rep.Claims {
			v = append(v, c.Holds())
		}
		return v
	}
	// The paper's picture: goodput collapses below P6's queue and
	// recovers above it; on separate pools 150 KB costs 14%.
	paper := bccFake(func(c bccCase) float64 {
		switch {
		case c.part == "table4" && c.threshold == 150:
			return 780e6
		case c.part == "table4":
			return 900e6
		case c.threshold == 0 || c.threshold >= 1750:
			return 900e6
		case c.threshold >= 1500:
			return 600e6
		default:
			return 100e6
		}
	})
	if got := verdicts(paper); !slices.Equal(got, []bool{true, true, true, true, true, true, true}) {
		t.Errorf("the paper's picture: %v", got)
	}
	// Shared-buffer ECN that does nothing: goodput flat everywhere, no
	// loss anywhere.
	flat := bccFake(func(bccCase) float64 { return 900e6 })
	for i := range flat {
		flat[i].drops = 0
	}
	if got := verdicts(flat); !slices.Equal(got, []bool{true, true, false, true, true, true, false}) {
		t.Errorf("flat goodput: %v", got)
	}
	// Goodput that falls as the threshold grows breaks the trend claim.
	falling := bccFake(func(c bccCase) float64 { return 900e6 - float64(c.threshold)*300e3 })
	if got := verdicts(falling); got[4] {
		t.Errorf("falling goodput holds the trend claim: %v", got)
	}

	rep, err := bccReport(Env{Command: "ecnswitch experiment bcc-shared"}, bccOpts, time.Second, 5*time.Second, paper)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := rep.Write(dir); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{
		"| 500 KB | 49.2 KB | 100 Mbit/s | 11% |",
		"| 120% | 1000 KB | 100 Mbit/s | 0.000% |",
		"| 150 KB | 14.8 KB | 78.43 Gbit/s | 780 Mbit/s | 77.89 Gbit/s | 780 Mbit/s |",
		"780 + 780 vs 900 + 900 Mbit/s (13.3% lower; medians of 3 runs)",
		"![buffer.png](buffer.png)", "302 KB",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	for _, f := range []string{"buffer.png", "goodput.png", "loss.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := bccReport(Env{}, bccOpts, time.Second, time.Second, paper[:3]); err == nil {
		t.Error("3 runs: no error")
	}
	if !strings.Contains(string(md), "Untested: BCC's lower loss") {
		t.Error("report.md does not list the loss claim as untested")
	}
}
