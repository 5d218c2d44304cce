package config

import (
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ecnswitch/ecnswitch/marking"
)

// Size is a number of bytes. In YAML it is a plain integer (bytes) or a
// number with a unit: B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB,
// TiB (powers of 1024): 96KB = 96000, 64KiB = 65536, 2.5KB = 2500. The
// result must be a whole number of bytes.
type Size struct {
	N   int64  // bytes
	raw string // as written, for error messages
}

// Rate is a bit rate in bit/s. In YAML it is a plain integer (bit/s) or a
// number with a unit: bit, Kbit, Mbit, Gbit, Tbit (also kbit, bps, Kbps,
// Mbps, Gbps, Tbps, and /s forms like Gbit/s), powers of 1000: 995Mbit,
// 1Gbit, 10Gbps, 2.5Gbit.
type Rate struct {
	BPS int64 // bit/s
	raw string
}

// Duration is a time span in Go syntax: 100us, 1.5ms, 2s, 250ns (µs is
// accepted for us). A plain 0 is zero; other plain numbers are an error,
// since their unit would be a guess.
type Duration struct {
	D   time.Duration
	raw string
}

// Threshold is a marking threshold in one of the forms of marking.Threshold:
//
//	30000, 30KB, 32KiB       bytes (marking.Bytes)
//	20pkt (or 20pkts)        packets of the marker's MTU, 1500 bytes by default (marking.Packets)
//	16x1024B                 16 packets of 1024 bytes (marking.PacketsOf)
//	100us                    the bytes the port drains in that time at its rate: C·t (marking.Delay)
//	{lambda: 1, rtt: 100us}  the standard threshold λ·C·RTT (001 §2.2 Eq. 1; marking.Standard); lambda defaults to 1
//	0.72*C*RTT(80us)         the same as a string; "C*RTT(80us)" means λ = 1
//
// Time and λ·C·RTT forms resolve with the port's rate, so they need one.
type Threshold struct {
	T   marking.Threshold
	raw string
}

// Set reports whether the threshold was given.
func (t Threshold) Set() bool { return !t.T.IsZero() }

// String returns the size as written, or in bytes.
func (s Size) String() string {
	if s.raw != "" {
		return s.raw
	}
	return strconv.FormatInt(s.N, 10)
}

// String returns the rate as written, or formatted.
func (r Rate) String() string {
	if r.raw != "" {
		return r.raw
	}
	return FormatRate(r.BPS)
}

// String returns the duration as written, or in Go syntax.
func (d Duration) String() string {
	if d.raw != "" {
		return d.raw
	}
	return d.D.String()
}

// String returns the threshold as written, or in marking's notation.
func (t Threshold) String() string {
	if t.raw != "" {
		return t.raw
	}
	return t.T.String()
}

// scalar returns n's value if n is a scalar (not null), else an error.
func scalar(n *yaml.Node, want string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", nodeError(n, "%s is not %s", describeNode(n), want)
	}
	return n.Value, nil
}

// describeNode names a node's value for an error message.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.Tag == "!!null" {
		return "an empty value"
	}
	return strconv.Quote(n.Value)
}

// numUnit splits "2.5KB" into 2.5 and "KB". The number is parsed exactly
// as a decimal (mantissa and scale) so that 0.1Gbit is exactly 1e8.
var numUnitRE = regexp.MustCompile(`^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-zµ/]*)\s*$`)

// scaled returns num × mult exactly for a decimal string num, and false if
// the product is not a whole number or does not fit an int64. It works in
// big integers, so that a long fraction ("10.000000001Gbit") or a number
// of 19 digits does not overflow on the way to a result that fits.
func scaled(num string, mult int64) (int64, bool) {
	intPart, frac, _ := strings.Cut(num, ".")
	frac = strings.TrimRight(frac, "0")
	if len(frac) > 64 { // no unit (at most 2^40 or 10^12) makes that many decimals whole
		return 0, false
	}
	v, ok := new(big.Int).SetString(intPart+frac, 10)
	if !ok {
		return 0, false
	}
	v.Mul(v, big.NewInt(mult))
	div := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(frac))), nil)
	q, r := v.QuoRem(v, div, new(big.Int))
	if r.Sign() != 0 || !q.IsInt64() {
		return 0, false
	}
	return q.Int64(), true
}

