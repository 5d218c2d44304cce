// Package packaging holds what `make install` puts on a machine besides
// the binary — the systemd unit — and the test of the install itself.
package packaging

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/internal/testenv"
)

// install runs make install into dest and fails t on error.
func install(t *testing.T, dest string, target string) {
	t.Helper()
	cmd := exec.Command("make", "-C", "..", target, "DESTDIR="+dest)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make %s: %v\n%s", target, err, out)
	}
}

// make install stages the binary, the example config and the unit; a
// second install keeps the config the operator edited; uninstall removes
// all but the config.
func TestMakeInstall(t *testing.T) {
	testenv.MustHaveCommand(t, "make", "make")
	dest := t.TempDir()
	install(t, dest, "install")
	bin := filepath.Join(dest, "usr/local/bin/ecnswitch")
	if fi, err := os.Stat(bin); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("binary: %v %v", fi, err)
	}
	if out, err := exec.Command(bin, "help").CombinedOutput(); err != nil || !strings.Contains(string(out), "usage: ecnswitch") {
		t.Fatalf("installed binary: %v\n%s", err, out)
	}
	conf := filepath.Join(dest, "etc/ecnswitch/ecnswitch.yaml")
	example, _ := os.ReadFile("../examples/ecnswitch.yaml")
	if got, err := os.ReadFile(conf); err != nil || !bytes.Equal(got, example) {
		t.Fatalf("config %s: %v; want examples/ecnswitch.yaml", conf, err)
	}
	unit, err := os.ReadFile(filepath.Join(dest, "etc/systemd/system/ecnswitch.service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\nExecStart=/usr/local/bin/ecnswitch run -c /etc/ecnswitch/ecnswitch.yaml\n",
		"\nRestart=on-failure\n",
		"\nRuntimeDirectory=ecnswitch\n",
		"\nCapabilityBoundingSet=CAP_NET_ADMIN CAP_NET_RAW CAP_BPF CAP_IPC_LOCK\n",
		"\nNoNewPrivileges=yes\n",
	} {
		if !bytes.Contains(unit, []byte(want)) {
			t.Errorf("unit lacks %q", strings.TrimSpace(want))
		}
	}
	if bytes.Contains(unit, []byte("@")) {
		t.Errorf("unit has an unfilled @PLACEHOLDER@:\n%s", unit)
	}

	if err := os.WriteFile(conf, []byte("# mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	install(t, dest, "install")
	if got, _ := os.ReadFile(conf); string(got) != "# mine\n" {
		t.Errorf("a second install replaced the operator's config")
	}
	install(t, dest, "uninstall")
	for _, gone := range []string{bin, filepath.Join(dest, "etc/systemd/system/ecnswitch.service")} {
		if _, err := os.Stat(gone); err == nil {
			t.Errorf("uninstall left %s", gone)
		}
	}
	if _, err := os.Stat(conf); err != nil {
		t.Errorf("uninstall removed the config: %v", err)
	}
}

// The unit is one systemd accepts: systemd-analyze verify finds nothing
// to say about it.
func TestUnitVerifies(t *testing.T) {
	analyze := testenv.MustHaveCommand(t, "systemd-analyze", "systemd")
	dir := t.TempDir()
	unit, err := os.ReadFile("ecnswitch.service")
	if err != nil {
		t.Fatal(err)
	}
	// verify checks that ExecStart exists: point it at a stand-in.
	exe := filepath.Join(dir, "ecnswitch")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	unit = bytes.ReplaceAll(unit, []byte("@BINDIR@"), []byte(dir))
	unit = bytes.ReplaceAll(unit, []byte("@CONFDIR@"), []byte("/etc/ecnswitch"))
	path := filepath.Join(dir, "ecnswitch.service")
	if err := os.WriteFile(path, unit, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
