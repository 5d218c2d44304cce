//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"
	"github.com/vishvananda/netlink"

	"github.com/ecnswitch/ecnswitch/capture"
	"github.com/ecnswitch/ecnswitch/config"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/node"
	"github.com/ecnswitch/ecnswitch/telemetry"
	"github.com/ecnswitch/ecnswitch/testbed"
	"github.com/ecnswitch/ecnswitch/testbed/testbedtest"
)

// syncBuffer is a bytes.Buffer safe for the logger and the test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// transfer sends n bytes of TCP from host a to host b through the switch
// and returns how many b received.
func transfer(t *testing.T, ctx context.Context, a, b testbed.Host, port uint16, n int) int {
	t.Helper()
	ln, err := b.ListenTCP(port)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan int, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		defer c.Close()
		k, _ := io.Copy(io.Discard, c)
		got <- int(k)
	}()
	c, err := a.DialTCP(ctx, netip.AddrPortFrom(b.IPv4, port), 0)
	if err != nil {
		t.Fatalf("dial through the switch: %v", err)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write(make([]byte, n)); err != nil {
		t.Fatalf("write through the switch: %v", err)
	}
	c.Close()
	select {
	case k := <-got:
		return k
	case <-ctx.Done():
		t.Fatal("transfer did not finish")
	}
	return 0
}

