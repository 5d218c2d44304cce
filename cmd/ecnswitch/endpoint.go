package main

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/ecnswitch/ecnswitch/transport"
	"github.com/ecnswitch/ecnswitch/transport/udp"
)

// endpointCmd runs transport/udp's endpoints on this host: "recv"
// acknowledges flows on a UDP port, "send" sends flows to a receiver
// under DX, DCTCP or ECN* and writes their logs. On a testbed, run each in
// a host's namespace (ip netns exec NAME ecnswitch endpoint ...).
func endpointCmd(e *env, args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "recv":
			return endpointRecv(e, args[1:])
		case "send":
			return endpointSend(e, args[1:])
		}
	}
	fmt.Fprintln(e.stderr, "usage: ecnswitch endpoint recv [flags] | send --to ADDR:PORT [flags]\n\n"+
		"Run transport/udp's window-based endpoints (DX, DCTCP, ECN*; see the README's \"Timestamps and DX\"):\n"+
		"recv acknowledges any number of flows on one UDP port; send sends flows to it and logs each\n"+
		"flow's window, measured queueing delay, RTT and marks. On a testbed, run each in a host:\n"+
		"  ip netns exec NS-h5 ecnswitch endpoint recv --listen :9000\n"+
		"  ip netns exec NS-h1 ecnswitch endpoint send --to H5-ADDR:9000 --cc dx --flows 2 --log dx.csv")
	return exitUsage
}

func endpointRecv(e *env, args []string) int {
	fs, _ := e.flagSet("endpoint recv", "[flags]", "Acknowledge transport/udp flows on a UDP port until Ctrl-C or --duration, then print what each flow delivered.")
	listen := fs.String("listen", ":9000", "UDP address to receive on")
	ackEvery := fs.Int("ack-every", 0, fmt.Sprintf("most data packets one ACK covers (default %d)", udp.DefaultAckEvery))
	ackDelay := fs.Duration("ack-delay", 0, "how long the ACK of one packet may wait for the flow's next (0: none)")
	duration := fs.Duration("duration", 0, "stop after this long (0: at Ctrl-C)")
	if code, ok := parse(fs, args, 0); !ok {
		return code
	}
	if *duration < 0 {
		fmt.Fprintf(e.stderr, "ecnswitch endpoint recv: --duration %v: want ≥ 0\n", *duration)
		return exitUsage
	}
	addr, err := net.ResolveUDPAddr("udp", *listen)
	if err != nil {
		fmt.Fprintf(e.stderr, "ecnswitch endpoint recv: --listen %q: %v\n", *listen, err)
		return exitUsage
	}
	c, err := net.ListenUDP("udp", addr)
	if err != nil {
		return e.fail("endpoint recv", err)
	}
	defer c.Close()
	conn, err := udp.Prepare(c, udp.NotECT)
	if err != nil {
		return e.fail("endpoint recv", err)
	}
	r, err := udp.NewReceiver(conn, udp.ReceiverConfig{AckEvery: *ackEvery, AckDelay: *ackDelay})
	if err != nil {
		fmt.Fprintln(e.stderr, "ecnswitch endpoint recv:", err)
		return exitUsage
	}
	ctx, stop := endpointContext(*duration)
	defer stop()
	fmt.Fprintf(e.stdout, "receiving on %s\n", c.LocalAddr())
	if err := r.Run(ctx); err != nil {
		return e.fail("endpoint recv", err)
	}
	// Goodput over each flow's own time, its first packet to its last.
	fmt.Fprintf(e.stdout, "%6s %10s %12s %10s %8s %8s %10s %10s\n", "flow", "packets", "Mbit/s", "CE", "ACKs", "dups", "reordered", "unstamped")
	for _, f := range r.Flows() {
		mbps := 0.0
		if f.Last > f.First {
			mbps = float64(f.Bytes) * 8 / float64(f.Last-f.First) * 1e3
		}
		fmt.Fprintf(e.stdout, "%6d %10d %12.1f %10d %8d %8d %10d %10d\n", f.Flow, f.Packets, mbps,
			f.CE, f.Acks, f.Duplicates, f.OutOfOrder, f.Unstamped)
	}
	if m := r.Malformed(); m > 0 {
		fmt.Fprintf(e.stdout, "%d datagrams were not transport/udp data and were dropped\n", m)
	}
	return exitOK
}

