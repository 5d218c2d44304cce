// Package httpguard holds what every HTTP listener of ecnswitch shares:
// servers with read, write and idle timeouts and a header limit, a guard
// that answers only requests for an allowed Host and takes bodies only as
// application/json, and a UNIX socket listener whose file permissions
// decide who may connect.
//
// The guard is what keeps a web page in a browser on the switch's host
// from using an API that listens on loopback: a page can make the browser
// send a "simple" cross-origin request (a POST of text/plain, say) without
// asking first, but not one with Content-Type application/json; and a page
// that rebinds its own DNS name to 127.0.0.1 still sends its own name as
// Host.
package httpguard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"mime"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Timeouts bound how long one HTTP connection may hold a server, so that
// clients that send slowly, read slowly or idle cannot pile up
// connections (a slowloris). Zero fields take the defaults.
type Timeouts struct {
	// ReadHeader bounds reading a request's headers; default 5 s.
	ReadHeader time.Duration
	// Read bounds reading a whole request, body included; default 10 s.
	Read time.Duration
	// Write bounds a response, from the end of the request's headers;
	// default 30 s.
	Write time.Duration
	// Idle bounds the wait for the next request on a keep-alive
	// connection; default 60 s.
	Idle time.Duration
}

// Default timeouts, and the largest request header a server reads.
const (
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 10 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	MaxHeaderBytes           = 64 << 10
)

func (t Timeouts) withDefaults() Timeouts {
	for _, f := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&t.ReadHeader, DefaultReadHeaderTimeout}, {&t.Read, DefaultReadTimeout}, {&t.Write, DefaultWriteTimeout}, {&t.Idle, DefaultIdleTimeout}} {
		if *f.v <= 0 {
			*f.v = f.def
		}
	}
	return t
}

// NewServer returns an http.Server for h with timeouts t (zero fields:
// the defaults) and a header limit of MaxHeaderBytes, logging its errors
// to errLog (nil: the log package's).
func NewServer(h http.Handler, t Timeouts, errLog *log.Logger) *http.Server {
	t = t.withDefaults()
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write,
		IdleTimeout:       t.Idle,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          errLog,
	}
}

// Hosts is the set of Host header values a server answers: "localhost",
// any IP address (a page cannot make a browser send an address it
// rebound a name to), the machine's host name, and names added.
type Hosts struct {
	names map[string]bool
}

// AllowHosts returns the Hosts that allow the usual names and extra.
func AllowHosts(extra ...string) Hosts {
	h := Hosts{names: map[string]bool{"localhost": true}}
	if name, err := os.Hostname(); err == nil && name != "" {
		h.names[strings.ToLower(name)] = true
	}
	for _, n := range extra {
		h.names[strings.ToLower(strings.TrimSuffix(n, "."))] = true
	}
	return h
}

// Allowed reports whether a request's Host (with or without a port) is
// one of h.
func (h Hosts) Allowed(host string) bool {
	if name, _, err := net.SplitHostPort(host); err == nil {
		host = name
	}
	host = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(host, "]"), "["), ".")
	if host == "" {
		return false
	}
	if net.ParseIP(host) != nil {
		return true
	}
	return h.names[strings.ToLower(host)]
}

// Guard wraps next: a request for a Host not in hosts gets 403 Forbidden,
// and one of a method other than GET or HEAD without Content-Type
// application/json gets 415 Unsupported Media Type, both as a JSON
// {"error": …}.
func Guard(next http.Handler, hosts Hosts) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hosts.Allowed(r.Host) {
			deny(w, http.StatusForbidden, fmt.Sprintf("host %q is not served here: use localhost, an IP address, or this machine's name (telemetry.hosts adds names)", r.Host))
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
				deny(w, http.StatusUnsupportedMediaType, fmt.Sprintf("%s wants Content-Type: application/json, not %q", r.Method, r.Header.Get("Content-Type")))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func deny(w http.ResponseWriter, code int, msg string) { WriteError(w, code, msg) }

// WriteJSON writes v, indented, as the body of a response with status
// code. A failed write is not reported: the status line is out, and the
// client that went away has no one to tell.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// WriteError writes {"error": msg} as the body of a response with status
// code: every listener's errors have that shape.
func WriteError(w http.ResponseWriter, code int, msg string) {
	WriteJSON(w, code, struct {
		Error string `json:"error"`
	}{msg})
}

// ListenUnix listens on a UNIX socket at path whose file permissions
// decide who may connect: mode 0600 (the switch's user only), or 0660 and
// group gid when gid ≥ 0. The socket is made in a private directory,
// given its mode and group there, and then renamed to path, so that
// nobody can connect in between. A socket left at path by a process that
// died is replaced; a live one, or anything else at path, is an error.
// The directory is created (0755) when missing and, like a capture
// directory, refused when its group or others may write to it unless the
// switch's user owns it. Close removes the socket.
func ListenUnix(path string, gid int) (net.Listener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	} else if err := CheckDir(dir, fi); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("%s exists and is not a socket; remove it or choose another control.socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: another process serves this socket (another ecnswitch?); stop it or choose another control.socket", path)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	tmpDir, err := os.MkdirTemp(dir, ".s")
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	defer os.RemoveAll(tmpDir)
	tmp := filepath.Join(tmpDir, "s")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	l.SetUnlinkOnClose(false)
	mode := os.FileMode(0o600)
	if gid >= 0 {
		mode = 0o660
		err = os.Chown(tmp, -1, gid)
	}
	if err == nil {
		err = os.Chmod(tmp, mode)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	var fi os.FileInfo
	if err == nil {
		fi, err = os.Lstat(path)
	}
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	return &unixListener{UnixListener: l, path: path, fi: fi}, nil
}

// unixListener removes its socket file on Close, if the file is still its.
type unixListener struct {
	*net.UnixListener
	path string
	fi   os.FileInfo
}

func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	if fi, serr := os.Lstat(l.path); serr == nil && os.SameFile(fi, l.fi) {
		os.Remove(l.path)
	}
	return err
}
