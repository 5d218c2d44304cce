package main

import (
	"context"
	"encoding/json"
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

const captureUsage = `usage: ecnswitch capture start --port P [flags]   start capturing on a port of the running switch
       ecnswitch capture stop ID [--socket S]     stop capture ID and print its final counters
       ecnswitch capture status [--socket S]      list the running captures

The commands talk to the switch's control socket (control.socket, default
` + config.DefaultControlSocket + `, mode 0600: the switch's user only, or 0660
with control.group); files are written by the switch, inside its capture.dir.
'ecnswitch capture start -h' lists start's flags.`

func captureCmd(e *env, args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "start":
			return captureStart(e, args[1:])
		case "stop":
			return captureStop(e, args[1:])
		case "status":
			return captureStatus(e, args[1:])
		}
	}
	fmt.Fprintln(e.stderr, captureUsage)
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		return exitOK
	}
	return exitUsage
}

// optInt is an integer flag that may be left unset.
type optInt struct{ v *int }

func (o *optInt) String() string {
	if o.v == nil {
		return ""
	}
	return strconv.Itoa(*o.v)
}

func (o *optInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("not an integer")
	}
	o.v = &n
	return nil
}

// captureFlags adds the flags every capture subcommand has.
func captureFlags(fs *flag.FlagSet) (socket *string, asJSON *bool) {
	socket = fs.String("socket", config.DefaultControlSocket, "the switch's control socket (control.socket)")
	asJSON = fs.Bool("json", false, "print the API's JSON instead of a table")
	return socket, asJSON
}

// flagOf names the flag of a capture.Spec key, for local validation errors.
var flagOf = strings.NewReplacer("max_bytes", "max-bytes", "max_files", "max-files")

func captureStart(e *env, args []string) int {
	fs, _ := e.flagSet("capture start", "--port P [flags]",
		"Start a capture on a port of the running switch. The switch writes the file, inside\n"+
			"its capture.dir (default "+config.DefaultCaptureDir+"); pcapng carries a comment\n"+
			"per packet naming the marker, value and threshold, or the drop reason.")
	socket, asJSON := captureFlags(fs)
	port := fs.String("port", "", "port name (or index) of the switch (required)")
	direction := fs.String("direction", "", "ingress | egress | drops (default: egress; drops with --filter dropped)")
	filter := fs.String("filter", "all", "all | marked (egress packets the switch set CE on) | dropped | trimmed (trimmed packets, egress or drops)")
	var queue, dscp optInt
	fs.Var(&queue, "queue", "only this egress queue (default: any)")
	fs.Var(&dscp, "dscp", "only IP packets with this DSCP, 0-63 (default: any)")
	format := fs.String("format", "pcapng", "pcapng | pcap")
	path := fs.String("path", "", "file name inside the switch's capture.dir (default: PORT-DIRECTION-FILTER-YYYYMMDD-HHMMSS.FORMAT)")
	snaplen := fs.Int("snaplen", capture.DefaultSnapLen, "bytes kept of each frame")
	maxBytes := fs.String("max-bytes", "", "rotate to a new file before one passes this size (100MB, 1GiB); 0 never rotates (default 64MiB)")
	var maxFiles optInt
	fs.Var(&maxFiles, "max-files", "keep only the newest N files; 0 keeps all (default 8)")
	ring := fs.Int("ring", capture.DefaultRing, "ring slots between the port's worker and the writer, a power of two")
	if code, ok := parse(fs, args, 0); !ok {
		return code
	}
	if *port == "" {
		fmt.Fprintln(e.stderr, "ecnswitch capture start: --port is required")
		fs.Usage()
		return exitUsage
	}
	s := capture.Spec{
		Port: *port, Direction: capture.Direction(*direction), Filter: capture.Filter(*filter),
		Queue: queue.v, DSCP: dscp.v, Format: capture.Format(*format), Path: *path,
		SnapLen: *snaplen, Ring: *ring,
	}
	// Left out: the defaults; 0: no limit, as in the config file.
	if *maxBytes != "" {
		mb, err := config.ParseSize(*maxBytes)
		if err != nil {
			fmt.Fprintf(e.stderr, "ecnswitch capture start: --max-bytes: %v\n", err)
			return exitUsage
		}
		if s.MaxBytes = mb; mb == 0 {
			s.MaxBytes = capture.Unlimited
		}
	}
	if maxFiles.v != nil {
		if s.MaxFiles = *maxFiles.v; s.MaxFiles == 0 {
			s.MaxFiles = capture.Unlimited
		}
	}
	if s.Path == "" {
		s = config.CaptureDefaults(s)
		ext := filepath.Ext(s.Path)
		s.Path = strings.TrimSuffix(s.Path, ext) + time.Now().Format("-20060102-150405") + ext
	}
	if err := s.Validate(); err != nil {
		fmt.Fprintf(e.stderr, "ecnswitch capture start: --%s\n", flagOf.Replace(err.Error()))
		return exitUsage
	}

	ctx, cancel := context.WithTimeout(context.Background(), captureTimeout)
	defer cancel()
	st, err := captureClient(*socket).Start(ctx, s)
	if err != nil {
		return e.fail("capture start", apiError(*socket, err))
	}
	if *asJSON {
		return printJSON(e, st)
	}
	fmt.Fprintf(e.stdout, "capture %d started on port %s: %s\nfile     %s\n", st.ID, st.Spec.Port, describeSpec(st.Spec), st.File)
	stop := fmt.Sprintf("ecnswitch capture stop %d", st.ID)
	if *socket != config.DefaultControlSocket {
		stop += " --socket " + *socket
	}
	fmt.Fprintf(e.stdout, "stop it: %s\n", stop)
	return exitOK
}

