package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ecnswitch/ecnswitch/config"
	"github.com/ecnswitch/ecnswitch/node"
)

// controlTimeout bounds one call to the runtime control API: a change is
// applied by the workers between two passes, microseconds away.
const controlTimeout = 15 * time.Second

// setCommand is `ecnswitch set`: change a running switch's settings.
func setCommand() *command {
	return &command{
		name: "set", synopsis: "port P [queue Q] KEY=VALUE… [--socket PATH] [--json]", args: -1,
		summary: "change a running switch's markers, weights, rates or α, without a restart",
		help: "Change settings of the running switch through its control socket (control.socket),\n" +
			"without a restart. The values are validated exactly as the config file's are, and the\n" +
			"port's worker applies them between two batches; the switch logs each change, and\n" +
			"'ecnswitch get' and /stats show the running values. KEY is one of:\n\n" +
			"  a marker's parameter   k=60KB, kmin=20KB, target=500us: of the port's one marker that\n" +
			"                         has it, or NAME.k=60KB for the marker called NAME (its name:,\n" +
			"                         else its scheme)\n" +
			"  a marker chain         markers.enqueue='[{scheme: red, kmin: 20KB, kmax: 60KB}]'\n" +
			"                         (YAML, as in the file; markers.dequeue likewise; [] removes it)\n" +
			"  the port's shaper      rate=500Mbit, bucket=3KB\n" +
			"  a queue's              with queue Q: weight=4, quantum=3000, alpha=0.5\n" +
			"  every queue's α        buffer.alpha=0.5\n" +
			"  any key of the port    as the file writes it under ports[i]: scheduler.queues.1.weight=4\n\n" +
			"VALUE is YAML, as in the file (60KB, 995Mbit, 100us, 0.5; a bare size is bytes: k=30\n" +
			"is 30 bytes); an empty VALUE removes the key, so that its default applies (red.k=\n" +
			"red.kmin=20KB red.kmax=60KB). What the switch fixes when it starts (queue counts,\n" +
			"scheduler kind, a queue's strict flag, MTU, buffer reserve and cap, ports, workers) is\n" +
			"refused, naming the key; nothing is then changed. SIGHUP makes the file's settings\n" +
			"the running ones again.",
		setup: setSetup,
	}
}

func setSetup(fs *flag.FlagSet) action {
	socket := fs.String("socket", config.DefaultControlSocket, "the switch's control socket (control.socket), a `PATH`")
	asJSON := fs.Bool("json", false, "print the changes as JSON")
	return func(e *env, pos []string) int {
		req, err := parseSetArgs(pos)
		if err != nil {
			return e.usageError("set", "%v (Run 'ecnswitch set --help' for the keys)", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), controlTimeout)
		defer cancel()
		recs, err := node.Client{Socket: *socket}.Set(ctx, req)
		if err != nil {
			return e.fail("set", err)
		}
		if *asJSON {
			return printJSON(e, "set", recs)
		}
		if len(recs) == 0 {
			fmt.Fprintln(e.stdout, "nothing changed: the switch runs with these values already")
			return exitOK
		}
		fmt.Fprintf(e.stdout, "generation %d\n", recs[0].Generation)
		for _, r := range recs {
			fmt.Fprintf(e.stdout, "  %s: %s → %s\n", r.Key, r.Old, r.New)
		}
		return exitOK
	}
}

// parseSetArgs parses `port P [queue Q] KEY=VALUE…`.
func parseSetArgs(pos []string) (node.SetRequest, error) {
	var req node.SetRequest
	if len(pos) < 2 || pos[0] != "port" {
		return req, fmt.Errorf("want port P [queue Q] KEY=VALUE…")
	}
	req.Port, pos = pos[1], pos[2:]
	if len(pos) >= 1 && pos[0] == "queue" {
		if len(pos) < 2 {
			return req, fmt.Errorf("queue: want a queue number")
		}
		q, err := strconv.Atoi(pos[1])
		if err != nil || q < 0 {
			return req, fmt.Errorf("queue %q: want a queue number, 0 or more", pos[1])
		}
		req.Queue, pos = &q, pos[2:]
	}
	if _, err := config.ParseAssignments(pos); err != nil {
		return req, err
	}
	req.Set = pos
	return req, nil
}

// getCommand is `ecnswitch get`: a running switch's settings.
func getCommand() *command {
	return &command{
		name: "get", synopsis: "[port P] [--socket PATH] [--json]", args: 2,
		summary: "print a running switch's settings: rates, queues, markers, and how they changed",
		help: "Print the settings the running switch uses now, from its control socket\n" +
			"(control.socket): each port's rate and bucket, its queues' weights, quanta and α,\n" +
			"its markers and their parameters as written (absent ones take the scheme's\n" +
			"defaults), and the changes made since it started ('ecnswitch set', SIGHUP).",
		setup: getSetup,
	}
}

