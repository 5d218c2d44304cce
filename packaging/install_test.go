// Package packaging holds what `make install` puts on a machine besides
// the binary — the systemd unit and the installed config — and the test
// of the install itself.
package packaging

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/config"
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

// make install stages the binary, the two-port config, the unit, the man
// page and the completions; the binary says which revision it was built
// from; a second install keeps the config the operator edited; uninstall
// removes all but the config.
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
	if rev, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		out, err := exec.Command(bin, "version").CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("\nrevision  "+strings.TrimSpace(string(rev)))) {
			t.Errorf("ecnswitch version does not name revision %s: %v\n%s", bytes.TrimSpace(rev), err, out)
		}
	}
	conf := filepath.Join(dest, "etc/ecnswitch/ecnswitch.yaml")
	minimal, _ := os.ReadFile("ecnswitch.yaml")
	if got, err := os.ReadFile(conf); err != nil || !bytes.Equal(got, minimal) {
		t.Fatalf("config %s: %v; want packaging/ecnswitch.yaml", conf, err)
	}
	man := filepath.Join(dest, "usr/local/share/man/man1/ecnswitch.1")
	page, _ := os.ReadFile("../docs/ecnswitch.1")
	if got, err := os.ReadFile(man); err != nil || !bytes.Equal(got, page) {
		t.Errorf("man page %s: %v; want docs/ecnswitch.1", man, err)
	}
	bash := filepath.Join(dest, "usr/local/share/bash-completion/completions/ecnswitch")
	zsh := filepath.Join(dest, "usr/local/share/zsh/site-functions/_ecnswitch")
	for path, shell := range map[string]string{bash: "bash", zsh: "zsh"} {
		want, _ := exec.Command(bin, "completion", shell).Output()
		if got, err := os.ReadFile(path); err != nil || len(want) == 0 || !bytes.Equal(got, want) {
			t.Errorf("%s completion %s: %v; want ecnswitch completion %s", shell, path, err, shell)
		}
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
	for _, gone := range []string{bin, filepath.Join(dest, "etc/systemd/system/ecnswitch.service"), man, bash, zsh} {
		if _, err := os.Stat(gone); err == nil {
			t.Errorf("uninstall left %s", gone)
		}
	}
	if _, err := os.Stat(conf); err != nil {
		t.Errorf("uninstall removed the config: %v", err)
	}
}

// The installed config is two ports and nothing else, and it validates:
// no static forwarding, shaping, marking, delay or capture. The reference
// of every key stays examples/ecnswitch.yaml.
func TestMinimalConfig(t *testing.T) {
	c, err := config.Load("ecnswitch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) > 0 {
		t.Errorf("warnings: %v", c.Warnings)
	}
	if len(c.Ports) != 2 || c.Ports[0].Interface == c.Ports[1].Interface {
		t.Fatalf("ports %+v: want two, on two interfaces", c.Ports)
	}
	fw := c.Switch.Forwarding
	if fw.NoLearning || len(fw.Patches)+len(fw.MACs)+len(fw.Prefixes) > 0 {
		t.Errorf("forwarding %+v: want learning and no static rule", fw)
	}
	for i, p := range c.Switch.Ports {
		if p.Shaper.Rate != 0 || len(c.Ports[i].Markers) > 0 || p.Delay.Fixed != 0 || p.Delay.Jitter != 0 || len(p.Delay.PerQueue) > 0 {
			t.Errorf("port %s: rate %d, markers %v, delay %+v; want none", p.Name, p.Shaper.Rate, c.Ports[i].Markers, p.Delay)
		}
	}
	if len(c.Capture.Captures) > 0 {
		t.Errorf("captures at start: %v", c.Capture.Captures)
	}
	// Its interfaces are placeholders no machine has, so that a service
	// started before they are set takes over no NIC.
	for _, p := range c.Ports {
		if !strings.HasPrefix(p.Interface, "CHANGEME") {
			t.Errorf("port %s on %q: want a CHANGEME placeholder", p.Name, p.Interface)
		}
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
