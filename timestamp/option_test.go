package timestamp

import (
	"bytes"
	"errors"
	"testing"
)

func TestOptionBytes(t *testing.T) {
	o := Option{Stamp: 0x01020304, Hold: 0x0a0b0c0d, Count: 3, Flags: FlagACK | FlagRaw}
	want := []byte{253, 14, 1, 2, 3, 4, 0x0a, 0x0b, 0x0c, 0x0d, 0, 3, 0, 3}
	got := o.Append(nil)
	if !bytes.Equal(got, want) {
		t.Fatalf("Append = % x, want % x", got, want)
	}
	back, err := ParseOption(got)
	if err != nil || back != o {
		t.Fatalf("ParseOption = %+v, %v; want %+v", back, err, o)
	}
}

func TestParseOptionErrors(t *testing.T) {
	for _, c := range []struct {
		b    []byte
		want error
	}{
		{nil, ErrOptionShort},
		{[]byte{253}, ErrOptionShort},
		{[]byte{8, 10}, ErrOptionKind},
		{[]byte{253, 10, 0, 0, 0, 0, 0, 0, 0, 0}, ErrOptionLength},
		{[]byte{253, 14, 0, 0, 0}, ErrOptionShort},
	} {
		if _, err := ParseOption(c.b); !errors.Is(err, c.want) {
			t.Errorf("ParseOption(% x) = %v, want %v", c.b, err, c.want)
		}
	}
}

func TestFindOption(t *testing.T) {
	dx := Option{Stamp: 77, Hold: 5, Count: 1, Flags: FlagACK}.Append(nil)
	mss := []byte{2, 4, 0x05, 0xb4}
	ts := []byte{8, 10, 0, 0, 0, 1, 0, 0, 0, 2}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, c := range []struct {
		name    string
		opts    []byte
		found   bool
		wantErr error
	}{
		{"after MSS, NOPs and timestamps", cat(mss, []byte{1, 1}, ts, dx), true, nil},
		{"first", cat(dx, []byte{0, 0}), true, nil},
		{"after end of list", cat(mss, []byte{0}, dx), false, nil},
		{"absent", cat(mss, []byte{1, 1}, ts), false, nil},
		{"empty", nil, false, nil},
		{"length past the end", cat(mss, []byte{8, 10, 0}), false, ErrTCPOptions},
		{"length below 2", []byte{8, 1, 0, 0}, false, ErrTCPOptions},
		{"no length byte", []byte{1, 8}, false, ErrTCPOptions},
		{"dx with a wrong length", []byte{253, 6, 0, 0, 0, 0}, false, ErrOptionLength},
	} {
		o, ok, err := FindOption(c.opts)
		if ok != c.found || !errors.Is(err, c.wantErr) || (c.wantErr == nil) != (err == nil) {
			t.Errorf("%s: found %v, err %v; want %v, %v", c.name, ok, err, c.found, c.wantErr)
			continue
		}
		if ok && (o.Stamp != 77 || o.Hold != 5 || o.Count != 1 || o.Flags != FlagACK) {
			t.Errorf("%s: %+v", c.name, o)
		}
	}
}

func TestUnwrap(t *testing.T) {
	for _, c := range []struct {
		near int64
		v    uint32
		want int64
	}{
		{100, 150, 150},
		{100, uint32(0xffffffff) - 49, -50}, // −50 mod 2³²
		{1<<32 - 10, 5, 1<<32 + 5},          // across the wrap
		{5<<32 + 7, 3, 5<<32 + 3},           // a 32-bit stamp read back near a 64-bit one
		{-4_000_000_000, uint32(0x100000000 - 4_000_000_000 + 1000), -4_000_000_000 + 1000},
	} {
		if got := Unwrap(c.near, c.v); got != c.want {
			t.Errorf("Unwrap(%d, %#x) = %d, want %d", c.near, c.v, got, c.want)
		}
	}
}

// Delays of one ACK's packets straddle the 32-bit wrap: the mean of
// −16 and +16 ns (mod 2³²) is 0, not 2³¹.
func TestOWDMean(t *testing.T) {
	var m OWDMean
	if m.Mean() != 0 || m.Count() != 0 {
		t.Fatal("empty mean is not 0")
	}
	m.Add(0xfffffff0)
	m.Add(0x10)
	if m.Mean() != 0 || m.Count() != 2 {
		t.Fatalf("mean %#x of 2, want 0", m.Mean())
	}
	m.Reset()
	for _, d := range []uint32{1000, 1200, 1400} {
		m.Add(d)
	}
	if m.Mean() != 1200 {
		t.Fatalf("mean %d, want 1200", m.Mean())
	}
}

// Queueing through the codec: the receiver averages two packets' OWDs
// into the ACK, the sender unwraps the mean near its base and feeds the
// estimator. The clocks are 3 s apart, so the OWD itself wraps 32 bits.
func TestOptionCarriesQueueing(t *testing.T) {
	const offset = -3_000_000_000 // the receiver's clock is 3 s behind
	var base Delay
	// An idle packet: 10 µs path, RTT 20 µs.
	base.Observe(10_000+offset, 20_000)
	var m OWDMean
	for _, q := range []int64{4000, 6000} { // two packets behind 4 and 6 µs of queue
		t1 := int64(1_000_000_000)
		t2 := t1 + 10_000 + q + offset
		m.Add(uint32(t2 - t1))
	}
	wire := Option{Stamp: m.Mean(), Hold: 0, Count: uint16(m.Count()), Flags: FlagACK}.Append(nil)
	o, ok, err := FindOption(wire)
	if !ok || err != nil {
		t.Fatalf("FindOption: %v %v", ok, err)
	}
	b, _ := base.Base()
	owd := Unwrap(b, o.Stamp)
	if q := base.Observe(owd, 25_000); q != 5000 || o.Count != 2 {
		t.Fatalf("queueing %d over %d samples, want 5000 over 2", q, o.Count)
	}
}
