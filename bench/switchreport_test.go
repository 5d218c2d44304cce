package bench

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/internal/buildinfo"
)

// The switch benchmark's report.md and results.json record the build and
// the machine that measured.
func TestSwitchReportRecordsBuild(t *testing.T) {
	r := &SwitchReport{Build: buildinfo.Info{Version: "v1.2.0", Revision: "2f1147e0", GoVersion: "go1.26.0", Kernel: "6.18.4", CPU: "AMD EPYC", Arch: "amd64"}}
	if md := r.Markdown("ecnswitch bench switch"); !strings.Contains(md, "ecnswitch v1.2.0 (2f1147e0) built with go1.26.0 on Linux 6.18.4, AMD EPYC (amd64).") {
		t.Errorf("report.md lacks the build:\n%s", md)
	}
	b, err := json.Marshal(r)
	if err != nil || !strings.Contains(string(b), `"build":{"version":"v1.2.0","revision":"2f1147e0"`) {
		t.Errorf("results.json lacks the build: %v %s", err, b)
	}
}
