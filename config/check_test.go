package config

import (
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/dataplane"
)

// never_sleep is the name of what busy_poll meant (spin, never sleep);
// busy_poll stays for one release, with a warning.
func TestNeverSleepAndItsOldName(t *testing.T) {
	const port = "\nports: [{name: p1}]"
	c := mustParse(t, "never_sleep: true"+port)
	if c.Switch.Spin != -1 || len(c.Warnings) != 0 {
		t.Errorf("never_sleep: spin %d, warnings %q; want -1 and none", c.Switch.Spin, c.Warnings)
	}
	c = mustParse(t, "busy_poll: true"+port)
	if c.Switch.Spin != -1 || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "never_sleep") || !strings.Contains(c.Warnings[0], "SO_BUSY_POLL") {
		t.Errorf("busy_poll: spin %d, warnings %q; want -1 and one naming never_sleep", c.Switch.Spin, c.Warnings)
	}
	if c := mustParse(t, "never_sleep: false"+port); c.Switch.Spin != dataplane.DefaultSpin {
		t.Errorf("never_sleep: false: spin %d, want the default %d", c.Switch.Spin, dataplane.DefaultSpin)
	}
	for _, tc := range []struct{ yaml, key, msg string }{
		{"spin: 10\nnever_sleep: true" + port, "spin", "never_sleep: true"},
		{"never_sleep: true\nbusy_poll: true" + port, "busy_poll", "remove busy_poll"},
	} {
		_, err := Parse([]byte(tc.yaml))
		if got := errorKeys(err); got != tc.key || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%q: errors at %q: %v; want one at %s with %q", tc.yaml, got, err, tc.key, tc.msg)
		}
	}
}
