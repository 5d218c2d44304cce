package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ecnswitch/ecnswitch/capture"
	"github.com/ecnswitch/ecnswitch/config"
)

// captureTimeout bounds one call to the capture API; stop waits for the
// writer to empty its ring and close the file, which takes milliseconds.
const captureTimeout = 30 * time.Second

// captureCommand is `ecnswitch capture`: captures of a running switch,
// through its control socket.
func captureCommand() *command {
	return &command{
		name: "capture", synopsis: "start --port P [flags] | stop ID | status",
		summary: "capture a running switch's packets (e.g. --filter marked) to pcapng or pcap",
		help: "The commands talk to the switch's control socket (control.socket, default\n" +
			config.DefaultControlSocket + ", mode 0600: the switch's user only, or 0660\n" +
			"with control.group); files are written by the switch, inside its capture.dir.",
		subs: []*command{
			{name: "start", synopsis: "--port P [flags]", summary: "start capturing on a port of the running switch",
				help: "Start a capture on a port of the running switch. The switch writes the file, inside\n" +
					"its capture.dir (default " + config.DefaultCaptureDir + "); pcapng carries a comment\n" +
					"per packet naming the marker, value and threshold, or the drop reason, and its\n" +
					"section header the switch's build, kernel and CPU model.",
				setup: captureStartSetup},
			{name: "stop", synopsis: "ID [--socket PATH] [--json]", summary: "stop a capture and print its final counters", args: -1,
				help: "Stop a capture of the running switch: the switch writes what it still holds, closes\n" +
					"the file and returns the final counters.",
				setup: captureStopSetup},
			{name: "status", synopsis: "[--socket PATH] [--json]", summary: "list the running captures",
				help: "List the running captures of the running switch with their counters.", setup: captureStatusSetup},
		},
	}
}

// captureFlags adds the flags every capture subcommand has.
func captureFlags(fs *flag.FlagSet) (socket *string, asJSON *bool) {
	socket = fs.String("socket", config.DefaultControlSocket, "the switch's control socket (control.socket), a `PATH`")
	asJSON = fs.Bool("json", false, "print the API's JSON instead of a table")
	return socket, asJSON
}

// flagOf names the flag of a capture.Spec key, for local validation errors.
var flagOf = strings.NewReplacer("max_bytes", "max-bytes", "max_files", "max-files")

func captureStartSetup(fs *flag.FlagSet) action {
	socket, asJSON := captureFlags(fs)
	port := fs.String("port", "", "port `NAME` (or index) of the switch (required)")
	direction := fs.String("direction", "", "ingress | egress | drops (default: egress; drops with --filter dropped)")
	filter := fs.String("filter", "all", "all | marked (egress packets the switch set CE on) | dropped | trimmed (trimmed packets, egress or drops)")
	var queue, dscp optInt
	fs.Var(&queue, "queue", "only this egress queue (default: any)")
	fs.Var(&dscp, "dscp", "only IP packets with this DSCP, 0-63 (default: any)")
	format := fs.String("format", "pcapng", "pcapng | pcap")
	path := fs.String("path", "", "`FILE` name inside the switch's capture.dir (default: PORT-DIRECTION-FILTER-YYYYMMDD-HHMMSS.FORMAT)")
	snaplen := sizeFlag(fs, "snaplen", capture.DefaultSnapLen, "bytes kept of each frame")
	maxBytes := &sizeValue{n: new(int64)}
	fs.Var(maxBytes, "max-bytes", "rotate to a new file before one passes this size (100MB, 1GiB); 0 never rotates (default 64MiB)")
	var maxFiles optInt
	fs.Var(&maxFiles, "max-files", "keep only the newest N files; 0 keeps all (default 8)")
	ring := fs.Int("ring", capture.DefaultRing, "ring slots between the port's worker and the writer, a power of two")
	return func(e *env, _ []string) int {
		if *port == "" {
			return e.usageError("capture start", "--port is required")
		}
		s := capture.Spec{
			Port: *port, Direction: capture.Direction(*direction), Filter: capture.Filter(*filter),
			Queue: queue.v, DSCP: dscp.v, Format: capture.Format(*format), Path: *path,
			SnapLen: int(*snaplen), Ring: *ring,
		}
		// Left out: the defaults; 0: no limit, as in the config file.
		if maxBytes.set {
			if s.MaxBytes = *maxBytes.n; s.MaxBytes == 0 {
				s.MaxBytes = capture.Unlimited
			}
		}
		if maxFiles.v != nil {
			if s.MaxFiles = *maxFiles.v; s.MaxFiles == 0 {
				s.MaxFiles = capture.Unlimited
			}
		}
		return captureStart(e, s, *socket, *asJSON)
	}
}

