package node

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/ecnswitch/ecnswitch/config"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// lineConfig is one bottleneck: port a patched to port b, 100 Mbit/s,
// one queue, DCTCP's cut-off at K = 30 KB on b.
const lineConfig = `pools: [{name: p, size: 4MB}]
forwarding: {learning: false, patches: [{from: a, to: b}]}
port_defaults: {queues: 1, rate: 100Mbit, overhead: none}
ports:
  - {name: a}
  - {name: b, markers: {enqueue: [{scheme: dctcp, k: 30KB}]}}
`

// serve sends one request to h and returns the status and the body.
func serve(t *testing.T, h http.Handler, method, path, body string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w.Code, w.Body.String()
}

// TestSetKUnderTraffic changes K from 30 to 60 KB through the control API
// while the queue grows past both, in virtual time: packets are marked
// from the first that finds 30 KB until the change, not marked again
// until the queue reaches 60 KB, and marked from then on; every packet
// leaves once, and the marker's counts carry across the change.
func TestSetKUnderTraffic(t *testing.T) {
	const (
		size   = 1000
		every  = 53_000     // ns between arrivals: 80 µs a frame leaves, so 337.5 B more queue each
		change = 8_000_000  // ns: the queue holds about 50 KB then
		end    = 16_000_000 // about 100 KB
	)
	cfg, err := config.Parse([]byte(lineConfig))
	if err != nil {
		t.Fatal(err)
	}
	dc, err := cfg.Dataplane()
	if err != nil {
		t.Fatal(err)
	}
	r := dataplanetest.New(t, dc, memport.Link{})
	core, logs := observer.New(zap.InfoLevel)
	rt := NewRuntime(cfg, r.Switch, zap.New(core))
	h := rt.Handler()

	var ce []bool
	sent, at := 0, 0
	for now := int64(0); now < end; now += every {
		r.Clock.Set(now)
		if now >= change && at == 0 {
			at = sent
			if code, body := serve(t, h, http.MethodPost, "/config/set", `{"port": "b", "set": ["k=60KB"]}`); code != http.StatusOK {
				t.Fatalf("set k=60KB: %d %s", code, body)
			}
		}
		r.Send(0, dataplanetest.Frame(t, 0, 1, packettest.Options{Size: size, ECN: packet.ECT0, SrcPort: uint16(sent)}))
		sent++
		r.Switch.Poll()
		for _, f := range r.Recv(1) {
			ce = append(ce, packet.ECN(f[15]&3) == packet.CE)
		}
	}
	for deadline := r.Clock.Now() + 1_000_000_000; len(ce) < sent && r.Clock.Now() < deadline; {
		r.Step(10_000, 10_000)
		for _, f := range r.Recv(1) {
			ce = append(ce, packet.ECN(f[15]&3) == packet.CE)
		}
	}
	if len(ce) != sent {
		t.Fatalf("sent %d, %d left", sent, len(ce))
	}
	// The marks form two runs: [first, at) under K = 30 KB, [second, sent)
	// under K = 60 KB, the second 30 KB of growth (89 arrivals) later.
	first, second, marks := -1, -1, 0
	for i, c := range ce {
		if c {
			marks++
		}
		switch {
		case c && first < 0:
			first = i
		case c && i >= at && second < 0:
			second = i
		}
	}
	for i, c := range ce {
		want := i >= first && i < at || i >= second
		if c != want {
			t.Fatalf("packet %d (change before packet %d; marks from %d and from %d): CE %v", i, at, first, second, c)
		}
	}
	t.Logf("%d packets: marked from %d (K = 30 KB), set k=60KB before %d, marked again from %d", sent, first, at, second)
	if first <= 0 || second <= at || second >= sent {
		t.Fatalf("marks from %d and from %d, change before %d of %d: the test shows nothing", first, second, at, sent)
	}
	if grow := second - first; grow < 87 || grow > 91 {
		t.Errorf("%d arrivals between the first mark at 30 KB and at 60 KB; want about 30000/337.5 = 89", grow)
	}
	st := r.Switch.Stats().Ports[1]
	if st.Queues[0].MarkedEnq != uint64(marks) || st.TxPackets != uint64(sent) || len(st.Drops) != 0 {
		t.Errorf("port counted %d marks, sent %d, dropped %v; want %d, %d, none", st.Queues[0].MarkedEnq, st.TxPackets, st.Drops, marks, sent)
	}
	if len(st.Markers) != 1 || st.Markers[0].Name != "dctcp" || st.Markers[0].Marks != uint64(marks) {
		t.Errorf("marker counts %+v; want dctcp's %d marks across the change", st.Markers, marks)
	}
	if logs.FilterMessage("changed").FilterField(zap.String("key", "ports[1].markers.enqueue")).Len() != 1 {
		t.Errorf("the change is not logged: %v", logs.All())
	}
}

