package experiment

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"golang.org/x/sys/unix"
)

// Machine is what a report ran on: the binary, the kernel and the CPU, so
// that two reports' numbers can be told apart by more than their date.
type Machine struct {
	Version  string // ecnswitch's module version, e.g. "v0.3.0" or "(devel)"
	Revision string // the VCS revision it was built from, "" if unknown
	Modified bool   // the build had uncommitted changes
	Kernel   string // the kernel release, as uname -r prints it
	CPU      string // the CPU model and how many, e.g. "2 × AMD EPYC"
}

// String formats the machine for a report's header: "ecnswitch (devel),
// revision 106b487 (modified), Linux 6.18.44, 2 × AMD EPYC".
func (m Machine) String() string {
	if m == (Machine{}) {
		return ""
	}
	var parts []string
	v := "ecnswitch"
	if m.Version != "" {
		v += " " + m.Version
	}
	if m.Revision != "" {
		v += ", revision " + m.Revision
		if m.Modified {
			v += " (modified)"
		}
	}
	parts = append(parts, v)
	if m.Kernel != "" {
		parts = append(parts, "Linux "+m.Kernel)
	}
	if m.CPU != "" {
		parts = append(parts, m.CPU)
	}
	return strings.Join(parts, ", ")
}

// thisMachine describes the machine and binary the experiment runs on;
// what it cannot find out it leaves empty.
func thisMachine() Machine {
	var m Machine
	m.Version, m.Revision, m.Modified = buildVersion()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	m.CPU = cpuModel()
	return m
}

// buildVersion returns the module version and VCS revision (its first 12
// digits) the running binary was built from (runtime/debug.ReadBuildInfo).
func buildVersion() (version, revision string, modified bool) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "", "", false
	}
	version = bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value[:min(len(s.Value), 12)]
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	return version, revision, modified
}

// cpuModel returns the model name /proc/cpuinfo gives and the number of
// CPUs it lists: "2 × AMD EPYC".
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	var model string
	n := 0
	for sc := bufio.NewScanner(bytes.NewReader(b)); sc.Scan(); {
		k, v, ok := strings.Cut(sc.Text(), ":")
		switch k = strings.TrimSpace(k); {
		case !ok:
		case k == "processor":
			n++
		case k == "model name" && model == "":
			model = strings.TrimSpace(v)
		}
	}
	if model == "" {
		return ""
	}
	return fmt.Sprintf("%d × %s", n, model)
}
