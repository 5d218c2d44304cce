// Package buildinfo says which build of ecnswitch runs on which machine:
// the module version and VCS revision the Go toolchain stamped into the
// binary (runtime/debug.ReadBuildInfo), the Go version, the kernel release
// (uname) and the CPU model (/proc/cpuinfo). Every report, JSON output and
// pcapng section header records it, so that a number can be traced to the
// code and the machine that produced it.
package buildinfo

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// Info is a build and the machine it runs on. The zero value of a field
// means unknown.
type Info struct {
	// Version is the main module's version: a tag such as v1.2.0, a
	// pseudo-version, or "(devel)" for a build from a work tree.
	Version string `json:"version"`
	// Revision is the VCS revision the binary was built from (vcs.revision),
	// Time its commit time (vcs.time), and Modified whether the work tree
	// had uncommitted changes (vcs.modified). Empty, zero and false for a
	// binary built without VCS stamping (go test, go build -buildvcs=false).
	Revision string    `json:"revision,omitempty"`
	Time     time.Time `json:"time,omitzero"`
	Modified bool      `json:"modified,omitempty"`
	// GoVersion is the toolchain that built the binary, e.g. go1.26.0.
	GoVersion string `json:"go_version"`
	// Kernel is the running kernel's release (uname -r), CPU the model of
	// the machine's first CPU, CPUs how many CPUs the machine has (as
	// /proc/cpuinfo lists them, whatever this process may use), Arch
	// GOARCH.
	Kernel string `json:"kernel,omitempty"`
	CPU    string `json:"cpu,omitempty"`
	CPUs   int    `json:"cpus,omitempty"`
	Arch   string `json:"arch"`
}

// What make build passes with -ldflags -X, for a binary the toolchain
// stamped no VCS information into: built from a git worktree (whose .git
// is a file, which the go command does not take for a repository), or
// with -buildvcs=false. FromBuildInfo prefers the toolchain's stamps.
var (
	linkRevision string // git rev-parse HEAD
	linkTime     string // git log -1 --format=%cI
	linkModified string // "true" if git status --porcelain printed anything
)

// Read returns the running binary's build and this machine's kernel and
// CPU model.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	i := FromBuildInfo(bi)
	i.Kernel = KernelRelease()
	i.CPU, i.CPUs = CPUModel()
	return i
}

// FromBuildInfo returns the build fields of Info from bi (nil: unknown
// but for the Go version and architecture, which are this binary's).
func FromBuildInfo(bi *debug.BuildInfo) Info {
	i := Info{GoVersion: runtime.Version(), Arch: runtime.GOARCH}
	if linkRevision != "" {
		i.Revision = linkRevision
		i.Time, _ = time.Parse(time.RFC3339, linkTime)
		i.Modified = linkModified == "true"
	}
	if bi == nil {
		return i
	}
	i.Version = bi.Main.Version
	if bi.GoVersion != "" {
		i.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Revision = s.Value
		case "vcs.time":
			i.Time, _ = time.Parse(time.RFC3339, s.Value)
		case "vcs.modified":
			i.Modified, _ = strconv.ParseBool(s.Value)
		case "GOARCH":
			i.Arch = s.Value
		}
	}
	return i
}

// Short returns the build in a few words: "v1.2.0 (2f1147e, modified)",
// "(devel) (2f1147e)", or the version alone without a revision.
func (i Info) Short() string {
	v := i.Version
	if v == "" {
		v = "unknown version"
	}
	if i.Revision == "" {
		return v
	}
	rev := i.Revision
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if i.Modified {
		rev += ", modified"
	}
	return v + " (" + rev + ")"
}

// Machine returns the kernel and CPU in a few words: "Linux 6.18.4, 2 ×
// AMD EPYC (amd64)".
func (i Info) Machine() string {
	k := "Linux " + i.Kernel
	if i.Kernel == "" {
		k = "unknown kernel"
	}
	c := i.CPU
	if c == "" {
		c = "unknown CPU"
	}
	if i.CPUs > 0 {
		c = fmt.Sprintf("%d × %s", i.CPUs, c)
	}
	return fmt.Sprintf("%s, %s (%s)", k, c, i.Arch)
}

// String returns the build and the machine on one line, as report headers
// print them: "ecnswitch v1.2.0 (2f1147e) built with go1.26.0 on Linux
// 6.18.4, 2 × AMD EPYC (amd64)".
func (i Info) String() string {
	return "ecnswitch " + i.Short() + " built with " + i.GoVersion + " on " + i.Machine()
}

// KernelRelease returns the running kernel's release, as uname -r prints
// it, or "" where there is none to read.
func KernelRelease() string {
	return kernelRelease()
}

// CPUModel returns the model of this machine's first CPU and the number
// of CPUs from /proc/cpuinfo, or "" and 0 where it says none.
func CPUModel() (model string, n int) {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "", 0
	}
	defer f.Close()
	return ParseCPUInfo(f)
}

// ParseCPUInfo returns the CPU model /proc/cpuinfo's text in r names and
// the number of CPUs it lists (its "processor" lines). The model is
// "model name" on x86, else "Model", "cpu model", "cpu" (POWER) or
// "Hardware" (older Arm), whichever comes first in that order.
func ParseCPUInfo(r io.Reader) (model string, n int) {
	keys := []string{"model name", "Model", "cpu model", "cpu", "Hardware"}
	found := make(map[string]string)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if k == "processor" {
			n++
		}
		if _, seen := found[k]; !seen && v != "" {
			found[k] = v
		}
	}
	for _, k := range keys {
		if v, ok := found[k]; ok {
			return v, n
		}
	}
	return "", n
}
