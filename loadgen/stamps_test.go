package loadgen

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// fakeClock is a StampClock at a fixed offset from CLOCK_MONOTONIC, as a
// PHC would be: this machine has none, so the hardware path of the clock
// check is tested with these.
type fakeClock struct {
	name          string
	offset, width int64
	err           error
	reads         int
}

func (f *fakeClock) Name() string { return f.name }

func (f *fakeClock) Offset() (int64, int64, error) {
	f.reads++
	return f.offset, f.width, f.err
}

func TestCheckClocks(t *testing.T) {
	const day = int64(24 * time.Hour)
	for _, c := range []struct {
		name   string
		tx, rx *fakeClock
		limit  time.Duration
		ok     bool
		offset int64 // TX − RX
		unc    int64
		reads  int      // offset measurements taken
		whyHas []string // in Why when refused
		whyNot string
	}{
		{name: "one clock", tx: &fakeClock{name: ClockMonotonic}, rx: &fakeClock{name: ClockMonotonic}, ok: true},
		{name: "one PHC on both ports of a NIC", tx: &fakeClock{name: "phc0", offset: 37 * day}, rx: &fakeClock{name: "phc0", offset: 37 * day}, ok: true},
		{name: "two PHCs in step (phc2sys)", tx: &fakeClock{name: "phc0", offset: day + 120, width: 500}, rx: &fakeClock{name: "phc1", offset: day, width: 300},
			ok: true, offset: 120, unc: 400, reads: 2},
		{name: "two PHCs just within a 10us limit", tx: &fakeClock{name: "phc0", offset: day}, rx: &fakeClock{name: "phc1", offset: day + 10_000},
			limit: 10 * time.Microsecond, ok: true, offset: -10_000, reads: 2},
		{name: "two free-running PHCs", tx: &fakeClock{name: "phc0", offset: day + 3_000_000, width: 800}, rx: &fakeClock{name: "phc1", offset: day, width: 800},
			offset: 3_000_000, unc: 800, reads: 2,
			whyHas: []string{"phc0", "phc1", "3ms apart", "±800ns", "1µs limit", "phc2sys -s /dev/ptp0 -c /dev/ptp1", "not reported"}},
		{name: "a PHC and CLOCK_MONOTONIC", tx: &fakeClock{name: ClockMonotonic}, rx: &fakeClock{name: "phc1", offset: 37 * day},
			offset: -37 * day, reads: 2, whyHas: []string{"Nothing synchronises CLOCK_MONOTONIC with a PHC"}},
		{name: "an unreadable PHC", tx: &fakeClock{name: "phc0"}, rx: &fakeClock{name: "phc1", err: errors.New("ENODEV")},
			reads: 2, whyHas: []string{"cannot measure", "ENODEV"}, whyNot: "phc2sys"},
	} {
		got := CheckClocks(c.tx, c.rx, c.limit)
		if got.OK != c.ok || got.Offset != c.offset || got.Uncertainty != c.unc || got.TX != c.tx.name || got.RX != c.rx.name {
			t.Errorf("%s: %+v; want ok %v, offset %d ± %d", c.name, got, c.ok, c.offset, c.unc)
		}
		if reads := c.tx.reads + c.rx.reads; reads != c.reads {
			t.Errorf("%s: %d offset measurements, want %d", c.name, reads, c.reads)
		}
		if got.OK != (got.Why == "") {
			t.Errorf("%s: ok %v with why %q", c.name, got.OK, got.Why)
		}
		for _, w := range c.whyHas {
			if !strings.Contains(got.Why, w) {
				t.Errorf("%s: why %q does not say %q", c.name, got.Why, w)
			}
		}
		if c.whyNot != "" && strings.Contains(got.Why, c.whyNot) {
			t.Errorf("%s: why %q says %q", c.name, got.Why, c.whyNot)
		}
	}
}

// TestLatencyChecked: a refused check drops every figure and says why;
// an accepted one keeps them; both name the clocks, and the text report
// says which it was.
func TestLatencyChecked(t *testing.T) {
	l := Latency{Count: 10, Min: 5000, Mean: 7000, P50: 6000, P99: 9000, Max: 9500}
	ok := CheckClocks(&fakeClock{name: "phc0"}, &fakeClock{name: "phc1", offset: 50}, 0)
	bad := CheckClocks(&fakeClock{name: "phc0"}, &fakeClock{name: "phc1", offset: 5_000_000}, 0)
	if got := l.Checked(ok); got.P50 != 6000 || got.Count != 10 || got.Withheld != "" || got.TxClock != "phc0" || got.RxClock != "phc1" {
		t.Errorf("accepted: %+v", got)
	}
	got := l.Checked(bad)
	if got.Count != 0 || got.P50 != 0 || got.Max != 0 || got.Withheld != bad.Why || got.TxClock != "phc0" {
		t.Errorf("refused: %+v", got)
	}
	var b strings.Builder
	if err := (Report{Latency: got}).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); !strings.Contains(s, "one-way latency not reported: TX stamps on phc0") || !strings.Contains(s, "stamps: TX on phc0, RX on phc1") {
		t.Errorf("text report:\n%s", s)
	}
}
