package udp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/ecnswitch/ecnswitch/timestamp"
)

// Defaults and limits of NDPConfig and NDPReceiverConfig.
const (
	// DefaultNDPWindow is the first window, in packets: about a
	// bandwidth-delay product of the testbed's 1 Gbit/s links (NDP sizes
	// it so), and transport.InitWindow, which the window laws
	// start from.
	DefaultNDPWindow = 10
	// DefaultPullBurst is how many pulls a receiver sends back to back
	// after a pause (its pacer's bucket).
	DefaultPullBurst = 2
	// MaxNDPPackets is the longest message, in packets.
	MaxNDPPackets = maxNDPPackets
)

// NDPConfig is one NDP sender's message.
type NDPConfig struct {
	Flow uint32 // the message's number at the receiver, unique
	// Packets is the message's length in packets, 1 to MaxNDPPackets;
	// every one carries Size bytes of UDP payload.
	Packets uint64
	// Size is the UDP payload of every data datagram, HeaderLen to 65507
	// bytes; default DefaultSize. A switch that trims must keep at least
	// HeaderLen of it (its default keeps 64 bytes).
	Size int
	// Window is the first window, the packets sent before any pull;
	// default DefaultNDPWindow.
	Window int
	// Rate paces everything the sender sends at this many bit/s on the
	// wire, in bursts of at most Burst packets: its link rate, at which
	// NDP sends its first window. 0 sends unpaced.
	Rate  int64
	Burst int // default DefaultBurst
	// RTO is the least retransmission timeout: how long the sender waits,
	// hearing nothing while packets are out unanswered, before it sends
	// one again; default DefaultMinRTO. The timeout is srtt + 4·rttvar
	// (RFC 6298) from the RTTs the ACKs and NACKs echo, when that is
	// longer: a receiver that answers late on a busy machine is slow,
	// not lossy.
	RTO time.Duration
}

func (c NDPConfig) withDefaults() (NDPConfig, error) {
	if c.Size == 0 {
		c.Size = DefaultSize
	}
	if c.Window == 0 {
		c.Window = DefaultNDPWindow
	}
	if c.Burst == 0 {
		c.Burst = DefaultBurst
	}
	if c.RTO == 0 {
		c.RTO = DefaultMinRTO
	}
	switch {
	case c.Packets < 1 || c.Packets > MaxNDPPackets:
		return c, fmt.Errorf("udp transport: ndp packets %d: want 1..%d", c.Packets, MaxNDPPackets)
	case c.Size < HeaderLen || c.Size > maxSize:
		return c, fmt.Errorf("udp transport: ndp size %d: want %d..%d bytes", c.Size, HeaderLen, maxSize)
	case c.Window < 1 || c.Window > batch*64:
		return c, fmt.Errorf("udp transport: ndp window %d: want 1..%d packets", c.Window, batch*64)
	case c.Rate < 0:
		return c, fmt.Errorf("udp transport: ndp rate %d: want ≥ 0 bit/s", c.Rate)
	case c.Burst < 1 || c.Burst > batch:
		return c, fmt.Errorf("udp transport: ndp burst %d: want 1..%d packets", c.Burst, batch)
	case c.RTO < 0:
		return c, fmt.Errorf("udp transport: ndp rto %v: want > 0", c.RTO)
	}
	return c, nil
}

// NDPSenderStats are an NDP sender's counts.
type NDPSenderStats struct {
	Packets   uint64 // the message's length
	Sent      uint64 // data datagrams sent, again included
	Retrans   uint64 // of them, sent again (NACKed or timed out)
	Acked     uint64 // packets acknowledged
	Nacks     uint64 // NACKs read
	Pulls     uint64 // PULLs read
	Idle      uint64 // pulls that found nothing to send
	Timeouts  uint64 // retransmission timeouts
	Malformed uint64 // datagrams read that were not control packets of this flow
	Start     int64  // when Run began, ns (CLOCK_REALTIME)
	Done      int64  // when the last ACK was read; 0 if it was not
}

