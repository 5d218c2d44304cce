package loadgen

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ecnswitch/ecnswitch/packet"
)

// Share is a value with a weight: in a mix, a value with weight w is chosen
// for w of every Σw frames.
type Share[T any] struct {
	Value  T
	Weight int
}

// IMIX is the "simple IMIX" frame mix: 7 frames of 64 bytes, 4 of 594 and 1
// of 1518 in every 12, the Ethernet frames of 40-, 576- and 1500-byte IP
// packets (the classic 7:4:1 Internet mix; RFC 6985 §4 describes IMIX
// genomes). The mean frame is 361.8 bytes.
func IMIX() []Share[int] {
	return []Share[int]{{64, 7}, {594, 4}, {1518, 1}}
}

// maxPattern bounds Σw after dividing by the weights' greatest common
// divisor: a mix is unrolled into a pattern of that many entries.
const maxPattern = 1 << 16

// MaxWeight is the largest weight of one entry of a mix. No pattern has
// more entries, and the product of a DSCP and an ECN weight, a class's,
// stays far from overflowing an int.
const MaxWeight = maxPattern

// pattern unrolls weights into a sequence of indices in which index i
// appears weights[i]/g times per Σweights/g entries (g the weights' GCD),
// spread as evenly as smooth weighted round robin spreads them (each step
// adds every weight to its index's credit and picks the largest credit,
// which then pays Σw). 7:4:1 gives 0 1 0 2 0 1 0 0 1 0 1 0... with no long
// runs of one index.
func pattern(weights []int) ([]int, error) {
	g, sum := 0, 0
	for i, w := range weights {
		if w <= 0 {
			return nil, fmt.Errorf("weight %d of entry %d: want > 0", w, i)
		}
		g = gcd(g, w)
	}
	for _, w := range weights {
		sum += w / g
	}
	if sum > maxPattern {
		return nil, fmt.Errorf("weights sum to %d after dividing by their GCD %d: want at most %d", sum, g, maxPattern)
	}
	credit := make([]int, len(weights))
	out := make([]int, sum)
	for k := range out {
		best := 0
		for i, w := range weights {
			credit[i] += w / g
			if credit[i] > credit[best] {
				best = i
			}
		}
		credit[best] -= sum
		out[k] = best
	}
	return out, nil
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Rate is a target rate: Bits in bit/s or Packets in frames/s, at most one
// of them set. Bit rates count each frame's size (FCS included) plus the
// generator's Overhead. The zero Rate means as fast as the port takes
// frames.
type Rate struct {
	Bits    float64
	Packets float64
}

// IsZero reports whether r asks for no pacing.
func (r Rate) IsZero() bool { return r.Bits == 0 && r.Packets == 0 }

// String formats r as ParseRate reads it: "100Mbit", "1.5Mpps", "max".
func (r Rate) String() string {
	switch {
	case r.Bits > 0:
		return siString(r.Bits, "bit")
	case r.Packets > 0:
		return siString(r.Packets, "pps")
	}
	return "max"
}

func siString(v float64, unit string) string {
	for _, p := range []struct {
		f float64
		s string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if v >= p.f {
			return strconv.FormatFloat(v/p.f, 'g', 6, 64) + p.s + unit
		}
	}
	return strconv.FormatFloat(v, 'g', 6, 64) + unit
}

func (r Rate) validate() error {
	switch {
	case r.Bits < 0 || math.IsNaN(r.Bits) || math.IsInf(r.Bits, 0):
		return fmt.Errorf("rate: %v bit/s: want a finite rate ≥ 0", r.Bits)
	case r.Packets < 0 || math.IsNaN(r.Packets) || math.IsInf(r.Packets, 0):
		return fmt.Errorf("rate: %v pps: want a finite rate ≥ 0", r.Packets)
	case r.Bits > 0 && r.Packets > 0:
		return fmt.Errorf("rate: both %v bit/s and %v pps set: want one", r.Bits, r.Packets)
	case r.Bits > 0 && r.Bits < 1000:
		return fmt.Errorf("rate: %v bit/s: want at least 1 kbit/s", r.Bits)
	case r.Bits > 1e13:
		return fmt.Errorf("rate: %v bit/s: want at most 10 Tbit/s", r.Bits)
	case r.Packets > 0 && r.Packets < 0.001:
		return fmt.Errorf("rate: %v pps: want at least 0.001 pps", r.Packets)
	case r.Packets > 1e10:
		return fmt.Errorf("rate: %v pps: want at most 10 Gpps", r.Packets)
	}
	return nil
}

// ParseRate reads a rate: a number with a unit of bit/s (bit, kbit, Mbit,
// Gbit, Tbit; "bps" and a "/s" suffix are accepted too) or of frames/s
// (pps, kpps, Mpps, Gpps); prefixes are powers of 1000 and case is ignored.
// "max", "0" and "" mean as fast as possible.
func ParseRate(s string) (Rate, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" || t == "max" || t == "0" {
		return Rate{}, nil
	}
	t = strings.TrimSuffix(t, "/s")
	var unit string
	switch {
	case strings.HasSuffix(t, "pps"):
		unit, t = "pps", strings.TrimSuffix(t, "pps")
	case strings.HasSuffix(t, "bps"):
		unit, t = "bit", strings.TrimSuffix(t, "bps")
	case strings.HasSuffix(t, "bit"):
		unit, t = "bit", strings.TrimSuffix(t, "bit")
	default:
		return Rate{}, fmt.Errorf("rate %q: want a unit: bit, kbit, Mbit, Gbit (bit/s) or pps, kpps, Mpps (frames/s), or max", s)
	}
	mult := 1.0
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k':
			mult = 1e3
		case 'm':
			mult = 1e6
		case 'g':
			mult = 1e9
		case 't':
			mult = 1e12
		}
		if mult != 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 {
		return Rate{}, fmt.Errorf("rate %q: want a positive number before the unit", s)
	}
	var r Rate
	if unit == "pps" {
		r.Packets = v * mult
	} else {
		r.Bits = v * mult
	}
	if err := r.validate(); err != nil {
		return Rate{}, fmt.Errorf("rate %q: %w", s, err)
	}
	return r, nil
}

