package config

import (
	"math"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/marking"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1500", 1500, true}, {"96KB", 96000, true}, {"96kB", 96000, true}, {"64KiB", 65536, true},
		{"2.5KB", 2500, true}, {"3MB", 3_000_000, true}, {"1MiB", 1 << 20, true}, {"1TiB", 1 << 40, true},
		{"0.1KB", 100, true}, {"7 B", 7, true}, {"0", 0, true},
		{"1.5B", 0, false}, {"1.0001KB", 0, false}, {"3 bananas", 0, false}, {"-1KB", 0, false},
		{"1Kb", 0, false}, {"KB", 0, false}, {"99999999999TB", 0, false},
		{"9223372036854775807", math.MaxInt64, true}, {"9223372036854775808", 0, false}, {"1.000000000001KB", 0, false},
	} {
		got, err := ParseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"995Mbit", 995_000_000, true}, {"1Gbit", 1e9, true}, {"10Gbps", 10e9, true}, {"2.5Gbit/s", 2_500_000_000, true},
		{"100kbit", 100_000, true}, {"100Kbps", 100_000, true}, {"0.1Gbit", 1e8, true}, {"1000", 1000, true}, {"1Tbit", 1e12, true},
		{"5GB", 0, false}, {"1.5bit", 0, false}, {"fast", 0, false}, {"10Gbit/ms", 0, false},
		{"10.000000001Gbit", 10_000_000_001, true}, {"1.234567891234Tbit", 1_234_567_891_234, true}, {"10.0000000001Gbit", 0, false},
	} {
		got, err := ParseRate(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	for bps, want := range map[int64]string{995e6: "995Mbit", 1e9: "1Gbit", 2_500_000_000: "2.5Gbit", 400e9: "400Gbit", 1e6: "1Mbit", 999: "999bit"} {
		if got := FormatRate(bps); got != want {
			t.Errorf("FormatRate(%d) = %q, want %q", bps, got, want)
		}
	}
	for n, want := range map[int64]string{30000: "30KB", 65536: "64KiB", 1 << 40: "1TiB", 2_000_000: "2MB", 1538: "1538B", 0: "0"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"100us", 100 * time.Microsecond, true}, {"100µs", 100 * time.Microsecond, true}, {"1.5ms", 1500 * time.Microsecond, true},
		{"0", 0, true}, {"250ns", 250, true}, {"100", 0, false}, {"1.5", 0, false}, {"soon", 0, false},
	} {
		got, err := ParseDuration(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// Each threshold form resolves as marking.Threshold.Bytes documents, at
// C = 10 Gbit/s and a 1500-byte MTU: λ·C·RTT for 100 µs is 125000 bytes
// (001 §2.2 Eq. 1).
func TestParseThreshold(t *testing.T) {
	const rate, mtu = 10e9, 1500
	for _, tc := range []struct {
		in   string
		want int64
		form marking.Threshold
	}{
		{"30KB", 30_000, marking.Bytes(30_000)},
		{"30000", 30_000, marking.Bytes(30_000)},
		{"32KiB", 32_768, marking.Bytes(32_768)},
		{"20pkt", 30_000, marking.Packets(20)},
		{"20 packets", 30_000, marking.Packets(20)},
		{"16x1024B", 16_384, marking.PacketsOf(16, 1024)},
		{"100us", 125_000, marking.Delay(100_000)},
		{"C*RTT(100us)", 125_000, marking.Standard(100_000, 1)},
		{"0.72*C*RTT(100us)", 90_000, marking.Standard(100_000, 0.72)},
		{"0.5 × C × RTT(80us)", 50_000, marking.Standard(80_000, 0.5)},
	} {
		got, err := ParseThreshold(tc.in)
		if err != nil {
			t.Errorf("ParseThreshold(%q): %v", tc.in, err)
			continue
		}
		if got != tc.form || got.Bytes(rate, mtu) != tc.want {
			t.Errorf("ParseThreshold(%q) = %v (%d bytes), want %v (%d bytes)", tc.in, got, got.Bytes(rate, mtu), tc.form, tc.want)
		}
	}
	for _, bad := range []string{"30 bananas", "x*C*RTT(1us)", "C*RTT(100)", "16x0B", "pkt", ""} {
		if got, err := ParseThreshold(bad); err == nil {
			t.Errorf("ParseThreshold(%q) = %v, want an error", bad, got)
		}
	}
	// marking's own notation parses back to the same threshold.
	for _, th := range []marking.Threshold{marking.Bytes(32000), marking.Packets(16), marking.PacketsOf(16, 1024), marking.Delay(25600), marking.Standard(100000, 1)} {
		if got, err := ParseThreshold(th.String()); err != nil || got != th {
			t.Errorf("ParseThreshold(%q) = %v, %v; want %v", th.String(), got, err, th)
		}
	}
}

// The mapping form of a threshold: λ defaults to 1.
func TestThresholdMapping(t *testing.T) {
	c := mustParse(t, "ports: [{name: p, rate: 10Gbit, markers: {enqueue: [{scheme: dctcp, k: {rtt: 100us}}, {scheme: red, name: r, k: {lambda: 0.5, rtt: 100us}}]}}]")
	for i, want := range []int64{125_000, 62_500} {
		m := marker(t, c, 0, i, 0)
		below := marking.View{QueueBytes: want - 1, LineRate: 10e9}
		at := marking.View{QueueBytes: want, LineRate: 10e9}
		if m.Mark(&below) != marking.Pass || m.Mark(&at) != marking.Mark {
			t.Errorf("marker %d: threshold is not %d bytes", i, want)
		}
	}
}