// TestServeOnTestbed runs the daemon's run path (node.Run) on a two-host testbed:
// kernel TCP crosses the switch, a link that goes down and returns is
// logged and traffic resumes, and stopping detaches every XDP program.
func TestServeOnTestbed(t *testing.T) {
	tb := testbedtest.New(t, 2)
	hosts := tb.Hosts()
	y := strings.Replace(string(testbedConfig(tb.ID(), tb.StatePath(), hosts, nil)), "listen: "+telemetry.DefaultListen, "listen: 127.0.0.1:0", 1)
	capDir := filepath.Join(t.TempDir(), "caps")
	y += "capture:\n  dir: " + capDir + "\n  captures: [{port: h2, path: run/h2.pcap, format: pcap}]\n"
	sock := filepath.Join(t.TempDir(), "ecnswitch.sock")
	y += "control:\n  socket: " + sock + "\n"
	cfg, err := config.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Preflight(cfg); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	log, _ := newLogger("info", &logs)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	type result struct {
		st   *telemetry.StatsResponse
		caps []capture.Status
		err  error
	}
	done := make(chan result, 1)
	go func() {
		fin, err := node.Run(runCtx, cfg, log, nil)
		done <- result{fin.Stats, fin.Captures, err}
	}()
	waitLog := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), want); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the log:\n%s", want, logs.String())
			}
		}
	}
	waitLog("ecnswitch running")

	// The capture API is on the control socket: the configured capture
	// runs, and the CLI starts and stops another.
	if !regexp.MustCompile(`telemetry listening\t\{"addr": "([^"]+)"`).MatchString(logs.String()) {
		t.Fatalf("no telemetry address in the log:\n%s", logs.String())
	}
	if code, out, errs := cli(t, "capture", "status", "--socket", sock); code != exitOK || !strings.Contains(out, "egress all") || !strings.Contains(out, filepath.Join(capDir, "run/h2.pcap")) {
		t.Fatalf("capture status: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := cli(t, "capture", "start", "--port", "h1", "--direction", "ingress", "--path", "h1.pcapng", "--socket", sock); code != exitOK || !strings.Contains(out, "capture 2 started on port h1") {
		t.Fatalf("capture start: exit %d\n%s%s", code, out, errs)
	}

	const n = 2 << 20
	if got := transfer(t, ctx, hosts[0], hosts[1], 5001, n); got != n {
		t.Fatalf("h2 received %d of %d bytes", got, n)
	}

	// Take h2's end down and up again: the switch logs both and carries on.
	setLink := func(up bool) {
		err := hosts[1].Do(func() error {
			l, err := netlink.LinkByName(hosts[1].HostIf)
			if err != nil {
				return err
			}
			if up {
				return netlink.LinkSetUp(l)
			}
			return netlink.LinkSetDown(l)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	setLink(false)
	waitLog(`link down; frames for it are dropped as tx_error until it returns	{"port": "h2"`)
	setLink(true)
	waitLog(`link up; port resumes	{"port": "h2"`)
	if got := transfer(t, ctx, hosts[0], hosts[1], 5002, n); got != n {
		t.Fatalf("after the link returned, h2 received %d of %d bytes", got, n)
	}

	code, out, errs := cli(t, "capture", "stop", "2", "--socket", sock, "--json")
	var h1 capture.Status
	if code != exitOK || json.Unmarshal([]byte(out), &h1) != nil {
		t.Fatalf("capture stop: exit %d\n%s%s", code, out, errs)
	}

	stop()
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	if st := res.st; st == nil || st.Ports[0].RxBytes < 2*n || st.Ports[1].TxBytes < 2*n {
		t.Errorf("final counters do not show the transfers: %+v", res.st)
	}
	// The final counters carry each device's own: what it handed the
	// switch, and what the kernel dropped before (nothing, here).
	for _, p := range res.st.Ports {
		if d := p.Device; d == nil || d.RxPackets != p.RxPackets || d.RxDropped != 0 || d.Violations != 0 {
			t.Errorf("port %s: rx_packets %d, device counters %+v; want the device's rx to match, no kernel drops", p.Name, p.RxPackets, p.Device)
		}
	}
	var rendered strings.Builder
	renderStats(&rendered, res.st, nil)
	if !strings.Contains(rendered.String(), "  device: rx ") {
		t.Errorf("the final counters do not show the devices':\n%s", rendered.String())
	}
	// Every packet port h2 sent is in the configured capture (or counted as
	// skipped); egress also sees frames the device refused while h2's link
	// was down (tx_error drops). h1's ingress capture saw the senders' frames.
	if len(res.caps) != 1 || res.caps[0].ID != 1 || res.caps[0].Running {
		t.Fatalf("final captures: %+v", res.caps)
	}
	h2, tx := res.caps[0], res.st.Ports[1].TxPackets
	t.Logf("h2 egress capture: %d written, %d skipped; h2 sent %d. h1 ingress capture: %d written; h1 received %d",
		h2.Written, h2.SkippedRingFull, tx, h1.Written, res.st.Ports[0].RxPackets)
	if seen := h2.Written + h2.SkippedRingFull; seen < tx || seen > tx+res.st.Ports[1].Drops["tx_error"] {
		t.Errorf("h2 egress capture saw %d packets (%d written), the port sent %d (%d tx_error drops)", seen, h2.Written, tx, res.st.Ports[1].Drops["tx_error"])
	}
	if n, size := countPcap(t, h2.File); n != h2.Written || size != h2.Bytes {
		t.Errorf("%s holds %d packets in %d bytes; the capture counted %d in %d", h2.File, n, size, h2.Written, h2.Bytes)
	}
	if h1.Written == 0 || h1.Written+h1.SkippedRingFull > res.st.Ports[0].RxPackets || h1.File != filepath.Join(capDir, "h1.pcapng") {
		t.Errorf("h1 ingress capture: %+v; port h1 received %d", h1, res.st.Ports[0].RxPackets)
	}
	for _, h := range hosts {
		l, err := netlink.LinkByName(h.SwitchIf)
		if err != nil {
			t.Fatal(err)
		}
		if x := l.Attrs().Xdp; x != nil && x.Attached {
			t.Errorf("%s still has XDP program %d attached after stop", h.SwitchIf, x.ProgId)
		}
	}
	if !strings.Contains(logs.String(), "ports closed, XDP programs detached") {
		t.Errorf("no teardown in the log:\n%s", logs.String())
	}
}

// countPcap reads a pcap file with gopacket's pcapgo and returns its
// packets and its size.
func countPcap(t *testing.T, path string) (packets, size uint64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for {
		_, _, err := r.ReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s after %d packets: %v", path, packets, err)
		}
		packets++
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return packets, uint64(fi.Size())
}

// tasksetEnv carries, to the test binary run again under taskset, the CPU
// it was restricted to.
const tasksetEnv = "ECNSWITCH_TEST_TASKSET_CPU"

// Under `taskset -c N`, node.Preflight accepts cpus: [N] and rejects cpus: [0],
// naming the allowed set. Before issue 12 it compared with the CPU count
// (1 under taskset) and said "CPU N outside [0, 0]".
func TestPreflightUnderTaskset(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("node.Preflight checks for root's capabilities first")
	}
	if cpu := os.Getenv(tasksetEnv); cpu != "" {
		pf := func(cpus string) error {
			cfg, err := config.Parse([]byte("cpus: " + cpus + "\nports: [{name: a, interface: lo}]\n"))
			if err != nil {
				t.Fatal(err)
			}
			return node.Preflight(cfg)
		}
		if err := pf("[" + cpu + "]"); err != nil {
			t.Errorf("under taskset -c %s, cpus: [%s]: %v", cpu, cpu, err)
		}
		if err := pf("[0]"); err == nil || !strings.Contains(err.Error(), "cpus[0]: CPU 0") || !strings.Contains(err.Error(), "may run on ("+cpu+":") {
			t.Errorf("under taskset -c %s, cpus: [0]: %v; want the key and the allowed CPU", cpu, err)
		}
		return
	}
	allowed, err := dataplane.AllowedCPUs()
	if err != nil || len(allowed) < 2 {
		t.Skipf("needs two CPUs to leave one out (have %v, %v)", allowed, err)
	}
	last := strconv.Itoa(allowed[len(allowed)-1])
	cmd := exec.Command("taskset", "-c", last, os.Args[0], "-test.run=^TestPreflightUnderTaskset$", "-test.v")
	cmd.Env = append(os.Environ(), tasksetEnv+"="+last)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestPreflightUnderTaskset") {
		t.Fatalf("under taskset -c %s: %v\n%s", last, err, out)
	}
}
