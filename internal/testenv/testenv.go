// Package testenv decides what a test does when the machine lacks
// something it needs — root, a command: on a developer's machine it skips
// with the reason; on CI (the environment variable CI=true, which .ci/run
// sets) it fails, because CI runs as root with everything scripts/deps.sh
// installs, so a skip there would hide a test that quietly did nothing.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// OnCI reports whether the tests run on CI: CI=true in the environment.
func OnCI() bool { return os.Getenv("CI") == "true" }

// MustBeRoot stops tb unless the test runs as root: a skip naming why it
// needs root, or a failure on CI.
func MustBeRoot(tb testing.TB, why string) {
	tb.Helper()
	require(tb, os.Geteuid() == 0, OnCI(), "needs root: "+why)
}

// MustHaveCommand returns the path of the command name, or stops tb: a
// skip naming the Debian package that provides it, or a failure on CI.
func MustHaveCommand(tb testing.TB, name, debianPackage string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	require(tb, err == nil, OnCI(), name+" is not on PATH (scripts/deps.sh installs it: apt-get install "+debianPackage+")")
	return path
}

// require lets the test go on when ok, and otherwise skips it, or fails
// it on CI, with the reason.
func require(tb testing.TB, ok, ci bool, reason string) {
	tb.Helper()
	switch {
	case ok:
	case ci:
		tb.Fatal(reason + "; on CI (CI=true) a test that cannot run is a failure, not a skip")
	default:
		tb.Skip(reason)
	}
}
