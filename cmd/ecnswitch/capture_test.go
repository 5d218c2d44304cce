package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/ecnswitch/ecnswitch/capture"
	"github.com/ecnswitch/ecnswitch/config"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/internal/httpguard"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// Two senders at line rate into one port at line rate: its queue grows by
// a frame every frame time, and DCTCP marks every ECT frame that finds at
// least K bytes queued (001 §2.2 Eq. 1's cut-off, K_min = K_max of RED, as
// marking.CutOff implements it).
const (
	capRate = 100_000_000 // bit/s: the links and port c's shaper
	capK    = 15_000      // bytes
	capSize = 1000        // frame bytes
	capN    = 60          // frames per sender
)

const capConfig = `
pools: [{name: shared, size: 200KB}]
forwarding: {patches: [{from: a, to: c}, {from: b, to: c}]}
port_defaults: {queues: 2, rate: 100Mbit}
ports:
  - {name: a}
  - {name: b}
  - name: c
    markers: {enqueue: [{scheme: dctcp, k: 15000}]}
`

// captureRig is a switch from capConfig on memory ports in virtual time,
// with its capture Manager mounted on its telemetry server as `run` mounts
// it, behind an httptest server.
type captureRig struct {
	t      *testing.T
	clk    *timestamp.Virtual
	sw     *dataplane.Switch
	hosts  []*memport.Port
	devs   []*memport.Port
	dir    string
	socket string
}

func newCaptureRig(t *testing.T) *captureRig {
	t.Helper()
	c, err := config.Parse([]byte(capConfig))
	if err != nil {
		t.Fatal(err)
	}
	dc, _ := c.Dataplane()
	r := &captureRig{t: t, clk: timestamp.NewVirtual(0), dir: t.TempDir()}
	devs := make([]ports.Port, len(dc.Ports))
	for i, p := range dc.Ports {
		sw, host, err := memport.Pair(p.Name, "host", r.clk, memport.Link{Rate: capRate})
		if err != nil {
			t.Fatal(err)
		}
		devs[i], r.devs, r.hosts = sw, append(r.devs, sw), append(r.hosts, host)
	}
	if r.sw, err = dataplane.New(dc, devs, r.clk, nil); err != nil {
		t.Fatal(err)
	}
	m := capture.New(r.sw, r.sw.Clock(), capture.Options{Dir: filepath.Join(r.dir, "captures")})
	t.Cleanup(func() { m.Close(); r.sw.Close() })
	r.socket = serveSocket(t, filepath.Join(r.dir, "run", "ecnswitch.sock"), m.Handler())
	return r
}

// serveSocket serves h on a control socket at path, behind the guard, as
// the daemon serves the capture API, until the test ends.
func serveSocket(t *testing.T, path string, h http.Handler) string {
	t.Helper()
	ln, err := httpguard.ListenUnix(path, -1)
	if err != nil {
		t.Fatal(err)
	}
	srv := httpguard.NewServer(httpguard.Guard(h, httpguard.AllowHosts()), httpguard.Timeouts{}, nil)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return path
}

// congest sends capN ECT(0) frames from each of a and b to c and polls the
// switch until everything has left.
func (r *captureRig) congest() {
	r.t.Helper()
	f := packettest.UDP4(r.t, packettest.Options{Size: capSize, ECN: packet.ECT0})
	for h := 0; h < 2; h++ {
		ds := make([]*packet.Desc, capN)
		for i := range ds {
			ds[i] = &packet.Desc{Buf: append([]byte(nil), f...), Len: len(f)}
		}
		if n, err := r.hosts[h].Transmit(ds); n != capN || err != nil {
			r.t.Fatalf("host %d sent %d of %d: %v", h, n, capN, err)
		}
	}
	rx := make([]*packet.Desc, 64)
	for i := range rx {
		rx[i] = &packet.Desc{Buf: make([]byte, 2048)}
	}
	for deadline := r.clk.Now() + int64(time.Second); r.clk.Now() < deadline; {
		r.clk.Advance(time.Microsecond)
		r.sw.Poll()
		for n, _ := r.hosts[2].Receive(rx); n > 0; n, _ = r.hosts[2].Receive(rx) {
		}
		busy := r.sw.Account().Held > 0
		for i := range r.hosts {
			busy = busy || r.hosts[i].InFlight() > 0 || r.devs[i].InFlight() > 0
		}
		if !busy {
			return
		}
	}
	r.t.Fatal("the switch did not drain in a second")
}