func captureStop(e *env, args []string) int {
	fs, _ := e.flagSet("capture stop", "ID [--socket S] [--json]",
		"Stop a capture of the running switch: the switch writes what it still holds, closes\n"+
			"the file and returns the final counters.")
	socket, asJSON := captureFlags(fs)
	pos, code, ok := parseInterspersed(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(e.stderr, "ecnswitch capture stop: want one capture ID (ecnswitch capture status lists them)")
		fs.Usage()
		return exitUsage
	}
	id, err := strconv.Atoi(pos[0])
	if err != nil || id < 1 {
		fmt.Fprintf(e.stderr, "ecnswitch capture stop: ID %q is not a capture ID (a number from capture start or status)\n", pos[0])
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), captureTimeout)
	defer cancel()
	st, err := captureClient(*socket).Stop(ctx, id)
	if err != nil {
		return e.fail("capture stop", apiError(*socket, err))
	}
	if *asJSON {
		return printJSON(e, st)
	}
	renderCaptures(e.stdout, []capture.Status{st})
	return exitOK
}

func captureStatus(e *env, args []string) int {
	fs, _ := e.flagSet("capture status", "[--socket S] [--json]", "List the running captures of the running switch with their counters.")
	socket, asJSON := captureFlags(fs)
	if code, ok := parse(fs, args, 0); !ok {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), captureTimeout)
	defer cancel()
	sts, err := captureClient(*socket).Status(ctx)
	if err != nil {
		return e.fail("capture status", apiError(*socket, err))
	}
	if *asJSON {
		return printJSON(e, sts)
	}
	if len(sts) == 0 {
		fmt.Fprintln(e.stdout, "no captures running")
		return exitOK
	}
	renderCaptures(e.stdout, sts)
	return exitOK
}

// parseInterspersed parses flags that may come before or after positional
// arguments (stop 3 --socket S, or stop --socket S 3) and returns the
// positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) (pos []string, code int, ok bool) {
	for {
		if err := fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				return nil, exitOK, false
			}
			return nil, exitUsage, false
		}
		if fs.NArg() == 0 {
			return pos, exitOK, true
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
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

func printJSON(e *env, v any) int {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return e.fail("capture", err)
	}
	fmt.Fprintf(e.stdout, "%s\n", b)
	return exitOK
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