// captureStart asks the switch at socket to start the capture s.
func captureStart(e *env, s capture.Spec, socket string, asJSON bool) int {
	if s.Path == "" {
		s = config.CaptureDefaults(s)
		ext := filepath.Ext(s.Path)
		s.Path = strings.TrimSuffix(s.Path, ext) + time.Now().Format("-20060102-150405") + ext
	}
	if err := s.Validate(); err != nil {
		return e.usageError("capture start", "--%s", flagOf.Replace(err.Error()))
	}

	ctx, cancel := context.WithTimeout(context.Background(), captureTimeout)
	defer cancel()
	st, err := captureClient(socket).Start(ctx, s)
	if err != nil {
		return e.fail("capture start", apiError(socket, err))
	}
	if asJSON {
		return printJSON(e, "capture", st)
	}
	fmt.Fprintf(e.stdout, "capture %d started on port %s: %s\nfile     %s\n", st.ID, st.Spec.Port, describeSpec(st.Spec), st.File)
	stop := fmt.Sprintf("ecnswitch capture stop %d", st.ID)
	if socket != config.DefaultControlSocket {
		stop += " --socket " + socket
	}
	fmt.Fprintf(e.stdout, "stop it: %s\n", stop)
	return exitOK
}

func captureStopSetup(fs *flag.FlagSet) action {
	socket, asJSON := captureFlags(fs)
	return func(e *env, pos []string) int {
		if len(pos) != 1 {
			return e.usageError("capture stop", "want one capture ID (ecnswitch capture status lists them)")
		}
		return captureStop(e, pos[0], *socket, *asJSON)
	}
}

// captureStop asks the switch at socket to stop capture arg.
func captureStop(e *env, arg, socket string, asJSON bool) int {
	id, err := strconv.Atoi(arg)
	if err != nil || id < 1 {
		return e.usageError("capture stop", "ID %q is not a capture ID (a number from capture start or status)", arg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), captureTimeout)
	defer cancel()
	st, err := captureClient(socket).Stop(ctx, id)
	if err != nil {
		return e.fail("capture stop", apiError(socket, err))
	}
	if asJSON {
		return printJSON(e, "capture", st)
	}
	renderCaptures(e.stdout, []capture.Status{st})
	return exitOK
}

func captureStatusSetup(fs *flag.FlagSet) action {
	socket, asJSON := captureFlags(fs)
	return func(e *env, _ []string) int { return captureStatus(e, *socket, *asJSON) }
}

// captureStatus lists the captures of the switch at socket.
func captureStatus(e *env, socket string, asJSON bool) int {
	ctx, cancel := context.WithTimeout(context.Background(), captureTimeout)
	defer cancel()
	sts, err := captureClient(socket).Status(ctx)
	if err != nil {
		return e.fail("capture status", apiError(socket, err))
	}
	if asJSON {
		return printJSON(e, "capture", sts)
	}
	if len(sts) == 0 {
		fmt.Fprintln(e.stdout, "no captures running")
		return exitOK
	}
	renderCaptures(e.stdout, sts)
	return exitOK
}

