package telemetry

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The Grafana dashboard in examples/ queries only what /metrics serves:
// every metric name of every panel's query is a family the server
// exports, with the labels the legends print, and the dashboard has the
// panels docs/deploy-server.md promises.
func TestGrafanaDashboardMatchesMetrics(t *testing.T) {
	b, err := os.ReadFile("../examples/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr         string `json:"expr"`
				LegendFormat string `json:"legendFormat"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("examples/grafana-dashboard.json: %v", err)
	}

	// A switch that marked and dropped, so that every family has series.
	r := newCapRig(t, 16, 20*frameLen)
	r.sendBurst()
	r.run(time.Millisecond, 10*time.Microsecond)
	_, body := get(t, r.srv.Handler(), "/metrics")
	labels := map[string][]string{} // family → its series' label names
	series := regexp.MustCompile(`^(ecnswitch_[a-z_]+)\{([^}]*)\}`)
	for line := range strings.Lines(body) {
		m := series.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, kv := range strings.Split(m[2], ",") {
			if k, _, ok := strings.Cut(kv, "="); ok && !slices.Contains(labels[m[1]], k) {
				labels[m[1]] = append(labels[m[1]], k)
			}
		}
	}

	metric := regexp.MustCompile(`ecnswitch_[a-z_]+`)
	legend := regexp.MustCompile(`\{\{(\w+)\}\}`)
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			names := metric.FindAllString(tg.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: %q queries no ecnswitch metric", p.Title, tg.Expr)
			}
			for _, name := range names {
				used[name] = true
				have, ok := labels[name]
				if !ok {
					t.Errorf("panel %q: %s is not served by /metrics", p.Title, name)
					continue
				}
				for _, l := range legend.FindAllStringSubmatch(tg.LegendFormat, -1) {
					if !slices.Contains(have, l[1]) {
						t.Errorf("panel %q: legend label %q is not a label of %s (%v)", p.Title, l[1], name, have)
					}
				}
			}
		}
	}
	for what, name := range map[string]string{
		"per-queue depth":  "ecnswitch_queue_bytes",
		"marks per marker": "ecnswitch_marker_marks_total",
		"drops by reason":  "ecnswitch_port_drops_total",
		"port rates":       "ecnswitch_port_tx_bytes_total",
	} {
		if !used[name] {
			t.Errorf("the dashboard has no %s panel (%s)", what, name)
		}
	}
}
