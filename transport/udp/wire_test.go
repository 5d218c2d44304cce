package udp

import (
	"errors"
	"testing"

	"github.com/ecnswitch/ecnswitch/timestamp"
)

func TestHeaderRoundTrip(t *testing.T) {
	for _, h := range []Header{
		{Type: TypeData, Flow: 7, Seq: 1<<40 + 3, DX: timestamp.Option{Stamp: 0xdeadbeef}},
		{Type: TypeAck, Flags: FlagCE, Flow: 1, Seq: 9, Cum: 10, DX: timestamp.Option{Stamp: 1234, Hold: 5678, Count: 1, Flags: timestamp.FlagACK}},
		{Type: TypePull, Flow: 2, Seq: 17},
		{Type: TypeNack, Flow: 3, Seq: 4, Cum: 20},
	} {
		b := make([]byte, HeaderLen+10)
		h.Put(b)
		got, err := Parse(b)
		if err != nil || got != h {
			t.Errorf("Parse(Put(%+v)) = %+v, %v", h, got, err)
		}
	}
}

func TestParseRejects(t *testing.T) {
	good := make([]byte, HeaderLen)
	(&Header{Type: TypeData}).Put(good)
	mod := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return b
	}
	for _, c := range []struct {
		name string
		b    []byte
		want error
	}{
		{"short", good[:HeaderLen-1], ErrShort},
		{"version", mod(func(b []byte) { b[0] = 2<<4 | 1 }), ErrVersion},
		{"type", mod(func(b []byte) { b[0] = 1<<4 | 5 }), ErrType},
		{"type 0", mod(func(b []byte) { b[0] = 1 << 4 }), ErrType},
		{"option kind", mod(func(b []byte) { b[22] = 1 }), timestamp.ErrOptionKind},
		{"option length", mod(func(b []byte) { b[23] = 12 }), timestamp.ErrOptionLength},
	} {
		if _, err := Parse(c.b); !errors.Is(err, c.want) {
			t.Errorf("%s: Parse = %v, want %v", c.name, err, c.want)
		}
	}
}

func TestControlRoundTrip(t *testing.T) {
	for _, rx := range []RX{
		{},
		{TOS: 0xb9, HasTOS: true},
		{Stamp: 1_700_000_000_123_456_789, HasStamp: true},
		{TOS: CE, HasTOS: true, Stamp: 42, HasStamp: true},
		{TOS: ECT0, HasTOS: true, Stamp: 43, HasStamp: true, Segment: 1472},
	} {
		got, err := ParseControl(appendControl(nil, rx))
		if err != nil || got != rx {
			t.Errorf("ParseControl(appendControl(%+v)) = %+v, %v", rx, got, err)
		}
	}
	b := appendControl(nil, RX{TOS: CE, HasTOS: true})
	if _, err := ParseControl(b[:len(b)-1]); err != nil {
		t.Errorf("a control buffer cut inside the last message's padding: %v", err)
	}
	if _, err := ParseControl(b[:10]); !errors.Is(err, ErrControl) {
		t.Errorf("a truncated header: %v, want ErrControl", err)
	}
}

func FuzzParse(f *testing.F) {
	b := make([]byte, HeaderLen)
	(&Header{Type: TypeAck, Flags: FlagCE, Flow: 3, Seq: 5, Cum: 6, DX: timestamp.Option{Stamp: 1, Hold: 2, Count: 1, Flags: timestamp.FlagACK}}).Put(b)
	f.Add(b)
	f.Add(b[:HeaderLen-1])
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := Parse(b)
		if err != nil {
			return
		}
		out := make([]byte, HeaderLen)
		h.Put(out)
		if again, err := Parse(out); err != nil || again != h {
			t.Fatalf("%+v re-encoded parses as %+v, %v", h, again, err)
		}
	})
}

func FuzzParseControl(f *testing.F) {
	f.Add(appendControl(nil, RX{TOS: CE, HasTOS: true, Stamp: 99, HasStamp: true}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		rx, err := ParseControl(b)
		if err != nil {
			return
		}
		// What parsed encodes and parses back to the same.
		if again, err := ParseControl(appendControl(nil, rx)); err != nil || again != rx {
			t.Fatalf("%+v re-encoded parses as %+v, %v", rx, again, err)
		}
	})
}