func captureClient(socket string) capture.Client {
	return capture.Client{Socket: socket, HTTP: &http.Client{Timeout: captureTimeout}}
}

// apiError explains the ways of reaching no capture API: no socket at the
// path, a socket nobody serves, one whose mode leaves the caller out, or
// something that is not ecnswitch's.
func apiError(socket string, err error) error {
	var op *net.OpError
	switch {
	case errors.Is(err, syscall.EACCES):
		return fmt.Errorf("no permission to use the control socket %s: it is mode 0600 for the switch's user, or 0660 with control.group; run as that user or join the group: %w", socket, err)
	case errors.As(err, &op):
		return fmt.Errorf("no switch answers on %s (is 'ecnswitch run' going, with control.socket at this path?): %w", socket, op)
	case errors.Is(err, capture.ErrNotFound) && strings.Contains(err.Error(), "404 page not found"):
		return fmt.Errorf("%s serves no capture API (not ecnswitch, or one built without capture): %w", socket, err)
	}
	return err
}

// describeSpec says what a capture selects: "egress marked, queue 1, dscp
// 46, pcapng, snaplen 256".
func describeSpec(s capture.Spec) string {
	parts := []string{string(s.Direction) + " " + string(s.Filter)}
	if s.Queue != nil {
		parts = append(parts, fmt.Sprintf("queue %d", *s.Queue))
	}
	if s.DSCP != nil {
		parts = append(parts, fmt.Sprintf("dscp %d", *s.DSCP))
	}
	parts = append(parts, string(s.Format), fmt.Sprintf("snaplen %d", s.SnapLen))
	switch {
	case s.MaxBytes > 0 && s.MaxFiles > 0:
		parts = append(parts, "rotate at "+config.FormatSize(s.MaxBytes), fmt.Sprintf("keep %d", s.MaxFiles))
	case s.MaxBytes > 0:
		parts = append(parts, "rotate at "+config.FormatSize(s.MaxBytes), "keep all")
	default:
		parts = append(parts, "one file, no rotation")
	}
	return strings.Join(parts, ", ")
}

// renderCaptures prints captures as a table: what each selects, its
// counters (written + skipped because the ring was full + lost to a write
// error = every packet it selected) and its file.
func renderCaptures(w io.Writer, sts []capture.Status) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ID\tPORT\tSELECTS\tSTATE\tWRITTEN\tRING FULL\tLOST\tFILTERED OUT\tFILES\tBYTES\t")
	for _, st := range sts {
		state := "stopped"
		if st.Running {
			state = "running"
		}
		sel := string(st.Spec.Direction) + " " + string(st.Spec.Filter)
		if st.Spec.Queue != nil {
			sel += fmt.Sprintf(" q%d", *st.Spec.Queue)
		}
		if st.Spec.DSCP != nil {
			sel += fmt.Sprintf(" dscp%d", *st.Spec.DSCP)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t\n", st.ID, st.Spec.Port, sel, state,
			st.Written, st.SkippedRingFull, st.LostWriteError, st.FilteredOut, st.Files, humanBytes(st.Bytes))
	}
	tw.Flush()
	for _, st := range sts {
		fmt.Fprintf(w, "  %d: %s\n", st.ID, st.File)
		if st.Error != "" {
			fmt.Fprintf(w, "  %d: write error: %s\n", st.ID, st.Error)
		}
	}
}

// humanBytes prints n bytes to three significant digits: 980B, 45.2kB, 1.05GB.
func humanBytes(n uint64) string {
	v, units := float64(n), []string{"B", "kB", "MB", "GB", "TB"}
	i := 0
	for ; v >= 999.5 && i < len(units)-1; i++ {
		v /= 1000
	}
	if i == 0 {
		return fmt.Sprintf("%dB", n)
	}
	return strconv.FormatFloat(v, 'g', 3, 64) + units[i]
}