func endpointSend(e *env, args []string) int {
	fs, _ := e.flagSet("endpoint send", "--to ADDR:PORT [flags]", "Send transport/udp flows to a receiver for --duration, each from its own socket, and print each flow's counts; --log writes every flow's log as CSV.")
	to := fs.String("to", "", "the receiver's UDP address (required)")
	ccName := fs.String("cc", "dx", "congestion control: dx, dctcp or ecn*")
	flows := fs.Int("flows", 1, "how many flows")
	first := fs.Int("first-flow", 1, "the first flow's number; flows to one receiver need distinct numbers, so give each sending host its own range")
	rate := fs.Int64("rate", 1e9, "pace each flow at this many bit/s on the wire, as its host link would (0: no pacing)")
	headroom := fs.Duration("headroom", 50*time.Microsecond, "DX's headroom: queueing delays below it are no congestion (004 §V-B)")
	dscp := fs.Int("dscp", 0, "DSCP of the data (0..63)")
	duration := fs.Duration("duration", 10*time.Second, "how long the flows send")
	logPath := fs.String("log", "", "write each flow's log (one line a millisecond) to this CSV file")
	if code, ok := parse(fs, args, 0); !ok {
		return code
	}
	cc, err := transport.ParseKind(*ccName)
	bad := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "ecnswitch endpoint send: "+format+"\n", a...)
		return exitUsage
	}
	switch {
	case err != nil:
		return bad("--cc: %v", err)
	case *to == "":
		return bad("--to: which receiver? (ADDR:PORT of 'ecnswitch endpoint recv')")
	case *flows < 1 || *flows > 1000:
		return bad("--flows %d: want 1..1000", *flows)
	case *first < 1 || *first+*flows-1 > 1<<31:
		return bad("--first-flow %d: want 1..%d", *first, 1<<31-*flows+1)
	case *rate < 0:
		return bad("--rate %d: want ≥ 0 bit/s", *rate)
	case *dscp < 0 || *dscp > 63:
		return bad("--dscp %d: want 0..63", *dscp)
	case *duration <= 0:
		return bad("--duration %v: want > 0", *duration)
	}
	dst, err := net.ResolveUDPAddr("udp", *to)
	if err != nil {
		return bad("--to %q: %v", *to, err)
	}
	var senders []*udp.Sender
	for i := range *flows {
		c, err := net.DialUDP("udp", nil, dst)
		if err != nil {
			return e.fail("endpoint send", err)
		}
		defer c.Close()
		conn, err := udp.Prepare(c, uint8(*dscp)<<2|udp.ECT0)
		if err != nil {
			return e.fail("endpoint send", err)
		}
		s, err := udp.NewSender(conn, nil, udp.Config{Flow: uint32(*first + i), CC: cc, Headroom: *headroom, Rate: *rate})
		if err != nil {
			return bad("%v", err)
		}
		senders = append(senders, s)
	}
	ctx, stop := endpointContext(*duration)
	defer stop()
	errs := make([]error, len(senders))
	var wg sync.WaitGroup
	for i, s := range senders {
		wg.Go(func() { errs[i] = s.Run(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return e.fail("endpoint send", err)
	}
	fmt.Fprintf(e.stdout, "%6s %10s %10s %10s %10s %10s %12s %12s %10s\n", "flow", "sent", "acked", "resent", "timeouts", "CE", "mean cwnd", "mean queue", "mean RTT")
	for i, s := range senders {
		st := s.Stats()
		var cw, q, rtt float64
		log := s.Log()
		for _, l := range log {
			cw, q, rtt = cw+l.Cwnd, q+float64(l.Queue), rtt+float64(l.RTT)
		}
		k := float64(max(len(log), 1))
		fmt.Fprintf(e.stdout, "%6d %10d %10d %10d %10d %10d %12.1f %10.1fµs %8.1fµs\n", *first+i, st.Sent, st.Acked, st.Retrans, st.Timeouts, st.Marks,
			cw/k, q/k/1e3, rtt/k/1e3)
	}
	if *logPath != "" {
		if err := writeFlowLogs(*logPath, *first, senders); err != nil {
			return e.fail("endpoint send", err)
		}
		fmt.Fprintf(e.stdout, "flow logs in %s\n", *logPath)
	}
	return exitOK
}

// endpointContext ends at Ctrl-C, SIGTERM or, when d > 0, after d.
func endpointContext(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if d <= 0 {
		return ctx, stop
	}
	tctx, cancel := context.WithTimeout(ctx, d)
	return tctx, func() { cancel(); stop() }
}

// writeFlowLogs writes every sender's log to path as CSV, a line a sample.
func writeFlowLogs(path string, first int, senders []*udp.Sender) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write([]string{"flow", "t_ns", "cwnd_pkts", "queue_ns", "rtt_ns", "marks", "acked", "resent"})
	for i, s := range senders {
		for _, l := range s.Log() {
			w.Write([]string{strconv.Itoa(first + i), strconv.FormatInt(l.T, 10), strconv.FormatFloat(l.Cwnd, 'f', 3, 64),
				strconv.FormatInt(l.Queue, 10), strconv.FormatInt(l.RTT, 10), strconv.FormatUint(l.Marks, 10),
				strconv.FormatUint(l.Acked, 10), strconv.FormatUint(l.Retrans, 10)})
		}
	}
	w.Flush()
	return errors.Join(w.Error(), f.Close())
}
