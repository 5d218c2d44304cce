package buildinfo

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "github.com/ecnswitch/ecnswitch", Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "GOARCH", Value: "arm64"},
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "2f1147e0123456789abcdef0123456789abcdef0"},
			{Key: "vcs.time", Value: "2026-11-27T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	i := FromBuildInfo(bi)
	want := Info{Version: "(devel)", Revision: "2f1147e0123456789abcdef0123456789abcdef0",
		Time: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC), Modified: true, GoVersion: "go1.26.0", Arch: "arm64"}
	if i != want {
		t.Fatalf("FromBuildInfo = %+v\nwant %+v", i, want)
	}
	if got := i.Short(); got != "(devel) (2f1147e01234, modified)" {
		t.Errorf("Short = %q", got)
	}
	i.Kernel, i.CPU = "6.18.4", "AMD EPYC"
	if got := i.String(); got != "ecnswitch (devel) (2f1147e01234, modified) built with go1.26.0 on Linux 6.18.4, AMD EPYC (arm64)" {
		t.Errorf("String = %q", got)
	}
	i.CPUs = 2
	if got := i.String(); got != "ecnswitch (devel) (2f1147e01234, modified) built with go1.26.0 on Linux 6.18.4, 2 × AMD EPYC (arm64)" {
		t.Errorf("String = %q", got)
	}
	b, err := json.Marshal(i)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"revision":"2f1147e0123456789abcdef0123456789abcdef0"`) || !strings.Contains(string(b), `"kernel":"6.18.4"`) {
		t.Errorf("JSON %s", b)
	}

	// Without VCS stamping (go test, -buildvcs=false): version only.
	bare := FromBuildInfo(&debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"}})
	if bare.Short() != "v1.2.0" || bare.GoVersion != runtime.Version() || bare.Arch != runtime.GOARCH {
		t.Errorf("bare build: %+v, Short %q", bare, bare.Short())
	}
	b, _ = json.Marshal(bare)
	if strings.Contains(string(b), "revision") || strings.Contains(string(b), `"time"`) {
		t.Errorf("unknown fields in JSON: %s", b)
	}
	if FromBuildInfo(nil).Machine() != "unknown kernel, unknown CPU ("+runtime.GOARCH+")" {
		t.Errorf("Machine of nothing = %q", FromBuildInfo(nil).Machine())
	}
}

func TestParseCPUInfo(t *testing.T) {
	for _, c := range []struct {
		name, text, want string
		n                int
	}{
		{"x86", "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel\t\t: 17\nmodel name\t: AMD EPYC\n\nprocessor\t: 1\nmodel name\t: AMD EPYC\n", "AMD EPYC", 2},
		{"arm64 with Model", "processor\t: 0\nBogoMIPS\t: 108.00\nCPU part\t: 0xd0c\n\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n", "Raspberry Pi 4 Model B Rev 1.4", 1},
		{"power", "processor\t: 0\ncpu\t\t: POWER9 (raw), altivec supported\n", "POWER9 (raw), altivec supported", 1},
		{"none", "processor\t: 0\nBogoMIPS\t: 50.00\n", "", 1},
		{"empty value", "model name\t:\nHardware\t: BCM2835\n", "BCM2835", 0},
	} {
		if got, n := ParseCPUInfo(strings.NewReader(c.text)); got != c.want || n != c.n {
			t.Errorf("%s: %q and %d CPUs, want %q and %d", c.name, got, n, c.want, c.n)
		}
	}
}

// On this machine: the running kernel's release and a CPU model.
func TestRead(t *testing.T) {
	i := Read()
	if runtime.GOOS == "linux" && (i.Kernel == "" || !strings.Contains(i.Kernel, ".")) {
		t.Errorf("kernel release %q", i.Kernel)
	}
	if runtime.GOOS == "linux" && i.CPUs < 1 {
		t.Errorf("%d CPUs", i.CPUs)
	}
	if i.GoVersion == "" || i.Arch == "" {
		t.Errorf("%+v", i)
	}
}

// A binary the go command stamped nothing into (a git worktree,
// -buildvcs=false) takes the revision make build passed with -X; the go
// command's stamps win where there are both.
func TestLinkRevision(t *testing.T) {
	defer func(r, tm, m string) { linkRevision, linkTime, linkModified = r, tm, m }(linkRevision, linkTime, linkModified)
	linkRevision, linkTime, linkModified = "a573daf0", "2026-11-28T08:16:28Z", "true"
	i := FromBuildInfo(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}})
	if i.Revision != "a573daf0" || !i.Modified || i.Time != time.Date(2026, 11, 28, 8, 16, 28, 0, time.UTC) {
		t.Errorf("from -X: %+v", i)
	}
	i = FromBuildInfo(&debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "2f1147e0"}, {Key: "vcs.modified", Value: "false"}}})
	if i.Revision != "2f1147e0" || i.Modified {
		t.Errorf("the go command's stamps and -X: %+v", i)
	}
}