var sizeUnits = map[string]int64{
	"": 1, "B": 1,
	"KB": 1e3, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
}

// ParseSize parses a size as the YAML form of Size describes.
func ParseSize(s string) (int64, error) {
	m := numUnitRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q is not a size; want bytes like 1500, 96KB, 64KiB, 2MB", s)
	}
	mult, ok := sizeUnits[m[2]]
	if !ok {
		return 0, fmt.Errorf("%q has unknown unit %q; want B, KB, MB, GB, TB (×1000) or KiB, MiB, GiB, TiB (×1024)", s, m[2])
	}
	n, ok := scaled(m[1], mult)
	if !ok {
		return 0, fmt.Errorf("%q is not a whole number of bytes below 2^63", s)
	}
	return n, nil
}

var rateUnits = func() map[string]int64 {
	u := map[string]int64{}
	for p, mult := range map[string]int64{"": 1, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12} {
		for _, s := range []string{"bit", "bps", "bit/s", "b/s"} {
			u[p+s] = mult
		}
	}
	u[""] = 1
	return u
}()

// ParseRate parses a rate as the YAML form of Rate describes.
func ParseRate(s string) (int64, error) {
	m := numUnitRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q is not a rate; want bit/s like 995Mbit, 10Gbit, 25Gbps", s)
	}
	mult, ok := rateUnits[m[2]]
	if !ok {
		return 0, fmt.Errorf("%q has unknown unit %q; want bit, Kbit, Mbit, Gbit, Tbit (or bps, Gbps, Gbit/s)", s, m[2])
	}
	n, ok := scaled(m[1], mult)
	if !ok {
		return 0, fmt.Errorf("%q is not a whole number of bit/s below 2^63", s)
	}
	return n, nil
}

// FormatRate formats bit/s in the largest unit that keeps it readable:
// 995000000 → "995Mbit", 1e9 → "1Gbit", 2.5e9 → "2.5Gbit".
func FormatRate(bps int64) string {
	for _, u := range []struct {
		name string
		mult int64
	}{{"Tbit", 1e12}, {"Gbit", 1e9}, {"Mbit", 1e6}, {"Kbit", 1e3}} {
		if bps >= u.mult {
			return strconv.FormatFloat(float64(bps)/float64(u.mult), 'f', -1, 64) + u.name
		}
	}
	return strconv.FormatInt(bps, 10) + "bit"
}

// FormatSize formats bytes with a decimal unit when one divides it exactly
// (30000 → "30KB") or a binary one (65536 → "64KiB"), else in bytes.
func FormatSize(n int64) string {
	if n == 0 {
		return "0"
	}
	for _, u := range []struct {
		name string
		mult int64
	}{{"TB", 1e12}, {"TiB", 1 << 40}, {"GB", 1e9}, {"GiB", 1 << 30}, {"MB", 1e6}, {"MiB", 1 << 20}, {"KB", 1e3}, {"KiB", 1 << 10}} {
		if n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// ParseDuration parses a duration as the YAML form of Duration describes.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "0" {
		return 0, nil
	}
	if _, err := strconv.ParseFloat(t, 64); err == nil {
		return 0, fmt.Errorf("%q has no unit; want a Go duration like 100us, 1.5ms, 2s", s)
	}
	d, err := time.ParseDuration(strings.ReplaceAll(t, "µ", "u"))
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration; want Go syntax like 100us, 1.5ms, 2s", s)
	}
	return d, nil
}

var (
	pktRE      = regexp.MustCompile(`^\s*([0-9]+)\s*(?:pkt|pkts|packets?)\s*$`)
	pktOfRE    = regexp.MustCompile(`^\s*([0-9]+)\s*x\s*([0-9.]+\s*[A-Za-z]*)\s*$`)
	standardRE = regexp.MustCompile(`^\s*(?:([0-9]+(?:\.[0-9]+)?)\s*[*×·]\s*)?C\s*[*×·]\s*RTT\s*\(\s*([^)]+?)\s*\)\s*$`)
)

