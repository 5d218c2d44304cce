package marking

import (
	"math"
	"math/bits"
	"strconv"
)

// thresholdKind says in which unit a Threshold was given.
type thresholdKind uint8

const (
	thresholdUnset    thresholdKind = iota // the zero Threshold: not configured
	thresholdBytes                         // n bytes
	thresholdPackets                       // n packets of size bytes, or of the MTU when size is 0
	thresholdDelay                         // n ns of transmission at the line rate C
	thresholdStandard                      // λ·C·RTT (001 §2.2 Eq. 1)
)

// Limits on thresholds.
const (
	thresholdLambdaMax = 16.0        // largest λ accepted; DCTCP's λ is below 1, ECN*'s is 1
	thresholdTimeMax   = int64(10e9) // ns: largest RTT or delay accepted, 10 s
	defaultMTU         = 1500        // bytes: the packet size of a threshold in packets when no MTU is given
)

// Threshold is a buffer-occupancy threshold given in the unit its author
// thought in: bytes, packets, a transmission time at the port's line rate,
// or the "standard threshold" K = λ·C·RTT of the single-queue model
// (001 §2.2 Eq. 1, 002 §II-B, 003 Eq. 1). Bytes resolves it to bytes once
// the line rate C and the MTU are known.
//
// The zero Threshold is "not configured"; schemes then use their default.
// Threshold is a small comparable value; build it with Bytes,
// Packets, PacketsOf, Delay or Standard.
type Threshold struct {
	kind   thresholdKind
	n      int64   // bytes, packets or ns, by kind
	size   int64   // bytes per packet for thresholdPackets; 0 means the MTU
	lambda float64 // λ for thresholdStandard
}

// Bytes returns a threshold of n bytes.
func Bytes(n int64) Threshold { return Threshold{kind: thresholdBytes, n: n} }

// Packets returns a threshold of n MTU-sized packets, e.g. the 16 packets
// of 001 §2.2.1 or the 65 packets DCTCP recommends at 10G.
func Packets(n int64) Threshold { return Threshold{kind: thresholdPackets, n: n} }

// PacketsOf returns a threshold of n packets of size bytes each.
func PacketsOf(n, size int64) Threshold {
	return Threshold{kind: thresholdPackets, n: n, size: size}
}

// Delay returns the threshold that a port drains in d ns at its line rate
// C: C·d/8 bytes. TCN's T_k and K are related this way (003 Eq. 4).
func Delay(d int64) Threshold { return Threshold{kind: thresholdDelay, n: d} }

// Standard returns the standard threshold K = λ·C·RTT (001 §2.2 Eq. 1),
// rtt in ns: λ = 1 for ECN-enabled TCP that halves its window (001 §2.2
// footnote 2); BCC measures λ ≈ 0.72 for DCTCP with real bursts (002
// §III-C, §V-A).
func Standard(rtt int64, lambda float64) Threshold {
	return Threshold{kind: thresholdStandard, n: rtt, lambda: lambda}
}

// IsZero reports whether t is the zero (unconfigured) Threshold.
func (t Threshold) IsZero() bool { return t.kind == thresholdUnset }

// RateDependent reports whether resolving t needs the line rate: true for
// Delay and Standard thresholds.
func (t Threshold) RateDependent() bool {
	return t.kind == thresholdDelay || t.kind == thresholdStandard
}

// Bytes resolves t to bytes for a port of lineRate bit/s whose packets are
// at most mtu bytes (mtu ≤ 0 means 1500):
//
//	Bytes(n)            n
//	Packets(n)          n·mtu
//	PacketsOf(n, s)     n·s
//	Delay(d)            ⌊C·d / 8e9⌋        (d in ns)
//	Standard(rtt, λ)    round(λ·⌊C·rtt / 8e9⌋)
//
// Results saturate at math.MaxInt64; negative inputs and the zero Threshold
// resolve to 0.
func (t Threshold) Bytes(lineRate, mtu int64) int64 {
	if mtu <= 0 {
		mtu = defaultMTU
	}
	switch t.kind {
	case thresholdBytes:
		return max(t.n, 0)
	case thresholdPackets:
		size := t.size
		if size <= 0 {
			size = mtu
		}
		return mulDivSat(t.n, size, 1)
	case thresholdDelay:
		return mulDivSat(lineRate, t.n, 8e9)
	case thresholdStandard:
		bdp := mulDivSat(lineRate, t.n, 8e9)
		k := math.Round(float64(bdp) * t.lambda)
		if !(k >= 0) { // negative λ or NaN
			return 0
		}
		if k >= math.MaxInt64 {
			return math.MaxInt64
		}
		return int64(k)
	}
	return 0
}

