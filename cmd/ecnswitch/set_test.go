package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// set and get check their words before they reach for the switch: a
// usage error exits 2 and says what is wanted; a switch that is not
// there exits 1 and says which socket was tried.
func TestSetGetUsage(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"set"}, exitUsage, "want port P [queue Q] KEY=VALUE…"},
		{[]string{"set", "port", "h2"}, exitUsage, "nothing to set; give KEY=VALUE"},
		{[]string{"set", "port", "h2", "k"}, exitUsage, `"k": want KEY=VALUE`},
		{[]string{"set", "port", "h2", "queue", "x", "weight=2"}, exitUsage, `queue "x": want a queue number`},
		{[]string{"set", "port", "h2", "queue"}, exitUsage, "queue: want a queue number"},
		{[]string{"set", "port", "h2", "k=1KB", "k=2KB"}, exitUsage, "k given twice"},
		{[]string{"set", "port", "h2", "k=60KB", "--socket", sock}, exitFail, "control socket " + sock},
		{[]string{"get", "port"}, exitUsage, `want [port P], not "port"`},
		{[]string{"get", "a", "b", "c"}, exitUsage, "unexpected arguments: c"},
		{[]string{"get", "--socket", sock}, exitFail, "is ecnswitch run going"},
	} {
		code, out, errs := cli(t, tc.args...)
		if code != tc.code || !strings.Contains(out+errs, tc.want) {
			t.Errorf("%v: exit %d, want %d; output lacks %q:\n%s%s", tc.args, code, tc.code, tc.want, out, errs)
		}
	}
}

// parseSetArgs turns the words into the request the switch gets.
func TestParseSetArgs(t *testing.T) {
	req, err := parseSetArgs([]string{"port", "h2", "queue", "3", "weight=4", "alpha=0.5"})
	if err != nil || req.Port != "h2" || req.Queue == nil || *req.Queue != 3 || strings.Join(req.Set, " ") != "weight=4 alpha=0.5" {
		t.Errorf("%+v %v", req, err)
	}
	req, err = parseSetArgs([]string{"port", "0", "markers.enqueue=[{scheme: red, k: 60KB}]"})
	if err != nil || req.Port != "0" || req.Queue != nil || len(req.Set) != 1 {
		t.Errorf("%+v %v", req, err)
	}
}
