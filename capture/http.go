package capture

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/ecnswitch/ecnswitch/internal/httpguard"
)

// maxSpecBody bounds the body of a start request.
const maxSpecBody = 64 << 10

// Handler serves the capture API, to be mounted at the root of the
// switch's control server (its UNIX socket, behind httpguard.Guard):
//
//	POST /capture/start        body: a JSON Spec   → 200 Status of the new capture
//	POST /capture/stop?id=N                        → 200 final Status
//	GET  /capture/status                           → 200 [Status, …] of the running captures
//
// Errors are {"error": "…"} with 400 for a bad spec or id, 404 for an
// unknown capture and 500 for a failure (a file that cannot be created).
func (m *Manager) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /capture/start", m.serveStart)
	mux.HandleFunc("POST /capture/stop", m.serveStop)
	mux.HandleFunc("GET /capture/status", func(w http.ResponseWriter, _ *http.Request) {
		httpguard.WriteJSON(w, http.StatusOK, m.Status())
	})
	return mux
}

func (m *Manager) serveStart(w http.ResponseWriter, r *http.Request) {
	s, err := decodeStart(r)
	if err != nil {
		writeError(w, err)
		return
	}
	id, err := m.Start(s)
	if err != nil {
		writeError(w, err)
		return
	}
	for _, st := range m.Status() {
		if st.ID == id {
			httpguard.WriteJSON(w, http.StatusOK, st)
			return
		}
	}
	writeError(w, fmt.Errorf("capture: %w: id %d stopped at once", ErrNotFound, id))
}

func (m *Manager) serveStop(w http.ResponseWriter, r *http.Request) {
	id, err := decodeStop(r)
	if err != nil {
		writeError(w, err)
		return
	}
	st, err := m.Stop(id)
	if err != nil {
		writeError(w, err)
		return
	}
	httpguard.WriteJSON(w, http.StatusOK, st)
}

// decodeStart reads a start request: a body of one JSON object of Spec's
// keys and nothing after it, at most maxSpecBody bytes, that validates.
// Every error wraps ErrInvalid.
func decodeStart(r *http.Request) (Spec, error) {
	var s Spec
	b, err := io.ReadAll(io.LimitReader(r.Body, maxSpecBody+1))
	switch {
	case err != nil:
		return s, fmt.Errorf("capture: %w: body: %w", ErrInvalid, err)
	case len(b) > maxSpecBody:
		return s, fmt.Errorf("capture: %w: body: larger than %d bytes", ErrInvalid, maxSpecBody)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Spec{}, fmt.Errorf("capture: %w: body: %w", ErrInvalid, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Spec{}, fmt.Errorf("capture: %w: body: more after the spec's JSON object", ErrInvalid)
	}
	if err := s.Validate(); err != nil {
		return Spec{}, fmt.Errorf("capture: %w: %w", ErrInvalid, err)
	}
	return s, nil
}

// decodeStop reads a stop request's id=N. Every error wraps ErrInvalid.
func decodeStop(r *http.Request) (int, error) {
	v := r.URL.Query().Get("id")
	id, err := strconv.Atoi(v)
	if err != nil || id < 1 {
		return 0, fmt.Errorf("capture: %w: id: %q is not a capture id", ErrInvalid, v)
	}
	return id, nil
}

// apiError is the body of an error response.
type apiError struct {
	Error string `json:"error"`
}

// serverError is an error response; errors.Is matches it against
// ErrInvalid and ErrNotFound by its status code.
type serverError struct {
	code int
	msg  string
}

func (e *serverError) Error() string { return e.msg + " (" + strconv.Itoa(e.code) + ")" }

func (e *serverError) Is(target error) bool {
	return target == ErrInvalid && e.code == http.StatusBadRequest ||
		target == ErrNotFound && e.code == http.StatusNotFound
}

func writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrInvalid):
		code = http.StatusBadRequest
	case errors.Is(err, ErrNotFound):
		code = http.StatusNotFound
	}
	httpguard.WriteError(w, code, err.Error())
}

// Client calls a running switch's capture API, for `ecnswitch capture
// start|stop|status`. The daemon serves the API on its control socket
// only (Socket); Addr reaches a Handler mounted elsewhere (a test's).
type Client struct {
	// Socket is the path of the switch's control socket, a UNIX socket.
	Socket string
	// Addr, when Socket is empty, is an HTTP address: host:port, or a URL
	// with a scheme and an optional path prefix under which the Handler is
	// mounted.
	Addr string
	// HTTP is the client to use; nil means http.DefaultClient. With
	// Socket, only its Timeout is used.
	HTTP *http.Client
}

// Start starts a capture and returns its status, with its id.
func (c Client) Start(ctx context.Context, s Spec) (Status, error) {
	body, err := json.Marshal(s)
	if err != nil {
		return Status{}, fmt.Errorf("capture: %w", err)
	}
	var st Status
	return st, c.do(ctx, http.MethodPost, "/capture/start", nil, body, &st)
}

// Stop stops capture id and returns its final status.
func (c Client) Stop(ctx context.Context, id int) (Status, error) {
	var st Status
	q := url.Values{"id": {strconv.Itoa(id)}}
	return st, c.do(ctx, http.MethodPost, "/capture/stop", q, nil, &st)
}

// Status returns the running captures.
func (c Client) Status(ctx context.Context) ([]Status, error) {
	var sts []Status
	return sts, c.do(ctx, http.MethodGet, "/capture/status", nil, nil, &sts)
}

func (c Client) do(ctx context.Context, method, path string, q url.Values, body []byte, out any) error {
	base, hc := c.Addr, c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	if c.Socket != "" {
		base = "http://localhost"
		sock := c.Socket
		hc = &http.Client{Timeout: hc.Timeout, Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", sock)
			},
		}}
		defer hc.CloseIdleConnections()
	}
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	u, err := url.Parse(strings.TrimSuffix(base, "/") + path)
	if err != nil {
		return fmt.Errorf("capture: addr %q: %w", c.Addr, err)
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json") // the server refuses a POST of any other type
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("capture: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("capture: %s %s: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e apiError
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(data))
		}
		return fmt.Errorf("capture: %s %s: %w", method, path, &serverError{code: resp.StatusCode, msg: e.Error})
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("capture: %s %s: response: %w", method, path, err)
	}
	return nil
}