// check validates t as the value of scheme's config key.
func (t Threshold) check(scheme, key string) error {
	switch t.kind {
	case thresholdUnset:
		return paramError(scheme, key, "%s is not set", key)
	case thresholdBytes:
		if t.n < 0 {
			return paramError(scheme, key, "%s %d bytes out of range [0, %d] bytes", key, t.n, int64(math.MaxInt64))
		}
	case thresholdPackets:
		if t.n < 0 {
			return paramError(scheme, key, "%s %d packets out of range [0, %d] packets", key, t.n, int64(math.MaxInt64))
		}
		if t.size < 0 {
			return paramError(scheme, key, "%s packet size %d bytes out of range [1, %d] bytes (0 means the mtu)", key, t.size, int64(math.MaxInt64))
		}
	case thresholdDelay:
		if t.n < 0 || t.n > thresholdTimeMax {
			return paramError(scheme, key, "%s %d ns out of range [0, %d] ns", key, t.n, thresholdTimeMax)
		}
	case thresholdStandard:
		if t.n <= 0 || t.n > thresholdTimeMax {
			return paramError(scheme, key, "%s: rtt %d ns out of range (0, %d] ns", key, t.n, thresholdTimeMax)
		}
		if !(t.lambda > 0 && t.lambda <= thresholdLambdaMax) { // also rejects NaN
			return paramError(scheme, key, "%s: lambda %g out of range (0, %g]", key, t.lambda, thresholdLambdaMax)
		}
	default:
		return paramError(scheme, key, "%s has unknown unit %d", key, t.kind)
	}
	return nil
}

// String returns t in the notation docs/marking.md uses for configs:
// "32000B", "16pkt", "16x1024B", "25600ns", "1*C*RTT(100000ns)", or
// "unset".
func (t Threshold) String() string {
	switch t.kind {
	case thresholdBytes:
		return strconv.FormatInt(t.n, 10) + "B"
	case thresholdPackets:
		if t.size > 0 {
			return strconv.FormatInt(t.n, 10) + "x" + strconv.FormatInt(t.size, 10) + "B"
		}
		return strconv.FormatInt(t.n, 10) + "pkt"
	case thresholdDelay:
		return strconv.FormatInt(t.n, 10) + "ns"
	case thresholdStandard:
		return strconv.FormatFloat(t.lambda, 'g', -1, 64) + "*C*RTT(" + strconv.FormatInt(t.n, 10) + "ns)"
	}
	return "unset"
}

// mulDivSat returns ⌊a·b/c⌋ computed in 128 bits, saturating at
// math.MaxInt64; negative a or b and c ≤ 0 give 0.
func mulDivSat(a, b, c int64) int64 {
	if a <= 0 || b <= 0 || c <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, uint64(c))
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

// level is a threshold resolved to bytes. A threshold that does not depend
// on the line rate, or whose line rate was configured, is resolved once at
// construction; one that depends on the port's rate is re-resolved from
// View.LineRate whenever that changes, at the cost of one comparison per
// packet otherwise. While View.LineRate is 0 (unknown) such a threshold is
// math.MaxInt64: a marker that cannot know its threshold marks nothing,
// rather than everything.
type level struct {
	t     Threshold
	fixed bool  // bytes never change
	rate  int64 // the line rate bytes was resolved at
	mtu   int64
	bytes int64
}

// newLevel resolves t with the configured lineRate (0: take C from each
// View) and mtu.
func newLevel(t Threshold, lineRate, mtu int64) level {
	l := level{t: t, mtu: mtu, rate: lineRate}
	l.fixed = !t.RateDependent() || lineRate > 0
	l.bytes = t.Bytes(lineRate, mtu)
	if !l.fixed {
		l.bytes = math.MaxInt64
	}
	return l
}

// at returns the threshold in bytes for a port running at rate bit/s.
func (l *level) at(rate int64) int64 {
	if !l.fixed && rate != l.rate {
		l.rate = rate
		l.bytes = math.MaxInt64
		if rate > 0 {
			l.bytes = l.t.Bytes(rate, l.mtu)
		}
	}
	return l.bytes
}