// NDPSender sends one message the NDP way (ndp.go). Its methods are not
// safe for concurrent use; read Stats after Run returns.
type NDPSender struct {
	cfg          NDPConfig
	conn         Conn
	dst          net.Addr
	st           *ndpSender
	paceAt       int64
	srtt, rttvar int64 // ns; 0 before the first sample
	stats        NDPSenderStats
}

// NewNDPSender returns a sender of cfg's message over conn (Prepare's,
// with the data's TOS); dst is the receiver's address, or nil when conn
// is connected.
func NewNDPSender(conn Conn, dst net.Addr, cfg NDPConfig) (*NDPSender, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &NDPSender{cfg: cfg, conn: conn, dst: dst, stats: NDPSenderStats{Packets: cfg.Packets}}, nil
}

// Stats returns the sender's counts.
func (s *NDPSender) Stats() NDPSenderStats {
	st := s.stats
	if s.st != nil {
		st.Acked, st.Nacks, st.Pulls, st.Idle, st.Timeouts = s.st.nAcked, s.st.nacks, s.st.pulls, s.st.idle, s.st.timeouts
	}
	return st
}

// Run sends the message until every packet is acknowledged or ctx ends
// (both return nil), or the socket fails.
func (s *NDPSender) Run(ctx context.Context) error {
	size := s.cfg.Size
	most := min(batch, 65000/size) // packets one GSO send carries
	wbuf := make([]byte, most*size)
	wms := []ipv4.Message{{Addr: s.dst}}
	gso := segmentControl(size)
	rms := make([]ipv4.Message, batch)
	for i := range rms {
		rms[i].Buffers = [][]byte{make([]byte, 2*HeaderLen)}
		rms[i].OOB = make([]byte, controlLen+64)
	}
	s.stats.Start = now()
	s.st = newNDPSender(s.cfg.Packets, s.cfg.Window, s.stats.Start)
	st := s.st
	take := func(k int) {
		read := now()
		for i := range rms[:k] {
			m := &rms[i]
			rx, err := ParseControl(m.OOB[:m.NN])
			if err != nil {
				s.stats.Malformed++
				continue
			}
			segments(m.Buffers[0][:m.N], rx, func(b []byte) { s.control(b, read) })
		}
		if st.done() && s.stats.Done == 0 {
			s.stats.Done = read
		}
	}
	for ctx.Err() == nil && !st.done() {
		t := now()
		if t >= st.deadline(s.rto()) {
			if err := readWaiting(s.conn, rms, take); err != nil {
				return fmt.Errorf("udp transport: ndp flow %d: receive: %w", s.cfg.Flow, err)
			}
			t = now()
		}
		st.timeout(t, s.rto())
		n := 0
		for room := min(most, s.tokens(t)); n < room; n++ {
			seq, again, ok := st.pop()
			if !ok {
				break
			}
			h := Header{Type: TypeData, Flow: s.cfg.Flow, Seq: seq, Cum: s.cfg.Packets, DX: timestamp.Option{Stamp: uint32(t)}}
			h.Put(wbuf[n*size:])
			if again {
				s.stats.Retrans++
			}
		}
		if n > 0 {
			wms[0].Buffers, wms[0].OOB = [][]byte{wbuf[:n*size]}, nil
			if n > 1 {
				wms[0].OOB = gso
			}
			if _, err := s.conn.WriteBatch(wms, 0); err != nil {
				return fmt.Errorf("udp transport: ndp flow %d: send: %w", s.cfg.Flow, err)
			}
			s.stats.Sent += uint64(n)
			s.paceAt += int64(n) * s.txTime()
		}
		wake := min(st.deadline(s.rto()), t+int64(10*time.Millisecond))
		if st.ready() {
			wake = min(wake, s.paceAt+s.txTime())
		}
		if err := s.conn.SetReadDeadline(time.Unix(0, max(wake, t+int64(time.Microsecond)))); err != nil {
			return err
		}
		k, err := s.conn.ReadBatch(rms, 0)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue
		}
		if err != nil {
			return fmt.Errorf("udp transport: ndp flow %d: receive: %w", s.cfg.Flow, err)
		}
		take(k)
	}
	return nil
}

