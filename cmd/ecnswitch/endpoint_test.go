package main

import (
	"encoding/csv"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Two DCTCP flows over loopback, from `endpoint send` to `endpoint recv`:
// both exit 0, the receiver reports both flows, and the log holds lines
// of both.
func TestEndpointSendRecv(t *testing.T) {
	// A free port: bind one, note it, let it go.
	l, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	addr := l.LocalAddr().String()
	l.Close()

	var wg sync.WaitGroup
	var rcode int
	var rout, rerr string
	wg.Go(func() { rcode, rout, rerr = cli(t, "endpoint", "recv", "--listen", addr, "--duration", "2s") })
	// A datagram sent before the receiver binds draws an ICMP port
	// unreachable, which the sender takes for a refusal: wait for the bind.
	waitUDPBound(t, l.LocalAddr().(*net.UDPAddr).Port)
	logPath := filepath.Join(t.TempDir(), "flows.csv")
	code, out, errs := cli(t, "endpoint", "send", "--to", addr, "--cc", "dctcp", "--flows", "2", "--first-flow", "7",
		"--rate", "100Mbit", "--duration", "500ms", "--log", logPath)
	wg.Wait()
	if code != exitOK || rcode != exitOK {
		t.Fatalf("send: %d (%s%s); recv: %d (%s%s)", code, out, errs, rcode, rout, rerr)
	}
	for _, flow := range []string{"\n     7 ", "\n     8 "} {
		if !strings.Contains(rout, flow) || !strings.Contains(out, flow) {
			t.Errorf("flow%s missing:\nsend:\n%s\nrecv:\n%s", flow, out, rout)
		}
	}
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range recs[1:] {
		seen[r[0]] = true
	}
	if len(recs) < 3 || recs[0][0] != "flow" || !seen["7"] || !seen["8"] {
		t.Errorf("log: %d lines, header %v, flows %v", len(recs), recs[0], seen)
	}
}

func TestEndpointRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"endpoint"},
		{"endpoint", "send"},
		{"endpoint", "send", "--to", "127.0.0.1:9", "--cc", "bbr"},
		{"endpoint", "send", "--to", "127.0.0.1:9", "--flows", "0"},
		{"endpoint", "send", "--to", "127.0.0.1:9", "--dscp", "64"},
		{"endpoint", "recv", "--ack-every", "-1", "--duration", "1ms"},
		{"endpoint", "send", "--to", "127.0.0.1:9", "--rate", "1000000000"}, // a rate needs its unit
	} {
		if code, _, errs := cli(t, args...); code != exitUsage || errs == "" {
			t.Errorf("%v: exit %d, stderr %q; want %d and a reason", args, code, errs, exitUsage)
		}
	}
}

// waitUDPBound waits until a socket of this machine is bound to UDP port
// port on 127.0.0.1, as /proc/net/udp lists them; where there is no
// /proc/net/udp to read it waits a second.
func waitUDPBound(t *testing.T, port int) {
	t.Helper()
	want := fmt.Sprintf(" 0100007F:%04X ", port)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile("/proc/net/udp")
		if err != nil {
			time.Sleep(time.Second)
			return
		}
		if strings.Contains(string(b), want) {
			return
		}
	}
	t.Fatalf("nothing bound UDP port %d in 10s", port)
}
