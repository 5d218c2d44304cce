package telemetry

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// startServer starts a telemetry server of r's switch on a free loopback
// port with timeouts t, plus handlers hs, and stops it at cleanup.
func startServer(t *testing.T, r *rig, to Timeouts, hs map[string]http.Handler) *Server {
	t.Helper()
	srv, err := New(r.sw, Options{Listen: "127.0.0.1:0", Clock: r.clk, Samples: 16, SamplePeriod: time.Millisecond, Timeouts: to})
	if err != nil {
		t.Fatal(err)
	}
	for p, h := range hs {
		srv.Handle(p, h)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return srv
}

// Every listener has all four timeouts and a header limit; before issue 12
// only the header timeout was set, and a slow body, a slow reader or an
// idle keep-alive held its connection for ever.
func TestServerTimeoutDefaults(t *testing.T) {
	r := newRig(t, 16)
	srv := startServer(t, r, Timeouts{}, nil)
	h := srv.srv
	for name, got := range map[string]time.Duration{
		"ReadHeaderTimeout": h.ReadHeaderTimeout, "ReadTimeout": h.ReadTimeout,
		"WriteTimeout": h.WriteTimeout, "IdleTimeout": h.IdleTimeout,
	} {
		if got <= 0 || got > 2*time.Minute {
			t.Errorf("%s = %v, want a bound in (0, 2m]", name, got)
		}
	}
	if h.MaxHeaderBytes <= 0 || h.MaxHeaderBytes > 1<<20 {
		t.Errorf("MaxHeaderBytes = %d", h.MaxHeaderBytes)
	}
}

// closedWithin reports whether the server closes c within d: a read
// returns EOF or a reset (anything but our own deadline).
func closedWithin(t *testing.T, c net.Conn, d time.Duration) bool {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// Each timeout closes the connection of a client that holds it: headers
// never finished, a body never finished, a keep-alive left idle. The
// timeouts are 200 ms here; the test allows 10 s, so only a server without
// them fails.
func TestServerTimeoutsCloseSlowClients(t *testing.T) {
	r := newRig(t, 16)
	to := 200 * time.Millisecond
	body := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		io.WriteString(w, "ok")
	})
	srv := startServer(t, r, Timeouts{ReadHeader: to, Read: to, Write: to, Idle: to}, map[string]http.Handler{"POST /sink": body})
	dial := func() net.Conn {
		c, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	for name, start := range map[string]func(net.Conn){
		"header": func(c net.Conn) { io.WriteString(c, "GET /stats HTTP/1.1\r\nHost: localhost\r\n") },
		"body": func(c net.Conn) {
			io.WriteString(c, "POST /sink HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n0123456789")
		},
		"idle": func(c net.Conn) {
			io.WriteString(c, "GET /stats HTTP/1.1\r\nHost: localhost\r\n\r\n")
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
		},
	} {
		c := dial()
		start(c)
		if !closedWithin(t, c, 10*time.Second) {
			t.Errorf("%s: connection still open after 10 s", name)
		}
	}
}

// A client that never reads its response does not hold the handler: the
// write timeout fails its writes.
func TestServerWriteTimeout(t *testing.T) {
	r := newRig(t, 16)
	done := make(chan error, 1)
	big := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		chunk := []byte(strings.Repeat("x", 64<<10))
		for range 4096 { // 256 MiB: more than any socket buffer
			if _, err := w.Write(chunk); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	})
	srv := startServer(t, r, Timeouts{Write: 200 * time.Millisecond}, map[string]http.Handler{"GET /big": big})
	c, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /big HTTP/1.1\r\nHost: localhost\r\n\r\n")
	select {
	case err := <-done:
		if err == nil {
			t.Error("the handler wrote 256 MiB to a client that reads nothing")
		}
	case <-time.After(10 * time.Second):
		t.Error("the handler is still writing to a client that reads nothing after 10 s")
	}
}