// control takes one control datagram read at t.
func (s *NDPSender) control(b []byte, t int64) {
	h, err := Parse(b)
	if err != nil || h.Flow != s.cfg.Flow {
		s.stats.Malformed++
		return
	}
	switch h.Type {
	case TypeAck:
		s.rttSample(h.DX.Stamp, t)
		s.st.onAck(h.Seq, t)
	case TypeNack:
		s.rttSample(h.DX.Stamp, t)
		s.st.onNack(h.Seq, t)
	case TypePull:
		s.st.onPull(h.Seq, t)
	default:
		s.stats.Malformed++
	}
}

// rttSample takes the RTT of the transmission sent at t1 (its low 32
// bits, as the ACK or NACK echoes them) and answered at t into srtt and
// rttvar (RFC 6298 §2). Each transmission carries its own stamp, so a
// packet sent again gives its own RTT (no Karn ambiguity).
func (s *NDPSender) rttSample(t1 uint32, t int64) {
	r := int64(uint32(t) - t1) // mod 2³²: RTTs under 4 s
	if s.srtt == 0 {
		s.srtt, s.rttvar = r, r/2
		return
	}
	d := s.srtt - r
	if d < 0 {
		d = -d
	}
	s.rttvar += (d - s.rttvar) / 4
	s.srtt += (r - s.srtt) / 8
}

// rto returns the retransmission timeout: srtt + 4·rttvar, at least
// Config.RTO.
func (s *NDPSender) rto() int64 { return max(s.srtt+4*s.rttvar, int64(s.cfg.RTO)) }

// txTime returns one datagram's time on the paced link, ns; 0 unpaced.
func (s *NDPSender) txTime() int64 {
	if s.cfg.Rate == 0 {
		return 0
	}
	return timestamp.TransmissionTime(s.cfg.Size+wireOverhead, s.cfg.Rate)
}

// tokens returns how many packets the pacer lets leave at t: the bucket
// holds Burst of them and fills one per txTime.
func (s *NDPSender) tokens(t int64) int {
	tx := s.txTime()
	if tx == 0 {
		return batch
	}
	s.paceAt = max(s.paceAt, t-int64(s.cfg.Burst)*tx)
	return int((t - s.paceAt) / tx)
}

// NDPReceiverConfig configures an NDP receiver.
type NDPReceiverConfig struct {
	// Rate is the receiver's link rate in bit/s: it paces its PULLs so
	// that the packets they pull arrive at it, one Size-byte datagram's
	// wire time apart. Required.
	Rate int64
	// Size is the senders' data datagram size (NDPConfig.Size); a data
	// datagram shorter than it is a trimmed header. Default DefaultSize.
	Size int
	// Burst is how many pulls may leave back to back after a pause;
	// default DefaultPullBurst.
	Burst int
}

// NDPReceiver receives the messages of any number of NDP senders on one
// socket: it ACKs what arrives whole, NACKs trimmed headers, and pulls
// (ndp.go).
type NDPReceiver struct {
	conn Conn
	size int

	mu sync.Mutex
	st *ndpReceiver
}

// NewNDPReceiver returns a receiver reading conn (Prepare's).
func NewNDPReceiver(conn Conn, cfg NDPReceiverConfig) (*NDPReceiver, error) {
	if cfg.Size == 0 {
		cfg.Size = DefaultSize
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultPullBurst
	}
	switch {
	case cfg.Rate <= 0:
		return nil, fmt.Errorf("udp transport: ndp receiver rate %d: want > 0 bit/s, the link's", cfg.Rate)
	case cfg.Size < HeaderLen || cfg.Size > maxSize:
		return nil, fmt.Errorf("udp transport: ndp receiver size %d: want %d..%d bytes", cfg.Size, HeaderLen, maxSize)
	case cfg.Burst < 1 || cfg.Burst > batch:
		return nil, fmt.Errorf("udp transport: ndp receiver burst %d: want 1..%d pulls", cfg.Burst, batch)
	}
	interval := timestamp.TransmissionTime(cfg.Size+wireOverhead, cfg.Rate)
	return &NDPReceiver{conn: conn, size: cfg.Size, st: newNDPReceiver(interval, int64(cfg.Size+wireOverhead), cfg.Burst)}, nil
}