// ParseThreshold parses a threshold string in any of the forms Threshold
// describes except the mapping form.
func ParseThreshold(s string) (marking.Threshold, error) {
	if m := pktRE.FindStringSubmatch(s); m != nil {
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			return marking.Threshold{}, fmt.Errorf("%q: packet count out of range", s)
		}
		return marking.Packets(n), nil
	}
	if m := pktOfRE.FindStringSubmatch(s); m != nil {
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			return marking.Threshold{}, fmt.Errorf("%q: packet count out of range", s)
		}
		size, err := ParseSize(m[2])
		if err != nil || size == 0 {
			return marking.Threshold{}, fmt.Errorf("%q: packet size %q is not a positive size", s, m[2])
		}
		return marking.PacketsOf(n, size), nil
	}
	if m := standardRE.FindStringSubmatch(s); m != nil {
		lambda := 1.0
		if m[1] != "" {
			lambda, _ = strconv.ParseFloat(m[1], 64)
		}
		rtt, err := ParseDuration(m[2])
		if err != nil {
			return marking.Threshold{}, fmt.Errorf("%q: rtt: %w", s, err)
		}
		return marking.Standard(int64(rtt), lambda), nil
	}
	if n, err := ParseSize(s); err == nil {
		return marking.Bytes(n), nil
	}
	if m := numUnitRE.FindStringSubmatch(s); m != nil {
		if _, isSize := sizeUnits[m[2]]; !isSize {
			if d, err := ParseDuration(s); err == nil {
				return marking.Delay(int64(d)), nil
			}
		}
	}
	return marking.Threshold{}, fmt.Errorf("%q is not a threshold; want bytes (30KB), packets (20pkt, 16x1024B), "+
		"a time at the port's rate (100us), or λ·C·RTT ({lambda: 1, rtt: 100us} or \"1*C*RTT(100us)\")", s)
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	v, err := scalar(n, "a size")
	if err != nil {
		return err
	}
	b, err := ParseSize(v)
	if err != nil {
		return nodeError(n, "%v", err)
	}
	*s = Size{N: b, raw: v}
	return nil
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	v, err := scalar(n, "a rate")
	if err != nil {
		return err
	}
	b, err := ParseRate(v)
	if err != nil {
		return nodeError(n, "%v", err)
	}
	*r = Rate{BPS: b, raw: v}
	return nil
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := scalar(n, "a duration")
	if err != nil {
		return err
	}
	t, err := ParseDuration(v)
	if err != nil {
		return nodeError(n, "%v", err)
	}
	*d = Duration{D: t, raw: v}
	return nil
}

// UnmarshalYAML implements yaml.Unmarshaler for the string and mapping
// forms.
func (t *Threshold) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		var lambda *float64
		var rtt *Duration
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			switch k.Value {
			case "lambda":
				var f float64
				if err := v.Decode(&f); err != nil {
					return nodeError(v, "%s is not a number", describeNode(v))
				}
				lambda = &f
			case "rtt":
				rtt = new(Duration)
				if err := rtt.UnmarshalYAML(v); err != nil {
					return err
				}
			default:
				return nodeError(k, "unknown key %q in a λ·C·RTT threshold; allowed: lambda, rtt", k.Value)
			}
		}
		if rtt == nil {
			return nodeError(n, "a λ·C·RTT threshold needs rtt (and optionally lambda, default 1)")
		}
		l := 1.0
		if lambda != nil {
			l = *lambda
		}
		*t = Threshold{T: marking.Standard(int64(rtt.D), l), raw: fmt.Sprintf("%g*C*RTT(%s)", l, rtt)}
		return nil
	}
	v, err := scalar(n, "a threshold")
	if err != nil {
		return err
	}
	th, err := ParseThreshold(v)
	if err != nil {
		return nodeError(n, "%v", err)
	}
	*t = Threshold{T: th, raw: v}
	return nil
}