// The API: a change that does not validate is 400, one that cannot be
// made while the switch runs is 409, and neither changes anything; GET
// /config reports the running settings and their history.
func TestRuntimeAPI(t *testing.T) {
	c, sw := memorySwitch(t, lineConfig)
	rt := NewRuntime(c, sw, nil)
	h := rt.Handler()
	for _, tc := range []struct {
		body string
		code int
		want string
	}{
		{`{"port": "b", "set": ["k=banana"]}`, http.StatusBadRequest, `ports[1].markers.enqueue[0].k: \"banana\" is not a threshold`},
		{`{"port": "b", "set": ["k"]}`, http.StatusBadRequest, "want KEY=VALUE"},
		{`{"port": "z", "set": ["k=1KB"]}`, http.StatusBadRequest, `port \"z\": no such port`},
		{`{"port": "b", "set": ["queues=2"]}`, http.StatusConflict, "refused: ports[1].queues: 1 → 2: cannot change while the switch runs"},
		{`{"port": "b", "queue": 0, "set": ["strict=true"]}`, http.StatusConflict, "ports[1].scheduler.queues.0.strict: false → true"},
		{`{"port": "b", "set": ["k=1KB"], "extra": 1}`, http.StatusBadRequest, `unknown field \"extra\"`},
		{`{"port": "b", "set": ["k=30KB"]}`, http.StatusOK, "[]"}, // nothing changes
	} {
		code, body := serve(t, h, http.MethodPost, "/config/set", tc.body)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s\nwant %d %q", tc.body, code, body, tc.code, tc.want)
		}
	}
	if rt.Running().Generation != 0 {
		t.Fatalf("refused changes made generation %d", rt.Running().Generation)
	}

	code, body := serve(t, h, http.MethodPost, "/config/set", `{"port": "b", "queue": 0, "set": ["alpha=0.5"]}`)
	if code != http.StatusOK || !strings.Contains(body, `"key": "ports[1].buffer.queues.0.alpha"`) {
		t.Fatalf("set alpha: %d %s", code, body)
	}
	if code, body = serve(t, h, http.MethodPost, "/config/set", `{"port": "b", "set": ["rate=50Mbit"]}`); code != http.StatusOK {
		t.Fatalf("set rate: %d %s", code, body)
	}
	code, body = serve(t, h, http.MethodGet, "/config", "")
	var rc RunningConfig
	if code != http.StatusOK || json.Unmarshal([]byte(body), &rc) != nil {
		t.Fatalf("GET /config: %d %s", code, body)
	}
	b := rc.Ports[1]
	if rc.Generation != 2 || b.Rate != 50e6 || b.Queues[0].Alpha != 0.5 || b.Markers[0].Params["k"] != "30KB" || len(rc.History) != 3 {
		t.Errorf("running config %+v", rc)
	}
	if h := rc.History[1]; h.Generation != 2 || h.By != "set port b rate=50Mbit" || h.Key != "ports[1].rate" || h.New != "50Mbit bucket 2500B" {
		t.Errorf("history %+v", rc.History)
	}
	// The dataplane runs with them: the α of the queue's Dynamic Threshold
	// halves what the queue may hold of the free pool.
	if th := sw.Stats().Ports[1].Queues[0].Threshold; th != 2e6 {
		t.Errorf("queue threshold %d with α 0.5 of a free 4 MB pool, want 2 MB", th)
	}
}

