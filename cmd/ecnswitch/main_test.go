package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/config"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/telemetry"
	"github.com/ecnswitch/ecnswitch/testbed"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// cli runs ecnswitch in-process and returns its exit code and output.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = ecnswitch(&env{stdout: &out, stderr: &errb}, args)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestValidateExample(t *testing.T) {
	code, out, errs := cli(t, "validate", "-c", "../../examples/ecnswitch.yaml")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	for _, want := range []string{"ecnswitch.yaml: ok", "pools      shared 2MB", "http://127.0.0.1:9090",
		"p3  ens1f2  995Mbit", "enqueue: mqecn rtt=100us lambda=1", "dequeue: tcn threshold=150us", "delay: queue 1 70µs + U[0, 10µs)",
		"capture    dir /var/lib/ecnswitch/captures, 1 at start (ecnswitch capture start|stop|status on /run/ecnswitch/ecnswitch.sock)\n             p3 egress marked, pcapng, snaplen 256, rotate at 100MB, keep 10 → p3-egress-marked.pcapng\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

func TestValidateBad(t *testing.T) {
	p := writeFile(t, "bad.yaml", "ports:\n  - name: p1\n  - name: p2\n    rate: 5Tbit\n    markers: {enqueue: [{scheme: tcn}]}\n")
	code, out, errs := cli(t, "validate", "-c", p)
	if code != exitFail || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	for _, want := range []string{"bad.yaml", `ports[1].rate: "5Tbit" outside [1Mbit, 400Gbit]`, "(line 4)",
		`ports[1].markers.enqueue[0].scheme: "tcn" decides on the sojourn time`} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if code, _, errs := cli(t, "validate", "-c", filepath.Join(t.TempDir(), "missing.yaml")); code != exitFail || !strings.Contains(errs, "no such file") {
		t.Errorf("missing file: exit %d, %s", code, errs)
	}
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, exitUsage, "usage: ecnswitch COMMAND"},
		{[]string{"help"}, exitOK, "testbed"},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"validate"}, exitUsage, "-c FILE is required"},
		{[]string{"validate", "-c", "x", "extra"}, exitUsage, "unexpected arguments: extra"},
		{[]string{"validate", "--bogus"}, exitUsage, "flag provided but not defined: --bogus"},
		{[]string{"validate", "-h"}, exitOK, "Check a config"},
		{[]string{"run"}, exitUsage, "-c FILE is required"},
		{[]string{"stats", "--interval", "1ms"}, exitUsage, "below 10ms"},
		{[]string{"testbed"}, exitUsage, "ecnswitch testbed up -n N"},
		{[]string{"testbed", "up"}, exitUsage, "-n N (at least 1 host) is required"},
		{[]string{"testbed", "up", "-n", "2", "--state", "/tmp/x.json"}, exitUsage, "want DIR/testbed-ID.json"},
		{[]string{"demo", "--bogus"}, exitUsage, "flag provided but not defined: --bogus"}, // a bare demo runs the whole experiment as root
		{[]string{"experiment"}, exitUsage, "experiment list' lists them"},
		{[]string{"experiment", "list"}, exitOK, "mqecn-static"},
		{[]string{"experiment", "frobnicate"}, exitUsage, `experiment "frobnicate": want one of mqecn-static`},
		{[]string{"experiment", "mqecn-static", "--bogus"}, exitUsage, "flag provided but not defined: --bogus"},
		{[]string{"experiment", "mqecn-static", "mqecn-queues"}, exitUsage, "2 names, mqecn-static, mqecn-queues: run one at a time"},
		{[]string{"experiment", "--short", "mqecn-static", "--bogus"}, exitUsage, "flag provided but not defined: --bogus"},
		{[]string{"experiment", "--duration", "-1s", "mqecn-static"}, exitUsage, "--duration -1s: want a positive time"},
	} {
		code, out, errs := cli(t, tc.args...)
		if code != tc.code || !strings.Contains(out+errs, tc.want) {
			t.Errorf("%v: exit %d, want %d; output lacks %q:\n%s%s", tc.args, code, tc.code, tc.want, out, errs)
		}
	}
}

