package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/internal/testenv"
)

func TestDCTCPUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"dctcp"}, exitUsage, "ecnswitch dctcp unload [--force]"},
		{[]string{"dctcp", "-h"}, exitOK, "BPF struct_ops"},
		{[]string{"dctcp", "unload", "-h"}, exitOK, "--force"},
		{[]string{"dctcp", "reload"}, exitUsage, `unknown command "reload"`},
		{[]string{"dctcp", "unload", "--bogus"}, exitUsage, "flag provided but not defined: --bogus"},
		{[]string{"dctcp", "load", "extra"}, exitUsage, "unexpected arguments: extra"},
		{[]string{"testbed", "up", "-n", "1", "--rto-min", "soon"}, exitUsage, `invalid value "soon" for flag --rto-min`},
	} {
		code, out, errs := cli(t, tc.args...)
		if code != tc.code || !strings.Contains(out+errs, tc.want) {
			t.Errorf("%v: exit %d, want %d; output lacks %q:\n%s%s", tc.args, code, tc.code, tc.want, out, errs)
		}
	}
}

// TestTestbedRTOMinOutOfRange: testbed up refuses an RTO_min the kernel
// would refuse, naming the sysctl and its range, before creating anything.
func TestTestbedRTOMinOutOfRange(t *testing.T) {
	testenv.MustBeRoot(t, "testbed up checks its privileges before its options")
	state := filepath.Join(t.TempDir(), "testbed-rtomin.json")
	code, out, errs := cli(t, "testbed", "up", "-n", "1", "--rto-min", "500ns", "--state", state)
	if code != exitFail || !strings.Contains(errs, "RTOMin 500ns: net.ipv4.tcp_rto_min_us takes whole microseconds in [1µs, 2147483647µs]") {
		t.Errorf("exit %d, want %d and the sysctl's range:\n%s%s", code, exitFail, out, errs)
	}
	if matches, _ := filepath.Glob(filepath.Join(filepath.Dir(state), "*")); len(matches) != 0 {
		t.Errorf("a refused testbed up left %v", matches)
	}
}

// TestDCTCPStatus: status says where the kernel's dctcp comes from.
func TestDCTCPStatus(t *testing.T) {
	testenv.MustBeRoot(t, "the pins in bpffs are root's to read")
	code, out, errs := cli(t, "dctcp", "status")
	if code != exitOK || !strings.HasPrefix(out, "dctcp    ") {
		t.Errorf("exit %d, want 0 and a dctcp line:\n%s%s", code, out, errs)
	}
}