// A reload reads the file again: what may change is applied, and what may
// not is refused, naming the key, with the switch's settings left as they
// were.
func TestReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ecnswitch.yaml")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(lineConfig)
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	_, sw := memorySwitch(t, lineConfig)
	rt := NewRuntime(c, sw, nil)
	ctx := context.Background()
	if _, err := rt.Set(ctx, SetRequest{Port: "a", Set: []string{"rate=10Mbit"}}); err != nil {
		t.Fatal(err)
	}

	write(strings.Replace(lineConfig, "k: 30KB", "k: 45KB", 1))
	recs, err := rt.Reload(ctx)
	if err != nil || len(recs) != 2 || recs[0].Key != "ports[0].rate" || recs[0].New != "100Mbit bucket 2500B" ||
		recs[1].Key != "ports[1].markers.enqueue" || recs[1].New != "dctcp k=45KB" || recs[0].By != "reload "+path {
		t.Fatalf("reload: %+v %v; want port a's rate back to the file's, and b's new K", recs, err)
	}

	write(strings.Replace(lineConfig, "  - {name: b,", "  - {name: c}\n  - {name: b,", 1))
	if _, err := rt.Reload(ctx); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "added c") {
		t.Fatalf("reload with a port added: %v", err)
	}
	write("ports: [{name: a}, {name: b, queues: 9000}]\n")
	if _, err := rt.Reload(ctx); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "ports[1].queues: 9000 outside") {
		t.Fatalf("reload of a file that does not validate: %v", err)
	}
	if rc := rt.Running(); rc.Generation != 2 || rc.Ports[1].Markers[0].Params["k"] != "45KB" {
		t.Errorf("after refused reloads: %+v", rc)
	}
}

// failing is a config.Target that records its calls and fails the nth.
type failing struct {
	n     int
	calls []string
}

var _ config.Target = (*failing)(nil)

func (f *failing) call(what string) error {
	f.calls = append(f.calls, what)
	if len(f.calls) == f.n {
		return errors.New("worker gone")
	}
	return nil
}

func (f *failing) SetMarkers(context.Context, int, marking.Stage, []dataplane.MarkerSpec) error {
	return f.call("markers")
}
func (f *failing) SetQueue(context.Context, int, int, scheduler.QueueConfig) error {
	return f.call("queue")
}
func (f *failing) SetShaper(_ context.Context, _ int, rate, _ int64) error {
	return f.call("shaper " + config.FormatRate(rate))
}
func (f *failing) SetAlpha(context.Context, int, int, float64) error { return f.call("alpha") }

// A change that fails halfway is undone: the changes applied before it
// are reverted, and the running config stays.
func TestFailedChangeIsUndone(t *testing.T) {
	c, err := config.Parse([]byte(lineConfig))
	if err != nil {
		t.Fatal(err)
	}
	f := &failing{n: 2}
	rt := NewRuntime(c, f, nil)
	_, err = rt.Set(context.Background(), SetRequest{Port: "b", Set: []string{"rate=50Mbit", "k=60KB"}})
	if err == nil || !strings.Contains(err.Error(), "ports[1].markers.enqueue: worker gone") {
		t.Fatalf("set: %v", err)
	}
	if want := []string{"shaper 50Mbit", "markers", "shaper 100Mbit"}; strings.Join(f.calls, ", ") != strings.Join(want, ", ") {
		t.Errorf("calls %v, want %v", f.calls, want)
	}
	if rc := rt.Running(); rc.Generation != 0 || rc.Ports[1].Rate != 100e6 {
		t.Errorf("running config after a failed change: %+v", rc)
	}
}
