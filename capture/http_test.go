package capture

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
)

// TestHTTPAPI drives the handler through the Client the CLI uses: start,
// status, stop with the final counters, and the error codes.
func TestHTTPAPI(t *testing.T) {
	r := line(t)
	m := New(r.Switch, r.Clock, Options{Dir: t.TempDir(), Wall: fixedWall})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	ctx := context.Background()
	c := Client{Addr: strings.TrimPrefix(srv.URL, "http://")}

	st, err := c.Start(ctx, Spec{Port: "out", Filter: All, Format: PCAP, Path: "api.pcap"})
	if err != nil {
		t.Fatal(err)
	}
	if st.ID != 1 || !st.Running || st.PortIndex != 1 || st.Spec.SnapLen != DefaultSnapLen || !strings.HasSuffix(st.File, "api.pcap") {
		t.Fatalf("start returned %+v", st)
	}
	for i := 0; i < 5; i++ {
		r.Send(0, dataplanetest.Frame(t, 0, 1, packettest.Options{}))
	}
	r.Drain(1000)
	list, err := c.Status(ctx)
	if err != nil || len(list) != 1 || list[0].ID != 1 {
		t.Fatalf("status = %+v, %v", list, err)
	}
	final, err := c.Stop(ctx, st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if final.Running || final.Written != 5 || final.Bytes != 24+5*(16+60) {
		t.Fatalf("stop returned %+v; want 5 packets of 60 bytes written", final)
	}
	if list, _ := c.Status(ctx); len(list) != 0 {
		t.Fatalf("status after stop lists %+v", list)
	}

	if _, err := c.Start(ctx, Spec{Port: "out", SnapLen: 1, Path: "x"}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "snaplen: 1 outside [64, 65535]") || !strings.Contains(err.Error(), "400") {
		t.Errorf("bad snaplen: %v", err)
	}
	if _, err := c.Stop(ctx, 42); !errors.Is(err, ErrNotFound) {
		t.Errorf("stop of an unknown id: %v", err)
	}
	for _, q := range []struct{ method, path, body string }{
		{http.MethodPost, "/capture/stop?id=x", ""},
		{http.MethodPost, "/capture/start", `{"port": "out", "path": "y", "snap": 100}`},
		{http.MethodPost, "/capture/start", `{"port": `},
	} {
		resp, err := http.Post(srv.URL+q.path, "application/json", strings.NewReader(q.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s %s %s: %s, want 400", q.method, q.path, q.body, resp.Status)
		}
	}
	if resp, err := http.Get(srv.URL + "/capture/start"); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /capture/start: %v %v, want 405", resp.Status, err)
	}
	if _, err := (Client{Addr: srv.URL + "/"}).Status(ctx); err != nil {
		t.Errorf("a URL with a scheme and a trailing slash: %v", err)
	}
}
