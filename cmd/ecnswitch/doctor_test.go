package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/ecnswitch/ecnswitch/doctor"
	"github.com/ecnswitch/ecnswitch/ports/afxdp"
)

// On this machine: doctor runs, exits 0 where the switch can run, and
// names what the machine lacks, as the machine's own files say it:
// MISSING phc without a /dev/ptp*, and dctcp when the kernel's congestion
// controls lack it (issue 23: "names the missing PHC and DCTCP").
func TestDoctorHere(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("doctor's probes are Linux's")
	}
	code, out, errs := cli(t, "doctor", "--iface", "lo")
	if code != exitOK {
		t.Fatalf("doctor: exit %d\n%s%s", code, out, errs)
	}
	line := func(status, name string) bool {
		return regexp.MustCompile(`(?m)^` + status + `\s+` + regexp.QuoteMeta(name) + `\s`).MatchString(out)
	}
	if ptps, _ := filepath.Glob("/dev/ptp[0-9]*"); len(ptps) == 0 && !line("MISSING", "phc") {
		t.Errorf("no /dev/ptp* here, and no MISSING phc line:\n%s", out)
	} else if len(ptps) > 0 && !line("OK", "phc") {
		t.Errorf("%v here, and no OK phc line:\n%s", ptps, out)
	}
	avail, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if err != nil {
		t.Fatal(err)
	}
	has := slices.Contains(strings.Fields(string(avail)), "dctcp")
	if !has && !line("MISSING", "dctcp") && !line("WARN", "dctcp") {
		t.Errorf("no dctcp in %q, and doctor does not say so:\n%s", avail, out)
	} else if has && !line("OK", "dctcp") {
		t.Errorf("dctcp in %q, and no OK dctcp line:\n%s", avail, out)
	}
	for _, name := range []string{"kernel", "af_xdp", "xdp", "live-frames", "btf", "rx-metadata", "tx-metadata", "struct_ops", "isolated-cpus", "lo native-xdp", "lo napi"} {
		if !line("(OK|WARN|MISSING)", name) {
			t.Errorf("no %s line:\n%s", name, out)
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(l, "WARN") || strings.HasPrefix(l, "MISSING") {
			if !strings.Contains(l, "; fix: ") {
				t.Errorf("a finding without a fix: %s", l)
			}
		}
	}
	if !strings.Contains(out, "\nthe switch can run here") {
		t.Errorf("no verdict:\n%s", out)
	}

	code, out, _ = cli(t, "doctor", "--iface", "lo", "--json")
	var rep struct {
		Build  struct{ Kernel string }
		CanRun bool `json:"can_run"`
		Checks []doctor.Check
	}
	if err := json.Unmarshal([]byte(out), &rep); code != exitOK || err != nil || !rep.CanRun || len(rep.Checks) < 12 || rep.Build.Kernel == "" {
		t.Errorf("doctor --json: exit %d, %v, %+v\n%s", code, err, rep, out)
	}
}

// A host without AF_XDP cannot run the switch: doctor says so and exits 1.
func TestDoctorCannotRun(t *testing.T) {
	nope := func() error { return fmt.Errorf("socket(AF_XDP): %w", afxdp.ErrNotSupported) }
	h := doctor.Host{FS: fstest.MapFS{}, Kernel: "6.18.4", Privileged: true, Sockets: nope, XDP: func() error { return nil }}
	var out bytes.Buffer
	code := runDoctor(&env{stdout: &out, stderr: &out}, h, []string{}, false)
	if code != exitFail || !regexp.MustCompile(`(?m)^MISSING\s+af_xdp\s+no AF_XDP sockets: socket\(AF_XDP\): not supported; fix: a kernel built with CONFIG_XDP_SOCKETS=y`).MatchString(out.String()) ||
		!strings.Contains(out.String(), "the switch cannot run here: af_xdp missing") {
		t.Errorf("exit %d\n%s", code, out.String())
	}
}