// Flows returns every flow's counts so far, by flow number.
func (r *NDPReceiver) Flows() []NDPFlowStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]NDPFlowStats, 0, len(r.st.flows))
	for _, f := range r.st.flows {
		out = append(out, f.NDPFlowStats)
	}
	slices.SortFunc(out, func(a, b NDPFlowStats) int { return int(a.Flow) - int(b.Flow) })
	return out
}

// Malformed returns how many datagrams were dropped because they were
// not data of a message.
func (r *NDPReceiver) Malformed() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st.malformed
}

// Run receives until ctx ends; it returns nil then, or the socket's
// error.
func (r *NDPReceiver) Run(ctx context.Context) error {
	rms := make([]ipv4.Message, batch)
	for i := range rms {
		rms[i].Buffers = [][]byte{make([]byte, 65536)}
		rms[i].OOB = make([]byte, controlLen+64)
	}
	wms := make([]ipv4.Message, batch)
	wbuf := make([]byte, batch*HeaderLen)
	for i := range wms {
		wms[i].Buffers = [][]byte{wbuf[i*HeaderLen : (i+1)*HeaderLen]}
	}
	out := 0
	put := func(h Header, to net.Addr) error {
		h.Put(wms[out].Buffers[0])
		wms[out].Addr = to
		if out++; out == batch {
			return r.send(wms, &out)
		}
		return nil
	}
	for ctx.Err() == nil {
		t := now()
		wake := t + int64(20*time.Millisecond)
		r.mu.Lock()
		if at, ok := r.st.pullAt(); ok {
			wake = min(wake, at)
		}
		r.mu.Unlock()
		if err := r.conn.SetReadDeadline(time.Unix(0, max(wake, t+int64(time.Microsecond)))); err != nil {
			return err
		}
		n, rerr := r.conn.ReadBatch(rms, 0)
		if rerr != nil {
			if !errors.Is(rerr, os.ErrDeadlineExceeded) {
				return fmt.Errorf("udp transport: ndp receiver: receive: %w", rerr)
			}
			n = 0 // recvmmsg's -1: a pull may be due all the same
		}
		read := now()
		var err error // of a send
		r.mu.Lock()
		for i := range rms[:n] {
			m := &rms[i]
			rx, perr := ParseControl(m.OOB[:m.NN])
			if perr != nil {
				r.st.malformed++
				continue
			}
			t2 := read
			if rx.HasStamp {
				t2 = rx.Stamp
			}
			segments(m.Buffers[0][:m.N], rx, func(d []byte) {
				h, perr := Parse(d)
				if perr != nil || h.Type != TypeData {
					r.st.malformed++
					return
				}
				if reply, ok := r.st.onData(h, len(d) < r.size, len(d), m.Addr, t2); ok && err == nil {
					err = put(reply, m.Addr)
				}
			})
		}
		for err == nil {
			h, to, ok := r.st.popPull(now())
			if !ok {
				break
			}
			err = put(h, to)
		}
		r.mu.Unlock()
		if err != nil {
			return err
		}
		if err := r.send(wms, &out); err != nil {
			return err
		}
	}
	return nil
}

// send sends the first *n control packets of wms.
func (r *NDPReceiver) send(wms []ipv4.Message, n *int) error {
	for sent := 0; sent < *n; {
		k, err := r.conn.WriteBatch(wms[sent:*n], 0)
		if err != nil {
			*n = 0
			return fmt.Errorf("udp transport: ndp receiver: send: %w", err)
		}
		sent += k
	}
	*n = 0
	return nil
}
