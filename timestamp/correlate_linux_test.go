package timestamp

import (
	"testing"
	"time"
)

func TestBestOffset(t *testing.T) {
	bs := []Bracket{
		{Before: 100, Foreign: 5200, After: 300},   // offset 5000, width 200
		{Before: 1000, Foreign: 6030, After: 1040}, // offset 5010, width 40: the narrowest
		{Before: 2000, Foreign: 7000, After: 1990}, // went backwards: ignored
	}
	off, w, ok := BestOffset(bs)
	if !ok || off != 5010 || w != 40 {
		t.Fatalf("BestOffset = %d, %d, %v; want 5010, 40, true", off, w, ok)
	}
	if _, _, ok := BestOffset(nil); ok {
		t.Fatal("BestOffset(nil) found an offset")
	}
}

// Correlate with scripted clocks: the foreign clock is local + 1 ms, and
// the second try has the narrowest bracket.
func TestCorrelate(t *testing.T) {
	local := []int64{0, 500, 1000, 1100, 2000, 2300}
	i := 0
	lc := func() int64 { v := local[i]; i++; return v }
	fc := func() int64 { return local[i-1] + 1_000_000 + 20 } // read just after the Before
	off, w := Correlate(lc, fc, 3)
	if w != 100 || off != 1_000_000+20-50 {
		t.Fatalf("Correlate = %d, %d; want %d, 100", off, w, 1_000_000+20-50)
	}
}

// The switch's clock and the kernel's: a CLOCK_MONOTONIC reading taken
// between two Monotonic readings lands between them once Origin is taken
// off, and so does a CLOCK_TAI reading put on CLOCK_MONOTONIC by OffsetTo.
func TestOriginAndTAI(t *testing.T) {
	m := NewMonotonic()
	taiOff, w, err := OffsetTo(clockTAI)
	if err != nil {
		t.Fatal(err)
	}
	if w <= 0 || w > int64(time.Millisecond) {
		t.Fatalf("TAI bracket %d ns wide", w)
	}
	const slack = 20_000 // ns: both offsets are half-bracket exact; allow for a preempted read
	for range 5 {
		a := m.Now()
		mono, err := ReadClock(clockMonotonic)
		if err != nil {
			t.Fatal(err)
		}
		tai, err := ReadClock(clockTAI)
		if err != nil {
			t.Fatal(err)
		}
		b := m.Now()
		if got := mono - m.Origin(); got < a-slack || got > b+slack {
			t.Errorf("CLOCK_MONOTONIC − Origin = %d, outside [%d, %d]", got, a, b)
		}
		if got := tai - taiOff - m.Origin(); got < a-slack || got > b+slack {
			t.Errorf("CLOCK_TAI on the switch clock = %d, outside [%d, %d]", got, a, b)
		}
	}
}

func TestOpenPHCErrors(t *testing.T) {
	if _, err := OpenPHC(-1); err == nil {
		t.Fatal("OpenPHC(-1) succeeded")
	}
	if _, err := OpenPHC(4095); err == nil {
		t.Fatal("OpenPHC of a missing /dev/ptp4095 succeeded")
	}
}
