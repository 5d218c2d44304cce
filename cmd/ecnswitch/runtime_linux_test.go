//go:build linux

package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/config"
	"github.com/ecnswitch/ecnswitch/node"
	"github.com/ecnswitch/ecnswitch/telemetry"
	"github.com/ecnswitch/ecnswitch/testbed/testbedtest"
)

// TestRuntimeControlOnTestbed runs the daemon on a two-host testbed and
// changes it while it runs: `ecnswitch set` changes K, a queue's weight
// and the rate, refuses a bad value and a queue count, naming the key;
// `ecnswitch get` and /stats show the running values; a reload of the file
// applies what it may and refuses a port added, the switch running on as
// it was; and kernel TCP crosses the switch throughout.
func TestRuntimeControlOnTestbed(t *testing.T) {
	tb := testbedtest.New(t, 2)
	hosts := tb.Hosts()
	dir := t.TempDir()
	sock := filepath.Join(dir, "ecnswitch.sock")
	file := strings.Replace(string(testbedConfig(tb.ID(), tb.StatePath(), hosts, nil)), "listen: "+telemetry.DefaultListen, "listen: 127.0.0.1:0", 1) +
		"control:\n  socket: " + sock + "\n"
	path := filepath.Join(dir, "ecnswitch.yaml")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(file)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Preflight(cfg); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	log, _ := newLogger("info", &logs)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	reload := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := node.Run(runCtx, cfg, log, reload)
		done <- err
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	waitLog := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), want); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the log:\n%s", want, logs.String())
			}
		}
	}
	waitLog("ecnswitch running")
	m := regexp.MustCompile(`telemetry listening\t\{"addr": "([^"]+)"`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no telemetry address in the log:\n%s", logs.String())
	}
	run := func(code int, wantOut string, args ...string) string {
		t.Helper()
		got, out, errs := cli(t, append(args, "--socket", sock)...)
		if got != code || !strings.Contains(out+errs, wantOut) {
			t.Fatalf("%s: exit %d, want %d and %q:\n%s%s", strings.Join(args, " "), got, code, wantOut, out, errs)
		}
		return out
	}
	running := func() node.RunningConfig {
		t.Helper()
		var rc node.RunningConfig
		if err := json.Unmarshal([]byte(run(exitOK, "", "get", "--json")), &rc); err != nil {
			t.Fatal(err)
		}
		return rc
	}

	run(exitOK, "enqueue  dctcp  k=30KB", "get", "port", "h2")
	run(exitOK, "ports[1].markers.enqueue: dctcp k=30KB → dctcp k=60KB", "set", "port", "h2", "k=60KB")
	run(exitOK, "ports[1].scheduler.queues.1: weight 1 → weight 3", "set", "port", "h2", "queue", "1", "weight=3")
	run(exitOK, "ports[1].rate: 995Mbit bucket 2500B → 500Mbit bucket 2500B", "set", "port", "h2", "rate=500Mbit")
	run(exitFail, `ports[1].markers.enqueue[0].k: "banana" is not a threshold`, "set", "port", "h2", "k=banana")
	run(exitFail, "refused: ports[1].queues: 8 → 2: cannot change while the switch runs", "set", "port", "h2", "queues=2")
	run(exitUsage, "want port P [queue Q] KEY=VALUE", "set", "h2", "k=1KB")
	waitLog(`changed	{"generation": 1, "by": "set port h2 k=60KB", "key": "ports[1].markers.enqueue", "old": "dctcp k=30KB", "new": "dctcp k=60KB"}`)

	rc := running()
	h2 := rc.Ports[1]
	if rc.Generation != 3 || h2.Markers[0].Params["k"] != "60KB" || h2.Queues[1].Weight != 3 || h2.Rate != 500e6 || rc.Ports[0].Markers[0].Params["k"] != "30KB" {
		t.Fatalf("running config after the sets: %+v", rc)
	}
	res, err := http.Get("http://" + m[1] + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Config node.RunningConfig `json:"config"`
	}
	err = json.NewDecoder(res.Body).Decode(&st)
	res.Body.Close()
	if err != nil || st.Config.Generation != 3 || st.Config.Ports[1].Rate != 500e6 {
		t.Fatalf("/stats config: %+v %v", st.Config, err)
	}
	const n = 2 << 20
	if got := transfer(t, ctx, hosts[0], hosts[1], 5001, n); got != n {
		t.Fatalf("after the sets, h2 received %d of %d bytes", got, n)
	}

	// A reload makes the file's settings the running ones: K from the
	// file, and the rate and the weight set above back to the file's.
	write(strings.Replace(file, "k: 30KB", "k: 45KB", 1))
	reload <- struct{}{}
	waitLog("config reloaded")
	rc = running()
	if h2 := rc.Ports[1]; rc.Generation != 4 || h2.Markers[0].Params["k"] != "45KB" || h2.Queues[1].Weight != 1 || h2.Rate != 995e6 {
		t.Fatalf("running config after the reload: %+v", rc)
	}
	// One that adds a port is refused, and the switch runs on unchanged.
	write(strings.Replace(file, "control:", "  - {name: h3, interface: nonexistent0}\ncontrol:", 1))
	reload <- struct{}{}
	waitLog("config reload refused; the switch keeps running with its settings")
	if !strings.Contains(logs.String(), "added h3") {
		t.Errorf("the refusal does not name the port added:\n%s", logs.String())
	}
	if rc := running(); rc.Generation != 4 || rc.Ports[1].Markers[0].Params["k"] != "45KB" {
		t.Fatalf("running config after a refused reload: %+v", rc)
	}
	if got := transfer(t, ctx, hosts[0], hosts[1], 5002, n); got != n {
		t.Fatalf("after the reloads, h2 received %d of %d bytes", got, n)
	}
}
