package loadgen

import (
	"strings"
	"testing"
)

// TestParseMixWeights checks the bounds of a mix's weights: 1 to
// MaxWeight, each entry once.
func TestParseMixWeights(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // "" for accepted
	}{
		{"64:1,1518:65536", ""},
		{"64:7,594:4,1518:1", ""},
		{"64:65537", "want an integer in [1, 65536]"},
		{"64:9223372036854775807,65:1", "want an integer in [1, 65536]"},
		{"64:0", "want an integer in [1, 65536]"},
		{"64:-1", "want an integer in [1, 65536]"},
		{"64,64", "listed twice"},
	} {
		_, err := ParseSizes(c.in)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("ParseSizes(%q): %v, want %q", c.in, err, c.want)
		}
	}
}
