package node

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/ecnswitch/ecnswitch/capture"
)

// The trust model: the TCP listener reads (counters, queue depths) and
// takes no command, whatever the request looks like; captures start and
// stop only through the control socket, mode 0600; and every endpoint
// answers only requests for an allowed Host with bodies of
// application/json. Before issue 12, the capture API shared the TCP
// listener: a web page in a browser on the host could start a capture
// with a no-cors text/plain POST.
func TestControlOnlyOnTheSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "run", "ecnswitch.sock")
	c, sw := memorySwitch(t, "ports: [{name: a}, {name: c}]\ntelemetry: {listen: '127.0.0.1:0'}\ncontrol: {socket: '"+sock+"'}\n")
	caps := capture.New(sw, sw.Clock(), capture.Options{Dir: t.TempDir()})
	defer caps.Close()
	core, logs := observer.New(zap.InfoLevel)
	log := zap.New(core)
	rt := NewRuntime(c, sw, log)
	stopTel, err := serveTelemetry(c, &Switch{Switch: sw}, sw.Clock(), rt, log)
	if err != nil {
		t.Fatal(err)
	}
	defer stopTel()
	stopCtl, err := serveControl(c, caps, rt, log)
	if err != nil {
		t.Fatal(err)
	}
	defer stopCtl()
	var addr string
	for _, e := range logs.FilterMessage("telemetry listening").All() {
		addr, _ = e.ContextMap()["addr"].(string)
	}
	if addr == "" {
		t.Fatal("no telemetry address in the log")
	}

	// TCP: a browser's no-cors POST, and even a well-formed one, start
	// nothing.
	body := `{"port": "c", "path": "x.pcapng"}`
	for _, ctype := range []string{"text/plain", "application/json"} {
		res, err := http.Post("http://"+addr+"/capture/start", ctype, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == http.StatusOK || len(caps.Status()) != 0 {
			t.Fatalf("POST %s to the TCP listener: %s, %d captures running", ctype, res.Status, len(caps.Status()))
		}
	}
	tcp := func(path, host string) int {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		req.Host = host
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := tcp("/metrics", "localhost"); code != http.StatusOK {
		t.Errorf("GET /metrics: %d", code)
	}
	if code := tcp("/metrics", "rebound.example"); code != http.StatusForbidden {
		t.Errorf("GET /metrics for Host rebound.example: %d, want 403", code)
	}

	// The socket: 0600, and the capture API behind the guard.
	if fi, err := os.Lstat(sock); err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("control socket %v %v", fi.Mode(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl := capture.Client{Socket: sock}
	st, err := cl.Start(ctx, capture.Spec{Port: "c", Path: "x.pcapng"})
	if err != nil || !st.Running {
		t.Fatalf("start over the socket: %+v %v", st, err)
	}
	raw := func(method, ctype, host string) int {
		hc := http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
		req, _ := http.NewRequest(method, "http://"+host+"/capture/start", strings.NewReader(`{"port": "c", "path": "y.pcapng"}`))
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	if code := raw(http.MethodPost, "text/plain", "localhost"); code != http.StatusUnsupportedMediaType {
		t.Errorf("a text/plain POST on the socket: %d, want 415", code)
	}
	if code := raw(http.MethodPost, "application/json", "rebound.example"); code != http.StatusForbidden {
		t.Errorf("a POST for another Host on the socket: %d, want 403", code)
	}
	if sts, err := cl.Status(ctx); err != nil || len(sts) != 1 {
		t.Fatalf("status over the socket: %v %v", sts, err)
	}
	if _, err := cl.Stop(ctx, st.ID); err != nil {
		t.Fatal(err)
	}
	stopCtl()
	if _, err := os.Lstat(sock); err == nil {
		t.Error("the control socket is still there after the server stopped")
	}
}