var commentRE = regexp.MustCompile(`^egress port c queue 0: marked CE by dctcp \(value (\d+), threshold (\d+)\); sojourn [0-9.]+us$`)

// TestCaptureCLI drives start → status → stop through the CLI against the
// capture API mounted on a telemetry server, and checks the file holds
// exactly the packets the switch marked, each above K.
func TestCaptureCLI(t *testing.T) {
	r := newCaptureRig(t)

	code, out, errs := cli(t, "capture", "start", "--port", "c", "--filter", "marked", "--path", "marked.pcapng", "--socket", r.socket, "--json")
	if code != exitOK {
		t.Fatalf("start: exit %d\n%s%s", code, out, errs)
	}
	var st capture.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("start --json: %v\n%s", err, out)
	}
	file := filepath.Join(r.dir, "captures", "marked.pcapng")
	if st.ID != 1 || !st.Running || st.PortIndex != 2 || st.File != file || st.Spec.Direction != capture.Egress || st.Spec.Format != capture.PCAPNG {
		t.Fatalf("start returned %+v", st)
	}
	// A second capture with the default name, in text.
	code, out, errs = cli(t, "capture", "start", "--port", "a", "--direction", "ingress", "--format", "pcap", "--socket", r.socket)
	if code != exitOK || !regexp.MustCompile(`^capture 2 started on port a: ingress all, pcap, snaplen 256, rotate at 64MiB, keep 8\nfile     \S+/captures/a-ingress-all-\d{8}-\d{6}\.pcap\nstop it: ecnswitch capture stop 2 --socket `+regexp.QuoteMeta(r.socket)+`\n$`).MatchString(out) {
		t.Fatalf("start: exit %d\n%s%s", code, out, errs)
	}

	r.congest()
	marks := r.sw.Stats().Ports[2].Queues[0].MarkedEnq
	if marks == 0 || marks >= 2*capN {
		t.Fatalf("%d of %d packets marked; the test needs some marked and some not", marks, 2*capN)
	}

	code, out, errs = cli(t, "capture", "status", "--socket", r.socket)
	if code != exitOK {
		t.Fatalf("status: exit %d\n%s%s", code, out, errs)
	}
	row := regexp.MustCompile(`(?m)^\s+1\s+c\s+egress marked\s+running\s+(\d+)\s+0\s+0\s+(\d+)\s+1\s+\S+\s*$`).FindStringSubmatch(out)
	if row == nil || !strings.Contains(out, "ingress all") || !strings.Contains(out, "  1: "+file) {
		t.Fatalf("status table:\n%s", out)
	}
	// The switch's own counters: every frame c sent was either marked
	// (captured) or left out by the filter, give or take the filtered-out
	// count's publishing lag (capture.Status.FilteredOut).
	if filtered, _ := strconv.ParseUint(row[2], 10, 64); marks+filtered > 2*capN || marks+filtered+63 < 2*capN {
		t.Errorf("status: %d marked + %d filtered out, want %d sent in all", marks, filtered, 2*capN)
	}

	// ID before its flag: flags may follow the ID.
	code, out, errs = cli(t, "capture", "stop", "1", "--socket", r.socket, "--json")
	if code != exitOK {
		t.Fatalf("stop: exit %d\n%s%s", code, out, errs)
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if st.Running || st.Written != marks || st.SkippedRingFull != 0 || st.Files != 1 {
		t.Fatalf("stop returned %+v; the switch marked %d", st, marks)
	}
	// The file holds the marked packets and no others, each CE, each with
	// a comment showing a queue above K when it was marked.
	pkts := readNg(t, file)
	if uint64(len(pkts)) != marks {
		t.Fatalf("%s holds %d packets, the switch marked %d", file, len(pkts), marks)
	}
	for i, p := range pkts {
		g := gopacket.NewPacket(p.data, layers.LayerTypeEthernet, gopacket.Default)
		ip, ok := g.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		if !ok || packet.ECN(ip.TOS&3) != packet.CE {
			t.Fatalf("packet %d is not CE: %v", i, g)
		}
		m := commentRE.FindStringSubmatch(p.comment)
		if m == nil {
			t.Fatalf("packet %d comment %q", i, p.comment)
		}
		if v, _ := strconv.Atoi(m[1]); m[2] != strconv.Itoa(capK) || v < capK {
			t.Errorf("packet %d marked at queue %s bytes, threshold %s; DCTCP marks from K = %d on", i, m[1], m[2], capK)
		}
	}

	code, out, errs = cli(t, "capture", "stop", "--socket", r.socket, "2")
	if code != exitOK || !regexp.MustCompile(`(?m)^\s+2\s+a\s+ingress all\s+stopped\s+`+strconv.Itoa(capN)+`\s`).MatchString(out) {
		t.Fatalf("stop 2 (a received %d): exit %d\n%s%s", capN, code, out, errs)
	}
	if code, out, _ := cli(t, "capture", "status", "--socket", r.socket); code != exitOK || out != "no captures running\n" {
		t.Errorf("status after stopping both: %q", out)
	}
	if code, out, _ := cli(t, "capture", "status", "--socket", r.socket, "--json"); code != exitOK || strings.TrimSpace(out) != "[]" {
		t.Errorf("status --json: exit %d, %q", code, out)
	}
}