func TestRunFailsClearly(t *testing.T) {
	p := writeFile(t, "c.yaml", "ports: [{name: p1, interface: ecnswnosuch0}]\n")
	code, _, errs := cli(t, "run", "-c", p, "--log-level", "error")
	if code != exitFail {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// As root the interface is missing; otherwise privileges are.
	if !strings.Contains(errs, `ports[0].interface: "ecnswnosuch0" (port p1): no such interface`) && !strings.Contains(errs, "CAP_NET_ADMIN") {
		t.Errorf("stderr: %s", errs)
	}
	if code, _, errs := cli(t, "run", "-c", p, "--log-level", "loud"); code != exitUsage || !strings.Contains(errs, `--log-level: "loud"`) {
		t.Errorf("bad log level: exit %d, %s", code, errs)
	}
	bad := writeFile(t, "bad.yaml", "workers: 0\nports: [{name: p1}]\n")
	if code, _, errs := cli(t, "run", "-c", bad); code != exitFail || !strings.Contains(errs, "workers: 0 outside [1, 64]") {
		t.Errorf("bad config: exit %d, %s", code, errs)
	}
}

// statsServer is a telemetry server over a two-port switch on memory ports
// that has forwarded frames received on a to b.
func statsServer(t *testing.T) *httptest.Server {
	t.Helper()
	c, err := config.Parse([]byte("pools: [{name: shared, size: 1MB}]\nforwarding: {patches: [{from: a, to: b}]}\nports: [{name: a, queues: 2}, {name: b, queues: 2}]"))
	if err != nil {
		t.Fatal(err)
	}
	dc, _ := c.Dataplane()
	clk := timestamp.NewVirtual(0)
	var hosts []*memport.Port
	devs := make([]ports.Port, 2)
	for i, p := range dc.Ports {
		sw, host, err := memport.Pair(p.Name, "host", clk, memport.Link{})
		if err != nil {
			t.Fatal(err)
		}
		devs[i], hosts = sw, append(hosts, host)
	}
	sw, err := dataplane.New(dc, devs, clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sw.Close() })
	f := packettest.UDP4(t, packettest.Options{DSCP: 8, Size: 1000})
	ds := make([]*packet.Desc, 10)
	for i := range ds {
		ds[i] = &packet.Desc{Buf: append([]byte(nil), f...), Len: len(f)}
	}
	hosts[0].Transmit(ds)
	clk.Advance(time.Microsecond)
	sw.Poll()
	srv, err := telemetry.New(sw, telemetry.Options{Clock: clk, Samples: 16, PoolNames: c.Pools})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}

func TestStatsJSON(t *testing.T) {
	ts := statsServer(t)
	code, out, errs := cli(t, "stats", "--addr", strings.TrimPrefix(ts.URL, "http://"), "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var st telemetry.StatsResponse
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if len(st.Ports) != 2 || st.Ports[0].RxPackets != 10 || st.Ports[1].TxPackets != 10 || st.Ports[1].Queues[1].Enqueued != 10 || st.PoolNames[0] != "shared" {
		t.Errorf("snapshot: %+v", st)
	}
}

func TestStatsTable(t *testing.T) {
	ts := statsServer(t)
	code, out, errs := cli(t, "stats", "--addr", ts.URL, "--count", "2", "--interval", "10ms")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if n := strings.Count(out, "PORT  RX pkts"); n != 2 {
		t.Errorf("%d frames drawn, want 2:\n%s", n, out)
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("screen cleared on a non-terminal")
	}
	// Port a received 10 frames, port b's queue 1 (DSCP 8 → class 1) sent them.
	for _, want := range []string{"\n     a       10", "\n     b        0", "shared", "1MB"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == "b" && i+3 < len(lines) {
			if f := strings.Fields(lines[i+3]); len(f) < 2 || f[0] != "1" || f[1] != "10" {
				t.Errorf("port b queue 1 row = %q, want 10 enqueued", lines[i+3])
			}
		}
	}
}

func TestStatsUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	code, _, errs := cli(t, "stats", "--addr", addr, "--json")
	if code != exitFail || !strings.Contains(errs, "is ecnswitch run going") {
		t.Errorf("exit %d: %s", code, errs)
	}
}

