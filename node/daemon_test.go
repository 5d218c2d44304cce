package node

import (
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/ecnswitch/ecnswitch/capture"
	"github.com/ecnswitch/ecnswitch/config"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// memorySwitch builds the switch of a config file on memory ports.
func memorySwitch(t *testing.T, yaml string) (*config.Config, *dataplane.Switch) {
	t.Helper()
	c, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	dc, err := c.Dataplane()
	if err != nil {
		t.Fatal(err)
	}
	clk := timestamp.NewVirtual(0)
	devs := make([]ports.Port, len(dc.Ports))
	for i, p := range dc.Ports {
		if devs[i], _, err = memport.Pair(p.Name, "host", clk, memport.Link{}); err != nil {
			t.Fatal(err)
		}
	}
	sw, err := dataplane.New(dc, devs, clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sw.Close() })
	return c, sw
}

// The daemon's own captures: the config's list starts with the switch,
// sub-directories inside capture.dir are created, and one that cannot
// start names its config key.
func TestStartCaptures(t *testing.T) {
	c, sw := memorySwitch(t, "ports: [{name: a}, {name: c}]\ncapture:\n  captures: [{port: c, filter: marked, path: exp/1.pcapng}, {port: c}]\n")
	dir := filepath.Join(t.TempDir(), "caps")
	m := capture.New(sw, sw.Clock(), capture.Options{Dir: dir})
	defer m.Close()
	if err := startCaptures(m, c.Capture.Captures); err != nil {
		t.Fatal(err)
	}
	st := m.Status()
	if len(st) != 2 || st[0].File != filepath.Join(dir, "exp", "1.pcapng") || st[1].File != filepath.Join(dir, "c-egress-all.pcapng") {
		t.Fatalf("status %+v", st)
	}
	err := startCaptures(m, []capture.Spec{{Port: "c", Path: "exp/1.pcapng"}})
	if err == nil || !strings.Contains(err.Error(), `capture.captures[0]: capture: invalid capture spec: path: "`+filepath.Join(dir, "exp", "1.pcapng")+`" is written by capture 1`) {
		t.Errorf("a second capture of one file: %v", err)
	}
}

func TestWarnExposedAPI(t *testing.T) {
	for _, tc := range []struct {
		listen string
		warn   bool
	}{{"127.0.0.1:9090", false}, {"[::1]:9090", false}, {"localhost:9090", false}, {":9090", true}, {"0.0.0.0:9090", true}, {"198.18.0.1:9090", true}} {
		core, logs := observer.New(zap.InfoLevel)
		warnExposedAPI(tc.listen, zap.New(core))
		got := logs.FilterMessageSnippet("anyone who reaches it can read").Len() > 0
		if got != tc.warn {
			t.Errorf("%s: warned %v, want %v", tc.listen, got, tc.warn)
		}
	}
}
