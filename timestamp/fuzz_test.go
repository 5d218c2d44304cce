package timestamp

import (
	"bytes"
	"testing"
)

// FuzzFindOption: any bytes as a TCP header's options. FindOption never
// panics; what it finds is exactly 14 bytes of the input at a kind-253
// option, and re-encodes to them.
func FuzzFindOption(f *testing.F) {
	f.Add(Option{Stamp: 1, Hold: 2, Count: 3, Flags: FlagACK}.Append([]byte{2, 4, 5, 0xb4, 1, 1}))
	f.Add([]byte{1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2})
	f.Add([]byte{253, 6, 0, 0, 0, 0})
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, opts []byte) {
		o, ok, err := FindOption(opts)
		if ok && err != nil {
			t.Fatalf("found an option and an error: %v", err)
		}
		if !ok {
			return
		}
		enc := o.Append(nil)
		if !bytes.Contains(opts, enc) {
			t.Fatalf("found %+v, whose bytes % x are not in % x", o, enc, opts)
		}
		back, err := ParseOption(enc)
		if err != nil || back != o {
			t.Fatalf("round trip: %+v, %v; want %+v", back, err, o)
		}
	})
}
