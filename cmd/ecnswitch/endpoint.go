package main

import (
	"context"
	"encoding/csv"
	"errors"
	"flag"
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

// endpointCommand is `ecnswitch endpoint`: transport/udp's endpoints on
// this host. "recv" acknowledges flows on a UDP port, "send" sends flows
// to a receiver under DX, DCTCP or ECN* and writes their logs. On a
// testbed, run each in a host's namespace (ip netns exec NAME ecnswitch
// endpoint ...).
func endpointCommand() *command {
	return &command{
		name: "endpoint", synopsis: "recv [flags] | send --to ADDR:PORT [flags]",
		summary: "DX, DCTCP and ECN* endpoints over UDP (transport/udp): a receiver, and senders that log each flow",
		help: "Run transport/udp's window-based endpoints (DX, DCTCP, ECN*): recv acknowledges any\n" +
			"number of flows on one UDP port; send sends flows to it and logs each flow's window,\n" +
			"measured queueing delay, RTT and marks. On a testbed, run each in a host:\n" +
			"  ip netns exec NS-h5 ecnswitch endpoint recv --listen :9000\n" +
			"  ip netns exec NS-h1 ecnswitch endpoint send --to H5-ADDR:9000 --cc dx --flows 2 --log dx.csv",
		subs: []*command{
			{name: "recv", synopsis: "[flags]", summary: "acknowledge flows on a UDP port",
				help:  "Acknowledge transport/udp flows on a UDP port until Ctrl-C or --duration, then print what each flow delivered.",
				setup: endpointRecvSetup},
			{name: "send", synopsis: "--to ADDR:PORT [flags]", summary: "send flows to a receiver and log them",
				help: "Send transport/udp flows to a receiver for --duration, each from its own socket, and print each flow's counts;\n" +
					"--log writes every flow's log as CSV.",
				setup: endpointSendSetup},
		},
	}
}

func endpointRecvSetup(fs *flag.FlagSet) action {
	listen := fs.String("listen", ":9000", "UDP `ADDR:PORT` to receive on")
	ackEvery := fs.Int("ack-every", 0, fmt.Sprintf("most data packets one ACK covers (default %d)", udp.DefaultAckEvery))
	ackDelay := durationFlag(fs, "ack-delay", 0, "how long the ACK of one packet may wait for the flow's next (0: none)")
	duration := durationFlag(fs, "duration", 0, "stop after this long (0: at Ctrl-C)")
	return func(e *env, _ []string) int { return endpointRecv(e, *listen, *ackEvery, *ackDelay, *duration) }
}

func endpointRecv(e *env, listen string, ackEvery int, ackDelay, duration time.Duration) int {
	if duration < 0 {
		return e.usageError("endpoint recv", "--duration %v: want ≥ 0", duration)
	}
	addr, err := net.ResolveUDPAddr("udp", listen)
	if err != nil {
		return e.usageError("endpoint recv", "--listen %q: %v", listen, err)
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
	r, err := udp.NewReceiver(conn, udp.ReceiverConfig{AckEvery: ackEvery, AckDelay: ackDelay})
	if err != nil {
		return e.usageError("endpoint recv", "%v", err)
	}
	ctx, stop := endpointContext(duration)
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

func endpointSendSetup(fs *flag.FlagSet) action {
	f := sendFlags{rate: 1e9, headroom: 50 * time.Microsecond, duration: 10 * time.Second}
	fs.StringVar(&f.to, "to", "", "the receiver's UDP `ADDR:PORT` (required)")
	fs.StringVar(&f.cc, "cc", "dx", "congestion control: dx, dctcp or ecn*")
	fs.IntVar(&f.flows, "flows", 1, "how many flows")
	fs.IntVar(&f.first, "first-flow", 1, "the first flow's number; flows to one receiver need distinct numbers, so give each sending host its own range")
	fs.Var(rateValue{&f.rate}, "rate", "pace each flow at this rate on the wire, as its host link would (0: no pacing)")
	fs.Var(durationValue{&f.headroom}, "headroom", "DX's headroom: queueing delays below it are no congestion (004 §V-B)")
	fs.IntVar(&f.dscp, "dscp", 0, "DSCP of the data (0..63)")
	fs.Var(durationValue{&f.duration}, "duration", "how long the flows send")
	fs.StringVar(&f.log, "log", "", "write each flow's log (one line a millisecond) to this CSV `FILE`")
	return func(e *env, _ []string) int { return endpointSend(e, f) }
}

// sendFlags are the flags of endpoint send.
type sendFlags struct {
	to, cc, log        string
	flows, first, dscp int
	rate               int64 // bit/s
	headroom, duration time.Duration
}

func endpointSend(e *env, f sendFlags) int {
	cc, err := transport.ParseKind(f.cc)
	bad := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "ecnswitch endpoint send: "+format+"\n", a...)
		return exitUsage
	}
	switch {
	case err != nil:
		return bad("--cc: %v", err)
	case f.to == "":
		return bad("--to: which receiver? (ADDR:PORT of 'ecnswitch endpoint recv')")
	case f.flows < 1 || f.flows > 1000:
		return bad("--flows %d: want 1..1000", f.flows)
	case f.first < 1 || f.first+f.flows-1 > 1<<31:
		return bad("--first-flow %d: want 1..%d", f.first, 1<<31-f.flows+1)
	case f.dscp < 0 || f.dscp > 63:
		return bad("--dscp %d: want 0..63", f.dscp)
	case f.duration <= 0:
		return bad("--duration %v: want > 0", f.duration)
	}
	dst, err := net.ResolveUDPAddr("udp", f.to)
	if err != nil {
		return bad("--to %q: %v", f.to, err)
	}
	var senders []*udp.Sender
	for i := range f.flows {
		c, err := net.DialUDP("udp", nil, dst)
		if err != nil {
			return e.fail("endpoint send", err)
		}
		defer c.Close()
		conn, err := udp.Prepare(c, uint8(f.dscp)<<2|udp.ECT0)
		if err != nil {
			return e.fail("endpoint send", err)
		}
		s, err := udp.NewSender(conn, nil, udp.Config{Flow: uint32(f.first + i), CC: cc, Headroom: f.headroom, Rate: f.rate})
		if err != nil {
			return bad("%v", err)
		}
		senders = append(senders, s)
	}
	ctx, stop := endpointContext(f.duration)
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
		fmt.Fprintf(e.stdout, "%6d %10d %10d %10d %10d %10d %12.1f %10.1fµs %8.1fµs\n", f.first+i, st.Sent, st.Acked, st.Retrans, st.Timeouts, st.Marks,
			cw/k, q/k/1e3, rtt/k/1e3)
	}
	if f.log != "" {
		if err := writeFlowLogs(f.log, f.first, senders); err != nil {
			return e.fail("endpoint send", err)
		}
		fmt.Fprintf(e.stdout, "flow logs in %s\n", f.log)
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