func getSetup(fs *flag.FlagSet) action {
	socket := fs.String("socket", config.DefaultControlSocket, "the switch's control socket (control.socket), a `PATH`")
	asJSON := fs.Bool("json", false, "print the API's JSON")
	return func(e *env, pos []string) int {
		port := ""
		switch {
		case len(pos) == 0:
		case len(pos) == 2 && pos[0] == "port":
			port = pos[1]
		default:
			return e.usageError("get", "want [port P], not %q", strings.Join(pos, " "))
		}
		ctx, cancel := context.WithTimeout(context.Background(), controlTimeout)
		defer cancel()
		rc, err := node.Client{Socket: *socket}.Running(ctx)
		if err != nil {
			return e.fail("get", err)
		}
		if port != "" {
			i := slices.IndexFunc(rc.Ports, func(p config.PortSettings) bool { return p.Name == port })
			if n, err := strconv.Atoi(port); i < 0 && err == nil && n >= 0 && n < len(rc.Ports) {
				i = n
			}
			if i < 0 {
				names := make([]string, len(rc.Ports))
				for j, p := range rc.Ports {
					names[j] = p.Name
				}
				return e.fail("get", fmt.Errorf("port %q: no such port; ports are %s", port, strings.Join(names, ", ")))
			}
			rc.Ports = rc.Ports[i : i+1]
		}
		if *asJSON {
			return printJSON(e, "get", rc)
		}
		writeRunning(e.stdout, rc)
		return exitOK
	}
}

// writeRunning prints a switch's running settings as tables.
func writeRunning(w io.Writer, rc node.RunningConfig) {
	fmt.Fprintf(w, "generation %d", rc.Generation)
	if rc.File != "" {
		fmt.Fprintf(w, " (from %s", rc.File)
		if rc.Generation > 0 {
			fmt.Fprint(w, ", then changed")
		}
		fmt.Fprint(w, ")")
	}
	fmt.Fprintln(w)
	for _, p := range rc.Ports {
		rate := "unshaped"
		if p.Rate > 0 {
			rate = config.FormatRate(p.Rate) + ", bucket " + config.FormatSize(p.Bucket)
		}
		fmt.Fprintf(w, "\nport %s: rate %s, scheduler %s\n", p.Name, rate, p.Scheduler)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  QUEUE\tLEVEL\tWEIGHT\tQUANTUM\tALPHA\tCAP\tRESERVE")
		for q, qs := range p.Queues {
			level, quantum, alpha, cp := "weighted", "-", "-", "-"
			if qs.Strict {
				level = "strict"
			}
			if qs.Quantum > 0 {
				quantum = config.FormatSize(qs.Quantum)
			}
			if qs.Alpha > 0 {
				alpha = strconv.FormatFloat(qs.Alpha, 'g', -1, 64)
			}
			if qs.Cap > 0 {
				cp = config.FormatSize(qs.Cap)
			}
			fmt.Fprintf(tw, "  %d\t%s\t%d\t%s\t%s\t%s\t%s\n", q, level, qs.Weight, quantum, alpha, cp, config.FormatSize(qs.Reserve))
		}
		tw.Flush()
		if len(p.Markers) == 0 {
			fmt.Fprintln(w, "  markers: none")
			continue
		}
		fmt.Fprintln(w, "  markers:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, m := range p.Markers {
			keys := make([]string, 0, len(m.Params))
			for k := range m.Params {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			params := make([]string, len(keys))
			for i, k := range keys {
				params[i] = k + "=" + m.Params[k]
			}
			name := m.Name
			if m.Name != m.Scheme {
				name += " (" + m.Scheme + ")"
			}
			fmt.Fprintf(tw, "    %s\t%s\t%s\n", m.Stage, name, strings.Join(params, " "))
		}
		tw.Flush()
	}
	if len(rc.History) > 0 {
		fmt.Fprintln(w, "\nchanges:")
		for _, h := range rc.History {
			fmt.Fprintf(w, "  %d  %s  %s\n       %s: %s → %s\n", h.Generation, h.Time.Local().Format("2006-01-02 15:04:05"), h.By, h.Key, h.Old, h.New)
		}
	}
}

// printJSON prints v as indented JSON.
func printJSON(e *env, cmd string, v any) int {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return e.fail(cmd, err)
	}
	fmt.Fprintf(e.stdout, "%s\n", b)
	return exitOK
}