// The config testbed up writes must validate and drive the hosts' switch
// ends.
func TestTestbedConfig(t *testing.T) {
	hosts := []testbed.Host{{Index: 1, Name: "h1", SwitchIf: "ecnswab12s1", Netns: "ecnsw-ab12-h1"}, {Index: 2, Name: "h2", SwitchIf: "ecnswab12s2"}}
	b := testbedConfig("ab12", "/run/ecnswitch/testbed-ab12.json", hosts, []int{1, 3})
	c, err := config.Parse(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if !slices.Equal(c.Switch.CPUs, []int{1, 3}) {
		t.Errorf("cpus = %v, want the placement's workers [1 3]", c.Switch.CPUs)
	}
	if c, err := config.Parse(testbedConfig("ab12", "/run/ecnswitch/testbed-ab12.json", hosts, nil)); err != nil || len(c.Switch.CPUs) != 0 {
		t.Errorf("no placement: cpus = %v, %v; want none", c.Switch.CPUs, err)
	}
	if len(c.Ports) != 2 || c.Ports[1].Interface != "ecnswab12s2" || c.Ports[0].Name != "h1" || c.Switch.Ports[0].Shaper.Rate != 995e6 {
		t.Errorf("ports: %+v", c.Ports)
	}
	if err := buildOnMemoryPorts(c); err != nil {
		t.Error(err)
	}
	dir, id, err := splitState("/tmp/tb/testbed-ab12.json")
	if err != nil || dir != "/tmp/tb" || id != "ab12" || configPath("/tmp/tb/testbed-ab12.json") != "/tmp/tb/testbed-ab12.yaml" {
		t.Errorf("splitState: %q %q %v", dir, id, err)
	}
}

func TestLogger(t *testing.T) {
	var b bytes.Buffer
	log, err := newLogger("warn", &b)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hidden")
	log.Warn("shown")
	log.Sync()
	if s := b.String(); strings.Contains(s, "hidden") || !strings.Contains(s, "WARN\tshown") {
		t.Errorf("log output %q", s)
	}
	if _, err := newLogger("fatal", &b); err == nil {
		t.Error("fatal accepted as a log level")
	}
	if logLevel("", "") != "info" || logLevel("debug", "warn") != "debug" || logLevel("", "warn") != "warn" {
		t.Error("logLevel precedence")
	}
}

// buildOnMemoryPorts builds the switch c describes on memory ports, so
// that dataplane.New's own checks run too.
func buildOnMemoryPorts(c *config.Config) error {
	dc, err := c.Dataplane()
	if err != nil {
		return err
	}
	clk := timestamp.NewVirtual(0)
	devs := make([]ports.Port, len(dc.Ports))
	for i, p := range dc.Ports {
		if devs[i], _, err = memport.Pair(p.Name, "host", clk, memport.Link{}); err != nil {
			return err
		}
	}
	sw, err := dataplane.New(dc, devs, clk, nil)
	if err != nil {
		return err
	}
	return sw.Close()
}

func TestCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	stop, err := startCPUProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b { // pprof's gzipped protobuf
		t.Fatalf("profile %s is %d bytes, not a gzipped pprof profile", path, len(b))
	}
	if _, err := startCPUProfile(filepath.Join(t.TempDir(), "missing", "cpu.pprof")); err == nil || !strings.Contains(err.Error(), "cpuprofile") {
		t.Fatalf("profile into a missing directory: err = %v, want one naming cpuprofile", err)
	}
}

// TestExperimentListAligns checks that every experiment's summary and
// paper start in one column, past the longest name.
func TestExperimentListAligns(t *testing.T) {
	code, out, _ := cli(t, "experiment", "list")
	if code != exitOK {
		t.Fatalf("experiment list: exit %d", code)
	}
	col := -1
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		name, rest, _ := strings.Cut(line, " ")
		at := len(line) - len(strings.TrimLeft(rest, " "))
		if i%2 == 1 && name != "" {
			t.Errorf("line %d %q: want the paper under the summary", i+1, line)
		}
		if col == -1 {
			col = at
		}
		if at != col || at <= len(name) {
			t.Errorf("line %d %q: text starts at column %d, want %d", i+1, line, at, col)
		}
	}
}