// ParseSizes reads a frame-size mix: "imix" (see IMIX), one size ("512"),
// a list whose sizes alternate equally ("64,512,1500"), or sizes with
// weights ("64:7,594:4,1518:1"). Sizes count the FCS and lie in [MinSize,
// MaxSize].
func ParseSizes(s string) ([]Share[int], error) {
	if strings.EqualFold(strings.TrimSpace(s), "imix") {
		return IMIX(), nil
	}
	return parseMix(s, "size", func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < MinSize || n > MaxSize {
			return 0, fmt.Errorf("want an integer in [%d, %d] bytes (FCS included)", MinSize, MaxSize)
		}
		return n, nil
	})
}

// ParseDSCP reads a DSCP mix: "0", "0,8" (equal shares) or "0:50,8:50";
// codepoints are 0–63.
func ParseDSCP(s string) ([]Share[uint8], error) {
	return parseMix(s, "dscp", func(v string) (uint8, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 63 {
			return 0, errors.New("want an integer in [0, 63]")
		}
		return uint8(n), nil
	})
}

// ParseECN reads an ECN-codepoint mix: "ect0", "ect0:90,notect:10", ...
// with codepoints notect (also not-ect, none), ect0, ect1 and ce.
func ParseECN(s string) ([]Share[packet.ECN], error) {
	return parseMix(s, "ecn", func(v string) (packet.ECN, error) {
		switch strings.ToLower(v) {
		case "notect", "not-ect", "none", "0":
			return packet.NotECT, nil
		case "ect1", "ect(1)", "1":
			return packet.ECT1, nil
		case "ect0", "ect(0)", "2":
			return packet.ECT0, nil
		case "ce", "3":
			return packet.CE, nil
		}
		return 0, errors.New("want notect, ect0, ect1 or ce")
	})
}

// parseMix reads "v", "v,v,..." or "v:w,v:w,...".
func parseMix[T comparable](s, key string, value func(string) (T, error)) ([]Share[T], error) {
	var out []Share[T]
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		v, w, hasW := strings.Cut(item, ":")
		val, err := value(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("%s %q: %q: %w", key, s, v, err)
		}
		weight := 1
		if hasW {
			weight, err = strconv.Atoi(strings.TrimSpace(w))
			if err != nil || weight < 1 || weight > MaxWeight {
				return nil, fmt.Errorf("%s %q: weight %q: want an integer in [1, %d]", key, s, w, MaxWeight)
			}
		}
		for _, o := range out {
			if o.Value == val {
				return nil, fmt.Errorf("%s %q: %v listed twice", key, s, val)
			}
		}
		out = append(out, Share[T]{val, weight})
	}
	return out, nil
}

// MeanSize returns the mean frame size of a mix, FCS included.
func MeanSize(sizes []Share[int]) float64 {
	var sum, n float64
	for _, s := range sizes {
		sum += float64(s.Value * s.Weight)
		n += float64(s.Weight)
	}
	if n == 0 {
		return 0
	}
	return sum / n
}
