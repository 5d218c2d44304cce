package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
)

// Client calls a running switch's runtime control on its control socket,
// for `ecnswitch set` and `ecnswitch get`.
type Client struct {
	// Socket is the path of the switch's control socket (control.socket).
	Socket string
}

// Running returns the switch's running settings (GET /config).
func (c Client) Running(ctx context.Context) (RunningConfig, error) {
	var rc RunningConfig
	return rc, c.do(ctx, http.MethodGet, "/config", nil, &rc)
}

// Set makes a change (POST /config/set) and returns what changed. Its
// errors wrap ErrInvalid or ErrRefused as the switch's did.
func (c Client) Set(ctx context.Context, req SetRequest) ([]ChangeRecord, error) {
	var recs []ChangeRecord
	return recs, c.do(ctx, http.MethodPost, "/config/set", req, &recs)
}

// Reload has the switch read its config file again (POST /config/reload),
// as SIGHUP does, and returns what changed.
func (c Client) Reload(ctx context.Context) ([]ChangeRecord, error) {
	var recs []ChangeRecord
	return recs, c.do(ctx, http.MethodPost, "/config/reload", struct{}{}, &recs)
}

// statusErr is the error of a response other than 200: the switch's
// message, matching ErrInvalid and ErrRefused by the status code.
type statusErr struct {
	code int
	msg  string
}

func (e *statusErr) Error() string { return e.msg }

func (e *statusErr) Is(target error) bool {
	return target == ErrInvalid && e.code == http.StatusBadRequest ||
		target == ErrRefused && e.code == http.StatusConflict
}

func (c Client) do(ctx context.Context, method, path string, body, out any) error {
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", c.Socket)
		},
	}}
	defer hc.CloseIdleConnections()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("control: %w", err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://localhost"+path, r)
	if err != nil {
		return fmt.Errorf("control: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json") // the guard refuses a body of any other type
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("control socket %s: %w (is ecnswitch run going, with this control.socket?)", c.Socket, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("control: %s %s: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e apiError
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(data))
		}
		return &statusErr{code: resp.StatusCode, msg: e.Error}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("control: %s %s: response: %w", method, path, err)
	}
	return nil
}
