package scheduler

import "fmt"

// Shaper limits.
const (
	MaxBucket = 1 << 28 // bytes
)

// unitsPerByte is the credit of one byte: credit is kept in 10⁻⁹ bit, so a
// rate of R bit/s earns exactly R units per nanosecond and no rounding ever
// happens, however long the run.
const unitsPerByte = 8e9

// ShaperConfig configures a Shaper.
type ShaperConfig struct {
	// Rate is the emulated line rate C in bit/s, 0 to MaxLineRate; 0 leaves
	// the port unshaped. The MQ-ECN prototype shapes at 99.5% of the
	// physical line rate (001 §4.2).
	Rate int64
	// Bucket is the burst allowance in bytes, 0 to MaxBucket: the credit a
	// port may save up while idle. The MQ-ECN prototype used 2.5 KB
	// (001 §4.2: "∼1.67 MTU ... large enough to saturate more than 99% of
	// link capacity while introducing little burstiness").
	Bucket int64
	// Overhead says which bytes a frame costs: Desc.Len, or its Ethernet
	// wire size (see Overhead).
	Overhead Overhead
}

// Shaper is a token bucket that lets a port drain at an emulated line rate,
// so that the queue builds in ecnswitch rather than in the NIC (001 §4.2,
// "Rate Limiter"). It is used by one goroutine and never reads a clock.
//
// The shaper sends on credit: a packet may leave whenever the credit is not
// negative, and Take then charges its full cost, possibly into debt. The
// caller therefore needs no peek at the next packet: check Ready (or sleep
// until Next), Dequeue, Take. When every Take follows a true Ready, the
// bytes taken over any interval of length T are at most
// Bucket + one frame + Rate·T/8, and while the port is backlogged at least
// Rate·T/8 − one frame. A batch taken at once is paid back in full: Next
// then lies as far ahead as the batch's wire time.
type Shaper struct {
	rate     int64 // bit/s; 0 = unshaped
	cap      int64 // bucket in units
	credit   int64 // units; negative while in debt
	last     int64 // ns, time of the last refill
	maxDt    int64 // ns; refilling longer than this fills any bucket from any debt
	overhead Overhead
}

// NewShaper returns a shaper whose bucket is full at now. Errors wrap
// ErrConfig.
func NewShaper(cfg ShaperConfig, now int64) (*Shaper, error) {
	if cfg.Rate != 0 && (cfg.Rate < MinLineRate || cfg.Rate > MaxLineRate) {
		return nil, fmt.Errorf("%w: shaper.rate: %d outside [%d, %g] bit/s (or 0 for unshaped)", ErrConfig, cfg.Rate, MinLineRate, float64(MaxLineRate))
	}
	if cfg.Bucket < 0 || cfg.Bucket > MaxBucket {
		return nil, fmt.Errorf("%w: shaper.bucket: %d outside [0, %d] bytes", ErrConfig, cfg.Bucket, MaxBucket)
	}
	if cfg.Overhead > OverheadEthernet {
		return nil, fmt.Errorf("%w: shaper.overhead: %v is not one of none, ethernet", ErrConfig, cfg.Overhead)
	}
	s := &Shaper{rate: cfg.Rate, cap: cfg.Bucket * unitsPerByte, last: now, overhead: cfg.Overhead}
	s.credit = s.cap
	if s.rate > 0 {
		// rate·maxDt ≤ 2^62 and cap ≤ 2^61, so a refill never overflows,
		// and 2^62 units also pay back any debt short of ~57 MB.
		s.maxDt = (1 << 62) / s.rate
	}
	return s, nil
}

// Rate returns the shaping rate in bit/s, 0 if unshaped.
func (s *Shaper) Rate() int64 { return s.rate }

// Set changes the rate and the bucket at now, validated as NewShaper
// validates them: the time before now earns credit at the old rate, the
// time after at the new one, and credit above the new bucket is lost. A
// shaper that was unshaped starts with a full bucket.
func (s *Shaper) Set(now, rate, bucket int64) error {
	n, err := NewShaper(ShaperConfig{Rate: rate, Bucket: bucket, Overhead: s.overhead}, now)
	if err != nil {
		return err
	}
	if s.rate > 0 && n.rate > 0 {
		s.refill(now)
		n.credit, n.last = min(s.credit, n.cap), max(now, s.last)
	}
	*s = *n
	return nil
}

// Wire returns the bytes a frame of frameLen bytes costs this shaper.
func (s *Shaper) Wire(frameLen int) int { return s.overhead.Wire(frameLen) }

// refill credits the time since the last refill at the rate, up to the
// bucket. A now earlier than the last refill changes nothing.
func (s *Shaper) refill(now int64) {
	dt := now - s.last
	if dt <= 0 {
		return
	}
	s.last = now
	dt = min(dt, s.maxDt)
	s.credit = min(s.credit+s.rate*dt, s.cap)
}

// Ready reports whether a packet may leave at now.
func (s *Shaper) Ready(now int64) bool {
	if s.rate == 0 {
		return true
	}
	s.refill(now)
	return s.credit >= 0
}

// Take charges a frame of frameLen bytes (Desc.Len) sent at now.
func (s *Shaper) Take(now int64, frameLen int) {
	if s.rate == 0 {
		return
	}
	s.refill(now)
	s.credit -= int64(s.overhead.Wire(frameLen)) * unitsPerByte
}

// Next returns the earliest time at or after now when Ready will be true:
// now itself if it already is.
func (s *Shaper) Next(now int64) int64 {
	if s.rate == 0 {
		return now
	}
	s.refill(now)
	if s.credit >= 0 {
		return now
	}
	return max(now, s.last) + (-s.credit+s.rate-1)/s.rate
}