// ngPacket is a packet of a pcapng file and its comment.
type ngPacket struct {
	data    []byte
	comment string
}

// readNg reads a pcapng file: the frames through gopacket's pcapgo, and
// each Enhanced Packet Block's opt_comment (pcapng §4.3) by walking the
// blocks, since pcapgo v1.1.19 does not return options.
func readNg(t *testing.T, path string) []ngPacket {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	var out []ngPacket
	for {
		data, _, err := r.ReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: packet %d: %v", path, len(out), err)
		}
		out = append(out, ngPacket{data: data})
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := func(b []byte) int { return int(b[0]) | int(b[1])<<8 | int(b[2])<<16 | int(b[3])<<24 }
	k := 0
	for off := 0; off+12 <= len(b); {
		typ, n := le(b[off:]), le(b[off+4:])
		if n < 12 || off+n > len(b) {
			t.Fatalf("%s: bad block at %d", path, off)
		}
		if typ == 6 { // Enhanced Packet Block
			capLen := le(b[off+20:])
			opt := off + 28 + (capLen+3)&^3
			for opt+4 <= off+n-4 {
				code, l := int(b[opt])|int(b[opt+1])<<8, int(b[opt+2])|int(b[opt+3])<<8
				if code == 0 {
					break
				}
				if code == 1 && k < len(out) {
					out[k].comment = string(b[opt+4 : opt+4+l])
				}
				opt += 4 + (l+3)&^3
			}
			k++
		}
		off += n
	}
	if k != len(out) {
		t.Fatalf("%s: %d packet blocks, pcapgo read %d packets", path, k, len(out))
	}
	return out
}

