//go:build soak

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/telemetry"
	"github.com/ecnswitch/ecnswitch/testbed"
	"github.com/ecnswitch/ecnswitch/testbed/testbedtest"
)

// The soak test is `make soak` (build tag soak, never in make test).
var soakDuration = flag.Duration("soak.duration", 10*time.Minute, "how long the soak test drives the switch")

// TestSoak runs `ecnswitch run` on a three-host testbed for
// -soak.duration and drives it with everything at once: valid UDP
// between all hosts, malformed frames, a flood of frames from random
// source MACs to unknown destinations, frames larger than the usable
// frame (the MTUs raised past it once the switch runs), a host link
// flapping every 20 s, captures started and stopped over the control
// socket, and invalid calls to both APIs every second. At the end: the
// process never died; every frame a host end put on its link is counted
// by the switch (received) or by the kernel (dropped before the switch),
// every frame the switch received is sent, dropped with a reason or held,
// every frame it sent reached a host or is in its device's TX errors; the
// UMEM frames are all where they belong; RSS stayed flat; and after
// SIGTERM nothing is attached.
func TestSoak(t *testing.T) {
	bin := os.Getenv("ECNSWITCH_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "ecnswitch")
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
	}
	tb := testbedtest.New(t, 3, func(o *testbed.Options) { o.NoHostGRO = true })
	hosts := tb.Hosts()
	dir := t.TempDir()
	sock := filepath.Join(dir, "ecnswitch.sock")
	y := strings.Replace(string(testbedConfig(tb.ID(), tb.StatePath(), hosts, nil)), "listen: "+telemetry.DefaultListen, "listen: 127.0.0.1:0", 1)
	y += "forwarding:\n  flood_rate: 2000   # below the flood generator's 4000 frames/s\n"
	y += "capture:\n  dir: " + filepath.Join(dir, "captures") + "\ncontrol:\n  socket: " + sock + "\n"
	cfgPath := filepath.Join(dir, "soak.yaml")
	if err := os.WriteFile(cfgPath, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}

	var logs syncBuffer
	var stdout bytes.Buffer
	cmd := exec.Command(bin, "run", "-c", cfgPath)
	cmd.Stdout, cmd.Stderr = &stdout, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	alive := true
	t.Cleanup(func() {
		if alive {
			cmd.Process.Kill()
			<-exited
		}
	})
	var addr string
	for deadline := time.Now().Add(20 * time.Second); addr == ""; time.Sleep(50 * time.Millisecond) {
		if m := regexp.MustCompile(`telemetry listening\t\{"addr": "([^"]+)"`).FindStringSubmatch(logs.String()); m != nil && strings.Contains(logs.String(), "ecnswitch running") {
			addr = m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("the switch did not start:\n%s", logs.String())
		}
	}
	pid := cmd.Process.Pid
	t.Logf("ecnswitch run (pid %d) on %s, %s, %s; soaking for %v", pid, hosts[0].SwitchIf, hosts[1].SwitchIf, hosts[2].SwitchIf, *soakDuration)

	web := &http.Client{Timeout: 5 * time.Second}
	control := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	stats := func() telemetry.StatsResponse {
		t.Helper()
		res, err := web.Get("http://" + addr + "/stats")
		if err != nil {
			t.Fatalf("GET /stats: %v", err)
		}
		defer res.Body.Close()
		var st telemetry.StatsResponse
		if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
			t.Fatalf("GET /stats: %v", err)
		}
		return st
	}
	links := func() []netlink.LinkStatistics {
		ls := make([]netlink.LinkStatistics, len(hosts))
		for i, h := range hosts {
			ls[i] = hostStats(t, h)
		}
		return ls
	}
	st0, ls0 := stats(), links()

	// Generators, each on its own AF_PACKET socket in its host's namespace.
	ctx, stopTraffic := context.WithCancel(context.Background())
	defer stopTraffic()
	var wg sync.WaitGroup
	var sent [4]atomic.Uint64 // valid, malformed, flooded, oversize
	gen := func(kind int, h testbed.Host, frame func(i int) []byte) {
		fd, ifindex := rawSocket(t, h)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer unix.Close(fd)
			to := &unix.SockaddrLinklayer{Ifindex: ifindex}
			for i := 0; ctx.Err() == nil; i++ {
				for range 4 {
					if unix.Sendto(fd, frame(i), 0, to) == nil {
						sent[kind].Add(1)
					}
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	for i, h := range hosts {
		dst := hosts[(i+1)%len(hosts)]
		f := packettest.UDP4(t, packettest.Options{SrcMAC: packet.MAC(h.MAC), DstMAC: packet.MAC(dst.MAC),
			Src: h.IPv4, Dst: dst.IPv4, SrcPort: 9000, DstPort: 9, Size: 500})
		gen(0, h, func(int) []byte { return f })
	}
	bad := append(append(append([]byte(nil), hosts[1].MAC...), hosts[0].MAC...), 0x08, 0x00, 0x45, 0, 0, 99) // IPv4 header cut short
	gen(1, hosts[0], func(int) []byte { return bad })
	flood := make([][]byte, 256)
	for i := range flood {
		var src, dst packet.MAC
		rand.Read(src[:])
		rand.Read(dst[:])
		src[0], dst[0] = 0x02, 0x06 // locally administered unicast, never a host's
		flood[i] = packettest.UDP4(t, packettest.Options{SrcMAC: src, DstMAC: dst, SrcPort: uint16(i), Size: 200})
	}
	gen(2, hosts[1], func(i int) []byte { return flood[i%len(flood)] })
	// Oversize: 2500-byte frames from h3, once both ends of its link carry them.
	for _, set := range []func() error{
		func() error {
			l, err := netlink.LinkByName(hosts[2].SwitchIf)
			return then(err, func() error { return netlink.LinkSetMTU(l, 3000) })
		},
		func() error {
			return hosts[2].Do(func() error {
				l, err := netlink.LinkByName(hosts[2].HostIf)
				return then(err, func() error { return netlink.LinkSetMTU(l, 3000) })
			})
		},
	} {
		if err := set(); err != nil {
			t.Fatalf("raise h3's MTU: %v", err)
		}
	}
	big := packettest.UDP4(t, packettest.Options{SrcMAC: packet.MAC(hosts[2].MAC), DstMAC: packet.MAC(hosts[0].MAC),
		Src: hosts[2].IPv4, Dst: hosts[0].IPv4, Size: 2500})
	gen(3, hosts[2], func(int) []byte { return big })

	// The rest of the weather, once a second, until the time is up.
	var rss []int64
	var apiBad []string
	flaps, captures, invalid := 0, 0, 0
	start := time.Now()
	capID := 0
	for tick := 1; time.Since(start) < *soakDuration; tick++ {
		select {
		case err := <-exited:
			alive = false
			t.Fatalf("ecnswitch exited during the soak after %v: %v\n%s", time.Since(start), err, logs.String())
		case <-time.After(time.Second):
		}
		if tick%10 == 0 {
			rss = append(rss, vmRSS(t, pid))
		}
		if tick%20 == 0 { // a host link down for 300 ms
			h := hosts[flaps%len(hosts)]
			setHostLink(t, h, false)
			time.Sleep(300 * time.Millisecond)
			setHostLink(t, h, true)
			flaps++
		}
		switch tick % 15 {
		case 0:
			body := fmt.Sprintf(`{"port": "h%d", "path": "soak-%d.pcapng", "format": "pcapng"}`, 1+captures%3, captures)
			res, err := control.Post("http://localhost/capture/start", "application/json", strings.NewReader(body))
			if err != nil || res.StatusCode != http.StatusOK {
				apiBad = append(apiBad, fmt.Sprintf("capture start: %v %v", err, status(res)))
				break
			}
			var s struct{ ID int }
			json.NewDecoder(res.Body).Decode(&s)
			res.Body.Close()
			capID = s.ID
		case 5:
			if capID == 0 {
				break
			}
			res, err := control.Post("http://localhost/capture/stop?id="+strconv.Itoa(capID), "application/json", nil)
			if err != nil || res.StatusCode != http.StatusOK {
				apiBad = append(apiBad, fmt.Sprintf("capture stop %d: %v %v", capID, err, status(res)))
			} else {
				res.Body.Close()
				captures++
			}
			capID = 0
		}
		// Invalid calls: each must get a 4xx, never a 5xx or a dead server.
		for _, c := range []struct {
			client      *http.Client
			method, url string
			ctype, body string
			host        string
			any         bool // any answer but a 5xx: the request is odd, not wrong
		}{
			{web, "POST", "http://" + addr + "/stats", "application/json", "{}", "", false},
			{web, "GET", "http://" + addr + "/queues?port=nope", "", "", "", false},
			{web, "GET", "http://" + addr + "/queues?port=" + strings.Repeat("h1,", 2000), "", "", "", true}, // duplicates are dropped
			{web, "GET", "http://" + addr + "/stats", "", "", "evil.example", false},
			{web, "POST", "http://" + addr + "/capture/start", "application/json", `{"port": "h1", "path": "x"}`, "", false},
			{control, "POST", "http://localhost/capture/start", "text/plain", `{"port": "h1", "path": "x"}`, "", false},
			{control, "POST", "http://localhost/capture/start", "application/json", `{"port": "nope", "path": "x"}`, "", false},
			{control, "POST", "http://localhost/capture/start", "application/json", `{"port": "h1", "path": "../../etc/x"}`, "", false},
			{control, "POST", "http://localhost/capture/start", "application/json", `{"port": "h1", "bogus": 1}`, "", false},
			{control, "POST", "http://localhost/capture/start", "application/json", strings.Repeat("[", 100000), "", false},
			{control, "POST", "http://localhost/capture/stop?id=abc", "application/json", "", "", false},
			{control, "POST", "http://localhost/capture/stop?id=999999", "application/json", "", "", false},
		} {
			req, _ := http.NewRequest(c.method, c.url, strings.NewReader(c.body))
			if c.ctype != "" {
				req.Header.Set("Content-Type", c.ctype)
			}
			if c.host != "" {
				req.Host = c.host
			}
			res, err := c.client.Do(req)
			invalid++
			if err != nil {
				apiBad = append(apiBad, fmt.Sprintf("%s %.60s: %v", c.method, c.url, err))
				continue
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode >= 500 || res.StatusCode < 400 && !c.any {
				apiBad = append(apiBad, fmt.Sprintf("%s %.60s: %d, want 4xx", c.method, c.url, res.StatusCode))
			}
		}
	}
	stopTraffic()
	wg.Wait()

	// Let the switch drain, then read everything.
	last, stable := stats(), 0
	for deadline := time.Now().Add(20 * time.Second); stable < 10 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		st := stats()
		if sumRx(st) == sumRx(last) && sumTx(st) == sumTx(last) && held(st) == 0 {
			stable++
		} else {
			stable = 0
		}
		last = st
	}
	st1, ls1 := stats(), links()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		alive = false
		if err != nil {
			t.Errorf("ecnswitch run after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("ecnswitch run did not exit within 30 s of SIGTERM")
	}

	// Ingress: what the host ends transmitted = received + dropped by the kernel.
	var offered, hostDrops, received, kernel, switchTx, hostRx, devTxErr, generated uint64
	for i := range hosts {
		p0, p1 := st0.Ports[i], st1.Ports[i]
		offered += ls1[i].TxPackets - ls0[i].TxPackets
		hostDrops += ls1[i].TxDropped - ls0[i].TxDropped
		received += p1.RxPackets - p0.RxPackets
		kernel += (p1.Device.RxDropped + p1.Device.RxOversize) - (p0.Device.RxDropped + p0.Device.RxOversize)
		switchTx += p1.TxPackets - p0.TxPackets
		hostRx += ls1[i].RxPackets - ls0[i].RxPackets
		devTxErr += p1.Device.TxErrors - p0.Device.TxErrors
	}
	for i := range sent {
		generated += sent[i].Load()
	}
	var drops, flooded, rx, tx uint64
	reasons := map[string]uint64{}
	for _, p := range st1.Ports {
		rx, tx, flooded = rx+p.RxPackets, tx+p.TxPackets, flooded+p.Flooded
		for r, n := range p.Drops {
			drops += n
			reasons[r] += n
		}
	}
	t.Logf("generators sent %d frames (valid %d, malformed %d, flooded %d, oversize %d)",
		generated, sent[0].Load(), sent[1].Load(), sent[2].Load(), sent[3].Load())
	t.Logf("host ends transmitted %d (the hosts' own frames: %d), their links dropped %d", offered, int64(offered+hostDrops)-int64(generated), hostDrops)
	t.Logf("switch received %d, the kernel dropped %d before it (socket, XDP program): %d + %d = %d", received, kernel, received, kernel, received+kernel)
	t.Logf("switch: rx %d + flooded copies %d = tx %d + drops %d %v + held %d", rx, flooded, tx, drops, reasons, held(st1))
	t.Logf("switch sent %d: hosts received %d, the switch ports' devices dropped %d", switchTx, hostRx, devTxErr)
	t.Logf("%d link flaps, %d captures started and stopped, %d invalid API calls", flaps, captures, invalid)
	t.Logf("RSS every 10 s (KiB): %v", rss)
	if received+kernel != offered {
		t.Errorf("the host ends transmitted %d frames; the switch and the kernel account for %d", offered, received+kernel)
	}
	if generated > offered+hostDrops || offered+hostDrops-generated > generated/1000+100 {
		t.Errorf("the generators sent %d frames, the host ends transmitted or dropped %d", generated, offered+hostDrops)
	}
	if rx+flooded != tx+drops+held(st1) || held(st1) != 0 {
		t.Errorf("switch balance: rx %d + flooded %d != tx %d + drops %d + held %d", rx, flooded, tx, drops, held(st1))
	}
	if switchTx != hostRx+devTxErr {
		t.Errorf("the switch sent %d frames; the hosts received %d and its devices dropped %d", switchTx, hostRx, devTxErr)
	}
	for _, r := range []string{"malformed", "storm"} {
		if reasons[r] == 0 {
			t.Errorf("no %s drops: the soak did not exercise them", r)
		}
	}
	if p := st1.Ports[2].Device; p.RxOversize-st0.Ports[2].Device.RxOversize == 0 {
		t.Errorf("no oversize drops on h3's port: the soak did not exercise them")
	}
	if len(apiBad) > 0 {
		t.Errorf("%d API calls went wrong, first: %s", len(apiBad), strings.Join(apiBad[:min(5, len(apiBad))], "; "))
	}
	if captures == 0 || flaps == 0 {
		t.Errorf("%d captures, %d flaps: the soak was too short to exercise them", captures, flaps)
	}
	// RSS flat: from a quarter of the way in (warmed up) to the end, less
	// than 10% + 4 MiB of growth.
	if len(rss) >= 4 {
		base, end := rss[len(rss)/4], rss[len(rss)-1]
		if end > base+base/10+4096 {
			t.Errorf("RSS grew from %d KiB to %d KiB over the soak", base, end)
		}
	}
	// UMEM frames, as the switch reported them once its workers stopped.
	frames := regexp.MustCompile(`UMEM frames at stop\t(\{[^\n]*\})`).FindAllStringSubmatch(logs.String(), -1)
	if len(frames) != len(hosts) {
		t.Errorf("%d UMEM frame reports in the log, want %d", len(frames), len(hosts))
	}
	for _, m := range frames {
		var a struct {
			Port                                         string
			Total, Free, Fill, Rx, Tx, Completion, InKer int
			Violations                                   uint64
		}
		json.Unmarshal([]byte(strings.ReplaceAll(m[1], "in_kernel", "InKer")), &a)
		t.Logf("UMEM frames of %s at stop: %s", a.Port, m[1])
		if a.Total == 0 || a.Free+a.Fill+a.Rx+a.Tx+a.Completion != a.Total || a.InKer != 0 || a.Violations != 0 {
			t.Errorf("port %s: UMEM frames %s: want all %d accounted for, none in the kernel, no violations", a.Port, m[1], a.Total)
		}
	}
	for _, h := range hosts {
		l, err := netlink.LinkByName(h.SwitchIf)
		if err != nil {
			t.Fatal(err)
		}
		if x := l.Attrs().Xdp; x != nil && x.Attached {
			t.Errorf("%s still has XDP program %d attached after SIGTERM", h.SwitchIf, x.ProgId)
		}
	}
	if !strings.Contains(stdout.String(), "final counters:") {
		t.Errorf("no final counters on stdout:\n%s", stdout.String())
	}
	if t.Failed() {
		t.Logf("log:\n%s", logs.String())
	}
}

// then returns err, or f's error if err is nil.
func then(err error, f func() error) error {
	if err != nil {
		return err
	}
	return f()
}

func status(res *http.Response) string {
	if res == nil {
		return ""
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return res.Status + " " + string(b)
}

func sumRx(st telemetry.StatsResponse) (n uint64) {
	for _, p := range st.Ports {
		n += p.RxPackets
	}
	return n
}

func sumTx(st telemetry.StatsResponse) (n uint64) {
	for _, p := range st.Ports {
		n += p.TxPackets
	}
	return n
}

func held(st telemetry.StatsResponse) (n uint64) {
	for _, p := range st.Ports {
		n += uint64(p.Packets + p.Held)
	}
	return n
}

// rawSocket opens an AF_PACKET socket on h's interface in its namespace.
func rawSocket(t *testing.T, h testbed.Host) (fd, ifindex int) {
	t.Helper()
	err := h.Do(func() error {
		ifi, err := net.InterfaceByName(h.HostIf)
		if err != nil {
			return err
		}
		ifindex = ifi.Index
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		return err
	})
	if err != nil {
		t.Fatalf("host %s: AF_PACKET socket: %v", h.Name, err)
	}
	return fd, ifindex
}

// hostStats returns the counters of h's interface.
func hostStats(t *testing.T, h testbed.Host) netlink.LinkStatistics {
	t.Helper()
	var st netlink.LinkStatistics
	err := h.Do(func() error {
		l, err := netlink.LinkByName(h.HostIf)
		if err == nil && l.Attrs().Statistics != nil {
			st = *l.Attrs().Statistics
		}
		return err
	})
	if err != nil {
		t.Fatalf("host %s: link statistics: %v", h.Name, err)
	}
	return st
}

func setHostLink(t *testing.T, h testbed.Host, up bool) {
	t.Helper()
	err := h.Do(func() error {
		l, err := netlink.LinkByName(h.HostIf)
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

// vmRSS returns the process's resident set in KiB.
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
