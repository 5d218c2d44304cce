package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ecnswitch/ecnswitch/config"
	"github.com/ecnswitch/ecnswitch/node"
	"github.com/ecnswitch/ecnswitch/telemetry"
)

// statsCommand is `ecnswitch stats`: a running switch's counters, read
// from its telemetry server.
func statsCommand() *command {
	return &command{
		name: "stats", synopsis: "[--addr HOST:PORT] [--json] [--interval D] [--count N]",
		summary: "show a running switch's counters, refreshed like top",
		help: "Show a running switch's per-port and per-queue counters, read from its telemetry\n" +
			"server's /stats and redrawn every interval like top. --json prints the snapshot\nonce, for scripts.",
		setup: statsSetup,
	}
}

func statsSetup(fs *flag.FlagSet) action {
	addr := fs.String("addr", telemetry.DefaultListen, "the switch's telemetry address (telemetry.listen), `HOST:PORT`")
	asJSON := fs.Bool("json", false, "print one snapshot as JSON and exit")
	interval := durationFlag(fs, "interval", time.Second, "refresh interval, at least 10ms")
	count := fs.Int("count", 0, "stop after this many refreshes (0: until interrupted)")
	return func(e *env, _ []string) int {
		return stats(e, *addr, *asJSON, *interval, *count)
	}
}

// stats shows the counters of the switch whose telemetry server is at
// addr, count times (0: until interrupted), every interval.
func stats(e *env, addr string, asJSON bool, interval time.Duration, count int) int {
	if interval < 10*time.Millisecond {
		return e.usageError("stats", "--interval %v below 10ms", interval)
	}
	url := "http://" + strings.TrimPrefix(addr, "http://") + "/stats"
	client := &http.Client{Timeout: 5 * time.Second}
	if asJSON {
		body, err := fetch(client, url)
		if err != nil {
			return e.fail("stats", err)
		}
		var out bytes.Buffer
		if err := json.Indent(&out, body, "", "  "); err != nil {
			return e.fail("stats", fmt.Errorf("%s: %w", url, err))
		}
		out.WriteByte('\n')
		e.stdout.Write(out.Bytes())
		return exitOK
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	clear := isTerminal(e.stdout)
	var prev *telemetry.StatsResponse
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for n := 0; count == 0 || n < count; n++ {
		if n > 0 {
			select {
			case <-ctx.Done():
				return exitOK
			case <-tick.C:
			}
		}
		body, err := fetch(client, url)
		if err != nil {
			return e.fail("stats", err)
		}
		var cur telemetry.StatsResponse
		if err := json.Unmarshal(body, &cur); err != nil {
			return e.fail("stats", fmt.Errorf("%s: %w", url, err))
		}
		var frame bytes.Buffer
		if clear {
			frame.WriteString("\x1b[H\x1b[2J")
		}
		fmt.Fprintf(&frame, "ecnswitch %s   switch time %.3fs   every %v\n\n", addr, float64(cur.TimeNS)/1e9, interval)
		renderStats(&frame, &cur, prev)
		e.stdout.Write(frame.Bytes())
		prev = &cur
	}
	return exitOK
}

func fetch(client *http.Client, url string) ([]byte, error) {
	res, err := client.Get(url)
	if err != nil {
		return nil, fmt.Errorf("%w (is ecnswitch run going, with telemetry on this address?)", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, res.Status)
	}
	return body, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// renderStats writes a snapshot as tables: ports, then each port's queues,
// then markers and pools. With a previous snapshot it adds rates.
func renderStats(w io.Writer, cur, prev *telemetry.StatsResponse) {
	dt := 0.0
	if prev != nil && cur.TimeNS > prev.TimeNS && len(prev.Ports) == len(cur.Ports) {
		dt = float64(cur.TimeNS-prev.TimeNS) / 1e9
	} else {
		prev = nil
	}
	rate := func(now, before uint64) string {
		if dt == 0 {
			return "-"
		}
		return human(float64(now-before) / dt)
	}
	bits := func(now, before uint64) string {
		if dt == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f", float64(now-before)*8/dt/1e6)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "PORT\tRX pkts\tRX pps\tRX Mbit/s\tTX pkts\tTX pps\tTX Mbit/s\tDROPS\tBUFFERED\tPEAK\t")
	for i, p := range cur.Ports {
		var pp node.PortStats
		if prev != nil {
			pp = prev.Ports[i]
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%s\t%s\t%d\t%s\t%s\t\n", p.Name,
			p.RxPackets, rate(p.RxPackets, pp.RxPackets), bits(p.RxBytes, pp.RxBytes),
			p.TxPackets, rate(p.TxPackets, pp.TxPackets), bits(p.TxBytes, pp.TxBytes),
			sum(p.Drops), config.FormatSize(p.Bytes), config.FormatSize(p.Peak))
	}
	tw.Flush()
	for i, p := range cur.Ports {
		fmt.Fprintf(w, "\n%s\n", p.Name)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "QUEUE\tENQUEUED\tENQ pps\tDEQ pps\tMARKED\tMARK/s\tDROPS\tBYTES\tPEAK\tLIMIT\t")
		for q, qs := range p.Queues {
			var pq node.QueueStats
			if prev != nil && q < len(prev.Ports[i].Queues) {
				pq = prev.Ports[i].Queues[q]
			}
			marked, pmarked := qs.MarkedEnq+qs.MarkedDeq, pq.MarkedEnq+pq.MarkedDeq
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%d\t%s\t%d\t%s\t%s\t%s\t\n", q,
				qs.Enqueued, rate(qs.Enqueued, pq.Enqueued), rate(qs.Dequeued, pq.Dequeued),
				marked, rate(marked, pmarked), sum(qs.Drops),
				config.FormatSize(qs.Bytes), config.FormatSize(qs.Peak), config.FormatSize(qs.Threshold))
		}
		tw.Flush()
		if len(p.Drops) > 0 {
			fmt.Fprintf(w, "  drops: %s\n", reasons(p.Drops))
		}
		if d := p.Device; d != nil {
			fmt.Fprintf(w, "  device: rx %d, kernel dropped %d (rx ring full %d; fill ring found empty %d times), oversize %d; "+
				"tx %d (%d live, %d fallbacks), completed %d, errors %d; violations %d\n",
				d.RxPackets, d.RxDropped, d.RxRingFull, d.RxFillEmpty, d.RxOversize,
				d.TxPackets, d.LiveFrames, d.LiveFallbacks, d.TxCompleted, d.TxErrors, d.Violations)
		}
		if len(p.Markers) > 0 {
			var ms []string
			for _, m := range p.Markers {
				ms = append(ms, fmt.Sprintf("%s %d marks, %d drops", m.Name, m.Marks, m.Drops))
			}
			fmt.Fprintf(w, "  markers: %s\n", strings.Join(ms, "; "))
		}
	}
	if len(cur.Pools) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "POOL\tBYTES\tSIZE\tUSED\t")
		for i, p := range cur.Pools {
			name := fmt.Sprint(i)
			if i < len(cur.PoolNames) {
				name = cur.PoolNames[i]
			}
			used := 0.0
			if p.Size > 0 {
				used = 100 * float64(p.Bytes) / float64(p.Size)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f%%\t\n", name, config.FormatSize(p.Bytes), config.FormatSize(p.Size), used)
		}
		tw.Flush()
	}
}

func sum(m map[string]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}

func reasons(m map[string]uint64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// human formats a rate with a k/M suffix.
func human(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}
