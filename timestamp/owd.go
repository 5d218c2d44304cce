package timestamp

// DX's one-way-delay path (004 §III, Fig. 4). A data packet leaves the
// sender at t1 and reaches the receiver at t2; its ACK leaves the receiver
// at t3 and reaches the sender at t4. The two hosts' clocks are not
// synchronised, so t2 − t1 holds an unknown offset, but the RTT does not:
//
//	RTT = (t4 − t1) − (t3 − t2)
//	OWD = t2 − t1                  (offset included)
//	Q   = OWD − OWD_base           (the offset cancels)

// Stamps are one data packet's four timestamps, in nanoseconds: t1 and t4
// on the sender's clock, t2 and t3 on the receiver's.
type Stamps struct {
	T1, T2, T3, T4 int64
}

// RTT returns the round trip without either host's processing time,
// (t4 − t1) − (t3 − t2) (004 §III, "Removing host stack delay").
func (s Stamps) RTT() int64 { return (s.T4 - s.T1) - (s.T3 - s.T2) }

// OWD returns the one-way delay t2 − t1, skewed by the clocks' offset
// (004 §III, "One-way queuing delay").
func (s Stamps) OWD() int64 { return s.T2 - s.T1 }

// Delay turns skewed one-way delays into queueing delays (004 §III). The
// base one-way delay OWD_base is the OWD of a sample whose RTT is the
// smallest seen: such a sample met no queue, in either direction. Clock
// drift (about 40 ns/ms between two hosts) moves every OWD, the base's
// too, so a plain minimum of OWDs would follow one host's drift and never
// the other's; instead OWD_base is replaced whenever the RTT reaches a new
// minimum or re-observes the current one, and RTT itself is free of drift.
//
// The zero value is ready to use and has no base until the first sample.
type Delay struct {
	// Tolerance is how far above the minimum RTT a sample may be and
	// still count as re-observing it, in ns. Stamps in nanoseconds almost
	// never repeat exactly; a Tolerance of the stamps' noise lets the base
	// follow drift. It bounds the queueing a base update can absorb.
	Tolerance int64

	minRTT int64
	base   int64
	ok     bool
	// provisional: the base came from ObserveMean, a mean over several
	// packets; the first sample of a single packet replaces it.
	provisional bool
}

// Observe takes one sample's skewed one-way delay and RTT (see Stamps)
// and returns its queueing delay, OWD − OWD_base, never below zero (a
// sample can undercut the base by noise or by drift since the last base
// update).
func (d *Delay) Observe(owd, rtt int64) int64 {
	if d.provisional {
		d.ok, d.provisional = false, false
	}
	return d.observe(owd, rtt)
}

func (d *Delay) observe(owd, rtt int64) int64 {
	switch {
	case !d.ok || rtt < d.minRTT:
		d.minRTT, d.base, d.ok = rtt, owd, true
	case rtt <= d.minRTT+d.Tolerance:
		d.base = owd // re-observed the minimum: a zero-queue sample with today's drift
	}
	return max(owd-d.base, 0)
}

// ObserveMean takes the mean OWD of several packets, which one ACK
// covers (004 §V-A), with the RTT of the newest of them, and returns the
// queueing delay, OWD − OWD_base, never below zero. The mean and that RTT
// are not one packet's: a low RTT would take a mean with queueing in it
// for the base, so once a single packet's sample (Observe) has set the
// base, ObserveMean only measures against it. Until then it keeps a
// provisional base as Observe would, so that a receiver that always
// covers several packets still gives one.
func (d *Delay) ObserveMean(owd, rtt int64) int64 {
	if d.ok && !d.provisional {
		return max(owd-d.base, 0)
	}
	q := d.observe(owd, rtt)
	d.provisional = true
	return q
}

// Base returns OWD_base and whether there is one yet.
func (d *Delay) Base() (int64, bool) { return d.base, d.ok }

// MinRTT returns the smallest RTT observed and whether there is one yet.
func (d *Delay) MinRTT() (int64, bool) { return d.minRTT, d.ok }

// Calibrate corrects one batch's stamps for bursts (004 §III "Error
// calibration", Fig. 5): packets received (or sent) in one batch carry
// nearly equal stamps, but a link cannot deliver two packets closer than
// the later one's transmission time. So a stamp that lies closer to the
// one before it than that is moved to exactly one transmission time after
// it. stamps[i] is packet i's stamp, in order; wireBytes[i] its size on
// the wire; bitsPerSecond the link rate. It returns how many stamps moved.
// The slices must have equal lengths.
func Calibrate(stamps []int64, wireBytes []int, bitsPerSecond int64) int {
	moved := 0
	for i := 1; i < len(stamps); i++ {
		gap := TransmissionTime(wireBytes[i], bitsPerSecond)
		if stamps[i]-stamps[i-1] < gap {
			stamps[i] = stamps[i-1] + gap
			moved++
		}
	}
	return moved
}

// TransmissionTime returns how long bytes take on a link of bitsPerSecond,
// in ns, rounded down.
func TransmissionTime(bytes int, bitsPerSecond int64) int64 {
	return int64(bytes) * 8 * 1e9 / bitsPerSecond
}