// TestCaptureCLIErrors checks the errors: bad flags before any request,
// the server's refusals, and no switch or no capture API at the address.
func TestCaptureCLIErrors(t *testing.T) {
	r := newCaptureRig(t)
	dead := filepath.Join(r.dir, "run", "nobody.sock")
	noAPI := serveSocket(t, filepath.Join(r.dir, "other", "other.sock"), http.NotFoundHandler())

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"capture"}, exitUsage, "ecnswitch capture start --port P"},
		{[]string{"capture", "-h"}, exitOK, "ecnswitch capture stop ID"},
		{[]string{"capture", "frob"}, exitUsage, "ecnswitch capture status"},
		{[]string{"capture", "start", "-h"}, exitOK, "-max-bytes"},
		{[]string{"capture", "start"}, exitUsage, "--port is required"},
		{[]string{"capture", "start", "--port", "c", "--snaplen", "10"}, exitUsage, "--snaplen: 10 outside [64, 65535]"},
		{[]string{"capture", "start", "--port", "c", "--max-bytes", "0", "--max-files", "3"}, exitUsage, "--max-files: 3 with max-bytes -1 (never rotate)"},
		{[]string{"capture", "start", "--port", "c", "--max-bytes", "1 pint"}, exitUsage, `--max-bytes: "1 pint" has unknown unit`},
		{[]string{"capture", "start", "--port", "c", "--queue", "x"}, exitUsage, `invalid value "x" for flag --queue: not an integer`},
		{[]string{"capture", "start", "--port", "c", "--direction", "ingress", "--filter", "marked"}, exitUsage, "--filter: marked with direction ingress"},
		{[]string{"capture", "start", "--port", "z", "--socket", r.socket}, exitFail, `port: "z" is not a port of the switch (a, b, c)`},
		{[]string{"capture", "start", "--port", "c", "--path", "../out.pcapng", "--socket", r.socket}, exitFail, "is outside the capture directory"},
		{[]string{"capture", "stop"}, exitUsage, "want one capture ID"},
		{[]string{"capture", "stop", "1", "2"}, exitUsage, "want one capture ID"},
		{[]string{"capture", "stop", "one"}, exitUsage, `ID "one" is not a capture ID`},
		{[]string{"capture", "stop", "42", "--socket", r.socket}, exitFail, "no such capture: id 42 (404)"},
		{[]string{"capture", "status", "extra"}, exitUsage, "unexpected arguments: extra"},
		{[]string{"capture", "status", "--socket", dead}, exitFail, "no switch answers on " + dead + " (is 'ecnswitch run' going"},
		{[]string{"capture", "start", "--port", "c", "--socket", dead}, exitFail, "no such file or directory"},
		{[]string{"capture", "status", "--socket", noAPI}, exitFail, "serves no capture API"},
	} {
		code, out, errs := cli(t, tc.args...)
		if code != tc.code || !strings.Contains(out+errs, tc.want) {
			t.Errorf("%v: exit %d, want %d; output lacks %q:\n%s%s", tc.args, code, tc.code, tc.want, out, errs)
		}
	}
	// The refused starts created no file and no directory outside.
	if _, err := os.Stat(filepath.Join(r.dir, "out.pcapng")); err == nil {
		t.Error("a path outside the capture directory was written")
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[uint64]string{0: "0B", 999: "999B", 1000: "1kB", 16344: "16.3kB", 42844216: "42.8MB", 999_600: "1MB", 1_050_000_000: "1.05GB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestUsageListsCaptureAndBench(t *testing.T) {
	code, out, _ := cli(t, "help")
	if code != exitOK || !strings.Contains(out, "ecnswitch capture start --port P [flags] | stop ID | status") || !strings.Contains(out, "ecnswitch bench gen | sink | switch | tcp | cacheline [flags]") {
		t.Errorf("help: exit %d\n%s", code, out)
	}
	if code, _, _ := cli(t, "bench"); code != exitUsage {
		t.Errorf("bench without a command: exit %d, want %d", code, exitUsage)
	}
	if code, _, _ := cli(t, "bench", "-h"); code != exitOK {
		t.Errorf("bench -h: exit %d, want %d", code, exitOK)
	}
}
