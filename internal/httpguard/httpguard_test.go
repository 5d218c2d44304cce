package httpguard

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A request for another Host is refused (a page that rebound its name to
// 127.0.0.1 still sends its name), and so is a request with a body that
// is not application/json (a page can make a browser POST text/plain
// without asking first, not application/json).
func TestGuard(t *testing.T) {
	name, _ := os.Hostname()
	h := Guard(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }), AllowHosts("switch.lab"))
	for _, c := range []struct {
		method, host, ctype string
		code                int
	}{
		{"GET", "localhost:9090", "", 200},
		{"GET", "LOCALHOST", "", 200},
		{"GET", "127.0.0.1:9090", "", 200},
		{"GET", "[::1]:9090", "", 200},
		{"GET", "198.18.0.1", "", 200},
		{"GET", name + ":9090", "", 200},
		{"GET", "switch.lab", "", 200},
		{"GET", "Switch.Lab.:9090", "", 200},
		{"HEAD", "localhost", "", 200},
		{"GET", "evil.example", "", 403},
		{"GET", "evil.example:9090", "", 403},
		{"GET", "localhost.evil.example", "", 403},
		{"GET", "", "", 403},
		{"POST", "evil.example", "application/json", 403},
		{"POST", "localhost", "application/json", 200},
		{"POST", "localhost", "application/json; charset=utf-8", 200},
		{"PUT", "localhost", "application/json", 200},
		{"POST", "localhost", "text/plain", 415},
		{"POST", "localhost", "text/plain; charset=utf-8", 415},
		{"POST", "localhost", "application/x-www-form-urlencoded", 415},
		{"POST", "localhost", "multipart/form-data; boundary=x", 415},
		{"POST", "localhost", "", 415},
		{"DELETE", "localhost", "", 415},
	} {
		r := httptest.NewRequest(c.method, "/x", strings.NewReader(`{}`))
		r.Host = c.host
		if c.ctype != "" {
			r.Header.Set("Content-Type", c.ctype)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.code {
			t.Errorf("%s Host %q Content-Type %q: %d %s, want %d", c.method, c.host, c.ctype, w.Code, w.Body, c.code)
		}
		var e struct{ Error string }
		if c.code != 200 && (w.Header().Get("Content-Type") != "application/json" || json.Unmarshal(w.Body.Bytes(), &e) != nil || e.Error == "") {
			t.Errorf("%s Host %q: refusal %q is not a JSON error", c.method, c.host, w.Body)
		}
	}
}

func TestNewServerDefaults(t *testing.T) {
	s := NewServer(http.NotFoundHandler(), Timeouts{Write: time.Minute}, nil)
	if s.ReadHeaderTimeout != DefaultReadHeaderTimeout || s.ReadTimeout != DefaultReadTimeout || s.WriteTimeout != time.Minute ||
		s.IdleTimeout != DefaultIdleTimeout || s.MaxHeaderBytes != MaxHeaderBytes {
		t.Errorf("server %+v", s)
	}
}

// get asks for / over the socket at path.
func get(path string) (string, error) {
	c := http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}, Timeout: 5 * time.Second}
	res, err := c.Get("http://localhost/")
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return string(b), err
}

// serve answers "ok" on l until the test ends.
func serve(t *testing.T, l net.Listener) {
	s := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })}
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
}

// The control socket's file mode decides who may connect: 0600, or 0660
// with a group. What is at its path is replaced only when it is a socket
// nobody serves, and Close removes it.
func TestListenUnix(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run", "ecnswitch.sock")
	l, err := ListenUnix(path, -1)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, l)
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v %v; want a socket of mode 0600", fi.Mode(), err)
	}
	if got, err := get(path); err != nil || got != "ok" {
		t.Fatalf("GET over the socket: %q %v", got, err)
	}
	if _, err := ListenUnix(path, -1); err == nil || !strings.Contains(err.Error(), "another process serves") {
		t.Errorf("a second listener on a live socket: %v", err)
	}
	if es, _ := os.ReadDir(filepath.Dir(path)); len(es) != 1 {
		t.Errorf("the socket directory holds %d entries, want only the socket", len(es))
	}
	l.Close()
	if _, err := os.Lstat(path); err == nil {
		t.Error("Close left the socket file")
	}

	// A socket left by a process that died is replaced.
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	if l, err = ListenUnix(path, -1); err != nil {
		t.Fatalf("over a stale socket: %v", err)
	}
	l.Close()

	// Anything else at the path is left alone.
	if err := os.WriteFile(path, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ListenUnix(path, -1); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("over a regular file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "mine" {
		t.Errorf("the file at the path now holds %q", b)
	}
}

func TestListenUnixGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving the socket another group needs root")
	}
	path := filepath.Join(t.TempDir(), "s.sock")
	l, err := ListenUnix(path, 65534)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fi, _ := os.Lstat(path)
	if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Perm() != 0o660 || st.Gid != 65534 || int(st.Uid) != os.Geteuid() {
		t.Errorf("socket mode %v uid %d gid %d; want 0660, ours, group 65534", fi.Mode().Perm(), st.Uid, st.Gid)
	}
}

// A socket directory that others may write to is refused unless ours.
func TestListenUnixDirOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving the directory another owner needs root")
	}
	dir := filepath.Join(t.TempDir(), "run")
	os.Mkdir(dir, 0o777)
	os.Chmod(dir, 0o777)
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := ListenUnix(filepath.Join(dir, "s.sock"), -1); err == nil || !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("a world-writable directory of nobody's: %v", err)
	}
}
