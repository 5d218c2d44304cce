package testenv

import (
	"strings"
	"testing"
)

// recorder is a testing.TB that records Skip and Fatal instead of stopping
// the goroutine.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()           {}
func (r *recorder) Skip(args ...any)  { r.skipped = args[0].(string) }
func (r *recorder) Fatal(args ...any) { r.failed = args[0].(string) }

func TestRequire(t *testing.T) {
	for _, c := range []struct {
		name         string
		ok, ci       bool
		skip, failed bool
	}{
		{"present", true, false, false, false},
		{"present on CI", true, true, false, false},
		{"missing", false, false, true, false},
		{"missing on CI", false, true, false, true},
	} {
		r := &recorder{TB: t}
		require(r, c.ok, c.ci, "needs root: namespaces")
		if (r.skipped != "") != c.skip || (r.failed != "") != c.failed {
			t.Errorf("%s: skipped %q, failed %q; want skip %v, fail %v", c.name, r.skipped, r.failed, c.skip, c.failed)
		}
		if msg := r.skipped + r.failed; (c.skip || c.failed) && !strings.Contains(msg, "needs root: namespaces") {
			t.Errorf("%s: %q does not give the reason", c.name, msg)
		}
	}
}

func TestOnCI(t *testing.T) {
	t.Setenv("CI", "true")
	if !OnCI() {
		t.Error("CI=true: OnCI() = false")
	}
	t.Setenv("CI", "")
	if OnCI() {
		t.Error("CI empty: OnCI() = true")
	}
}
