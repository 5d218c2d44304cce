package udp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/ecnswitch/ecnswitch/packet/intmd"
	"github.com/ecnswitch/ecnswitch/timestamp"
	"github.com/ecnswitch/ecnswitch/transport"
)

// Defaults and limits of Config.
const (
	DefaultSize      = 1472 // a 1514-byte Ethernet frame
	DefaultMinRTO    = 10 * time.Millisecond
	DefaultMaxWindow = 4096
	DefaultBurst     = 10 // 004 §III: at most 10 packets per poll
	DefaultLogEvery  = time.Millisecond
	maxSize          = 65507
)

// wireOverhead is what a datagram of n payload bytes adds on an Ethernet
// link: UDP, IPv4 and Ethernet headers, FCS, preamble and gap.
const wireOverhead = 8 + 20 + 14 + 4 + 8 + 12

// DelaySample is one delay sample, taken from an ACK. Times are in ns.
type DelaySample struct {
	Seq     uint64 // the newest packet the ACK covers
	Packets int    // how many it covers: Seq−Packets+1..Seq, in order
	Queue   int64  // their mean queueing delay, OWD − OWD_base (004 §III)
	RTT     int64  // the newest packet's RTT from the stamps, (t4 − t1) − (t3 − t2) (004 §III)
	// HostRTT is that RTT with the sender's own paths left in: from the
	// time this process read its clock before sending the packet to the
	// time it read the ACK, in place of the stamps t1 and t4. 004 §III
	// removes such host delay from the RTT; HostRTT shows what that
	// removes. Without Config.TxStamps, t1 is that send time already.
	HostRTT int64
	// TxStamped says t1 was the kernel's transmit stamp (Config.TxStamps).
	TxStamped bool
}

// Config is one sender's flow.
type Config struct {
	Flow uint32         // the flow's number at the receiver
	CC   transport.Kind // congestion control
	// Headroom is DX's (004 §V-B): queueing delays below it count as none.
	Headroom time.Duration
	// Target is Prague's virtual RTT (transport.Prague.Target): a flow of
	// a shorter RTT grows and cuts as if its RTT were Target; 0 for none,
	// and for every other congestion control.
	Target time.Duration
	// Tolerance is how far above the minimum RTT a sample re-takes
	// OWD_base (timestamp.Delay.Tolerance).
	Tolerance time.Duration
	// Size is the UDP payload of every data datagram, HeaderLen..65507
	// bytes; default DefaultSize.
	Size int
	// Rate paces the sender at this many bit/s on the wire, in bursts of
	// at most Burst packets (004 §III); 0 sends as the window allows.
	Rate  int64
	Burst int // default DefaultBurst
	// Packets ends the flow when this many are acknowledged; 0 sends
	// until the context ends.
	Packets uint64
	// MinRTO is the least retransmission timeout; default DefaultMinRTO.
	MinRTO time.Duration
	// MaxWindow caps the packets in flight; default DefaultMaxWindow.
	MaxWindow int
	// OnSample, if set, sees every delay sample: one per ACK of a packet
	// that was not sent again.
	OnSample func(DelaySample)
	// LogEvery is the period of the per-flow log; default
	// DefaultLogEvery, negative for none.
	LogEvery time.Duration
	// TxStamps, if set, are the kernel's transmit stamps of the sender's
	// socket (EnableTxStamps, before the sender's first send): t1 is then
	// the stamp of the send that carried the packet in place of the time
	// read before it, and the ACK's one-way delay is corrected by their
	// difference (the packets still carry the time read before sending,
	// as no stamp exists before the packet leaves). A sample whose
	// packets lack a stamp keeps the time read in user space.
	TxStamps *TxStamps
	// INTHops, when above 0, starts every data datagram with INT
	// headers asking up to this many switches for HPCC's fields (int.go);
	// Size then defaults to DefaultSize less the room their records take.
	// The receiver must read INT (ReceiverConfig.INT). At most
	// intmd.MaxHops.
	INTHops int
	// HPCC is HPCC's parameters, for CC hpcc (which needs INTHops).
	HPCC transport.HPCCConfig
}

func (c Config) withDefaults() (Config, error) {
	if c.INTHops < 0 || c.INTHops > intmd.MaxHops {
		return c, fmt.Errorf("udp transport: int hops %d: want 0..%d", c.INTHops, intmd.MaxHops)
	}
	if c.Size == 0 {
		c.Size = DefaultSize - intRoom(c.INTHops)
	}
	if min := HeaderLen + c.intLen(); c.Size < min || c.Size > maxSize {
		return c, fmt.Errorf("udp transport: size %d: want %d..%d bytes", c.Size, min, maxSize)
	}
	if c.Rate < 0 {
		return c, fmt.Errorf("udp transport: rate %d: want ≥ 0 bit/s", c.Rate)
	}
	if c.Burst == 0 {
		c.Burst = DefaultBurst
	}
	if c.Burst < 1 || c.Burst > batch {
		return c, fmt.Errorf("udp transport: burst %d: want 1..%d packets", c.Burst, batch)
	}
	if c.MinRTO == 0 {
		c.MinRTO = DefaultMinRTO
	}
	if c.MinRTO < 0 {
		return c, fmt.Errorf("udp transport: min rto %v: want > 0", c.MinRTO)
	}
	if c.MaxWindow == 0 {
		c.MaxWindow = DefaultMaxWindow
	}
	if c.MaxWindow < 2 || c.MaxWindow > 1<<20 {
		return c, fmt.Errorf("udp transport: max window %d: want 2..%d packets", c.MaxWindow, 1<<20)
	}
	if c.LogEvery == 0 {
		c.LogEvery = DefaultLogEvery
	}
	if c.Headroom < 0 || c.Tolerance < 0 {
		return c, fmt.Errorf("udp transport: headroom %v, tolerance %v: want ≥ 0", c.Headroom, c.Tolerance)
	}
	return c, nil
}

// intLen returns the bytes of INT headers a data datagram starts with.
func (c Config) intLen() int {
	if c.INTHops == 0 {
		return 0
	}
	return intmd.HeaderLen
}

// Sample is one line of a flow's log.
type Sample struct {
	T       int64   // ns since the flow started
	Cwnd    float64 // packets
	Queue   int64   // the last queueing delay measured, ns
	RTT     int64   // the last RTT measured, (t4 − t1) − (t3 − t2), ns
	Marks   uint64  // packets whose ACKs echoed CE so far
	Acked   uint64  // packets acknowledged so far (cumulative)
	Retrans uint64  // packets sent again so far
}

// SenderStats are a sender's counts.
type SenderStats struct {
	Sent       uint64 // data datagrams sent, retransmissions included
	Retrans    uint64 // of them, sent again
	Acked      uint64 // packets acknowledged (cumulative)
	Acks       uint64 // ACKs read
	Marks      uint64 // data packets the ACKs echoed CE for
	Timeouts   uint64 // retransmission timeouts
	FastRetx   uint64 // go-back-N after three duplicate ACKs
	Samples    uint64 // ACKs that gave a delay sample (not of a resent packet)
	Malformed  uint64 // datagrams read that were not ACKs of this flow
	Unstamped  uint64 // ACKs the kernel gave no receive stamp (t4 is the read's time)
	TxStamped  uint64 // delay samples whose t1 is a kernel transmit stamp (Config.TxStamps)
	Congestion uint64 // window reductions for congestion (transport.Controller)
}

// Sender sends one flow. Its methods are not safe for concurrent use;
// read Stats and Log after Run returns.
type Sender struct {
	cfg   Config
	conn  Conn
	dst   net.Addr
	cc    transport.Controller
	delay timestamp.Delay
	in    intmd.Header                         // a data datagram's INT headers, with INTHops
	hops  [transport.HPCCMaxHops]transport.Hop // an ACK's INT records, decoded

	// Per sequence number modulo the ring: the last send time and
	// whether the packet was sent more than once (Karn: no sample).
	ringSeq []uint64
	ringT1  []int64
	ringRe  []bool
	ringTx  []int64 // the packet's transmit stamp, 0 until it is read (Config.TxStamps)

	// Per send call modulo the ring, with Config.TxStamps: its number,
	// first sequence number and packets.
	sendID    []uint32
	sendFirst []uint64
	sendN     []int
	sends     uint32 // send calls so far

	una, next, high uint64 // oldest unacknowledged, next to send, highest sent + 1
	recover         uint64 // after going back, duplicate ACKs count again once una reaches it
	dups            int
	srtt, rttvar    int64
	backoff         int64
	paceAt          int64 // token bucket as a schedule: the next packet may leave at paceAt − burst
	lastOWD         int64
	lastQ, lastRTT  int64

	start, logAt int64
	stats        SenderStats
	log          []Sample
}

// NewSender returns a sender of cfg's flow over conn, which should come
// from Prepare with tos Codepoint(cfg.CC); dst is the receiver's
// address, or nil when conn is connected.
func NewSender(conn Conn, dst net.Addr, cfg Config) (*Sender, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	cc, err := newController(cfg)
	if err != nil {
		return nil, err
	}
	s := &Sender{
		cfg:     cfg,
		conn:    conn,
		dst:     dst,
		cc:      cc,
		ringSeq: make([]uint64, cfg.MaxWindow),
		ringT1:  make([]int64, cfg.MaxWindow),
		ringRe:  make([]bool, cfg.MaxWindow),
		backoff: 1,
	}
	if cfg.TxStamps != nil {
		s.ringTx = make([]int64, cfg.MaxWindow)
		s.sendID, s.sendFirst, s.sendN = make([]uint32, cfg.MaxWindow), make([]uint64, cfg.MaxWindow), make([]int, cfg.MaxWindow)
		for i := range s.sendID {
			s.sendID[i] = ^uint32(0)
		}
	}
	s.delay.Tolerance = int64(cfg.Tolerance)
	if cfg.INTHops > 0 {
		if s.in, err = hpccHeader(cfg.INTHops); err != nil {
			return nil, err
		}
	}
	for i := range s.ringSeq {
		s.ringSeq[i] = ^uint64(0)
	}
	return s, nil
}

// Stats returns the sender's counts.
func (s *Sender) Stats() SenderStats {
	st := s.stats
	st.Acked = s.una
	st.Congestion, _ = s.cc.Reductions()
	return st
}

// Log returns the flow's log, one Sample per Config.LogEvery.
func (s *Sender) Log() []Sample { return s.log }

// Controller returns the flow's congestion control.
func (s *Sender) Controller() transport.Controller { return s.cc }

// Run sends until Config.Packets are acknowledged or ctx ends (both
// return nil), or the socket fails.
func (s *Sender) Run(ctx context.Context) error {
	// Data leave in one datagram per burst, which the kernel cuts into
	// Size-byte datagrams (UDP GSO): one pass through the stack a burst.
	size := s.cfg.Size
	wbuf := make([]byte, s.maxBurst()*size)
	wms := []ipv4.Message{{Addr: s.dst}}
	gso := segmentControl(size)
	rms := make([]ipv4.Message, batch)
	for i := range rms {
		rms[i].Buffers = [][]byte{make([]byte, 65536)} // ACKs merged by GRO (UDP_GRO), INT echoes and all
		rms[i].OOB = make([]byte, controlLen+64)
	}
	s.start = now()
	s.logAt = s.start
	var stampErr error // the first error reading transmit stamps
	take := func(n int) {
		read := now()
		if stampErr == nil {
			stampErr = s.readTxStamps() // the stamps before the ACKs that need them
		}
		for i := range rms[:n] {
			m := &rms[i]
			rx, err := ParseControl(m.OOB[:m.NN])
			if err != nil {
				s.stats.Malformed++
				continue
			}
			segments(m.Buffers[0][:m.N], rx, func(b []byte) { s.ack(b, rx, read) })
		}
		s.record(read)
	}
	for ctx.Err() == nil && (s.cfg.Packets == 0 || s.una < s.cfg.Packets) {
		t := now()
		if s.timerDue(t) {
			// ACKs that came in while this goroutine waited for a CPU
			// are not silence: take them before the timer decides.
			if err := readWaiting(s.conn, rms, take); err != nil {
				return fmt.Errorf("udp transport: flow %d: receive: %w", s.cfg.Flow, err)
			}
			if stampErr != nil {
				return stampErr
			}
			t = now()
		}
		s.timeout(t)
		if n := s.ready(t); n > 0 {
			t1 := now()
			for i := range n {
				s.stamp(wbuf[i*size:(i+1)*size], s.next+uint64(i), t1)
			}
			wms[0].Buffers = [][]byte{wbuf[:n*size]}
			wms[0].OOB = nil
			if n > 1 {
				wms[0].OOB = gso
			}
			if _, err := s.conn.WriteBatch(wms, 0); err != nil {
				return fmt.Errorf("udp transport: flow %d: send: %w", s.cfg.Flow, err)
			}
			s.bookSend(n)
			s.sent(n, t1)
			if err := s.readTxStamps(); err != nil {
				return err
			}
		}
		wake := s.wake(now())
		if err := s.conn.SetReadDeadline(time.Unix(0, wake)); err != nil {
			return err
		}
		n, err := s.conn.ReadBatch(rms, 0)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue
		}
		if err != nil {
			return fmt.Errorf("udp transport: flow %d: receive: %w", s.cfg.Flow, err)
		}
		take(n)
		if stampErr != nil {
			return stampErr
		}
	}
	s.record(now())
	return nil
}

// inFlight returns the packets sent and not yet acknowledged.
func (s *Sender) inFlight() uint64 { return s.next - s.una }

// room returns how many packets the window, the ring and Packets allow
// now.
func (s *Sender) room() int {
	w := min(uint64(s.cc.Window()), uint64(s.cfg.MaxWindow))
	if s.inFlight() >= w {
		return 0
	}
	n := w - s.inFlight()
	if s.cfg.Packets > 0 {
		n = min(n, s.cfg.Packets-s.next)
	}
	return int(min(n, uint64(s.maxBurst())))
}

// maxBurst is the most packets one GSO send carries: 64 KB.
func (s *Sender) maxBurst() int { return min(batch, 65000/s.cfg.Size) }

// txTime returns one datagram's time on the paced link, ns.
func (s *Sender) txTime() int64 {
	return timestamp.TransmissionTime(s.cfg.Size+wireOverhead, s.rate())
}

// rate returns the pace, bit/s: Config.Rate, and no more than HPCC's
// W/T; 0 for none.
func (s *Sender) rate() int64 {
	r := s.cfg.Rate
	if p, ok := s.cc.(pacer); ok {
		if w := max(p.PaceRate(s.cfg.Size+wireOverhead), 1); r == 0 || w < r {
			r = w
		}
	}
	return r
}

// ready returns how many packets may leave at t: what the window allows,
// and with pacing what the token bucket holds.
func (s *Sender) ready(t int64) int {
	n := s.room()
	if n == 0 || s.rate() == 0 {
		return n
	}
	tx := s.txTime()
	// The bucket holds Burst packets; it fills one per tx.
	s.paceAt = max(s.paceAt, t-int64(s.cfg.Burst)*tx)
	tokens := int((t - s.paceAt) / tx)
	return min(n, tokens)
}

// stamp writes the headers of packet seq, with t1, into b: the INT
// headers first, with INTHops.
func (s *Sender) stamp(b []byte, seq uint64, t1 int64) {
	if s.cfg.INTHops > 0 {
		s.in.Put(b)
		b = b[intmd.HeaderLen:]
	}
	h := Header{Type: TypeData, Flow: s.cfg.Flow, Seq: seq, DX: timestamp.Option{Stamp: uint32(t1)}}
	h.Put(b)
}

// sent books the k packets from next on as sent at t1.
func (s *Sender) sent(k int, t1 int64) {
	tx := int64(0)
	if s.rate() > 0 {
		tx = s.txTime()
	}
	for range k {
		i := s.next % uint64(len(s.ringSeq))
		again := s.next < s.high
		s.ringSeq[i], s.ringT1[i], s.ringRe[i] = s.next, t1, again
		if s.ringTx != nil {
			s.ringTx[i] = 0
		}
		if again {
			s.stats.Retrans++
		}
		s.stats.Sent++
		s.next++
		s.paceAt += tx
	}
	s.high = max(s.high, s.next)
}

// bookSend records, with Config.TxStamps, that the send call about to be
// counted carries the k packets from next on.
func (s *Sender) bookSend(k int) {
	if s.sendID == nil {
		return
	}
	j := s.sends % uint32(len(s.sendID))
	s.sendID[j], s.sendFirst[j], s.sendN[j] = s.sends, s.next, k
	s.sends++
}

// readTxStamps gives every transmit stamp queued so far to the packets of
// its send call.
func (s *Sender) readTxStamps() error {
	if s.cfg.TxStamps == nil {
		return nil
	}
	return s.cfg.TxStamps.Read(func(id uint32, stamp int64) {
		j := id % uint32(len(s.sendID))
		if s.sendID[j] != id {
			return // a send too old for the ring
		}
		for seq := s.sendFirst[j]; seq < s.sendFirst[j]+uint64(s.sendN[j]); seq++ {
			if i := seq % uint64(len(s.ringSeq)); s.ringSeq[i] == seq {
				s.ringTx[i] = stamp
			}
		}
	})
}

// txShift returns, with Config.TxStamps, the mean of the transmit stamp
// less the send time read before it over the n packets up to seq, and
// whether every one of them has its stamp.
func (s *Sender) txShift(seq uint64, n uint64) (int64, bool) {
	if s.ringTx == nil || n == 0 || n > seq+1 {
		return 0, false
	}
	var sum int64
	for q := seq + 1 - n; q <= seq; q++ {
		i := q % uint64(len(s.ringSeq))
		if s.ringSeq[i] != q || s.ringTx[i] == 0 {
			return 0, false
		}
		sum += s.ringTx[i] - s.ringT1[i]
	}
	return sum / int64(n), true
}

// rto returns the retransmission timeout: srtt + 4·rttvar (RFC 6298), at
// least MinRTO, doubled for every timeout in a row.
func (s *Sender) rto() int64 {
	return max(s.srtt+4*s.rttvar, int64(s.cfg.MinRTO)) * s.backoff
}

// timerDue reports whether the oldest unacknowledged packet has waited a
// retransmission timeout at t.
func (s *Sender) timerDue(t int64) bool {
	if s.una >= s.next {
		return false
	}
	i := s.una % uint64(len(s.ringSeq))
	return s.ringSeq[i] == s.una && t-s.ringT1[i] >= s.rto()
}

// timeout goes back to the oldest unacknowledged packet when it has
// waited a retransmission timeout. The congestion control is not told: a
// timeout is not congestion (004 §IV-B).
func (s *Sender) timeout(t int64) {
	if !s.timerDue(t) {
		return
	}
	s.goBack()
	s.stats.Timeouts++
	s.backoff = min(s.backoff*2, 64)
}

// goBack sends again from the oldest unacknowledged packet (go-back-N).
// The copies still in flight will draw duplicate ACKs; they do not count
// until una passes what was sent (RFC 6582 §3.2's "recover").
func (s *Sender) goBack() {
	s.next = s.una
	s.dups = 0
	s.recover = s.high
}

// wake returns when Run must look again without an ACK: at the
// retransmission timeout, or when the token bucket lets the next packet
// go while the window has room; never later than 10 ms from t, so that
// Run sees its context end.
func (s *Sender) wake(t int64) int64 {
	w := t + int64(10*time.Millisecond)
	if s.una < s.next {
		i := s.una % uint64(len(s.ringSeq))
		if s.ringSeq[i] == s.una {
			w = min(w, s.ringT1[i]+s.rto())
		}
	}
	if s.room() > 0 {
		at := t
		if s.rate() > 0 {
			at = s.paceAt + s.txTime()
		}
		w = min(w, at)
	}
	return max(w, t+int64(time.Microsecond))
}

// ack takes one datagram read at read.
func (s *Sender) ack(b []byte, rx RX, read int64) {
	h, err := Parse(b)
	if err != nil || h.Type != TypeAck || h.Flow != s.cfg.Flow {
		s.stats.Malformed++
		return
	}
	t4 := read
	if rx.HasStamp {
		t4 = rx.Stamp
	} else {
		s.stats.Unstamped++
	}
	s.stats.Acks++
	lost := uint64(0)
	switch {
	case h.Cum > s.una && h.Cum <= s.high:
		s.una = h.Cum
		s.next = max(s.next, s.una)
		s.dups, s.backoff = 0, 1
	case h.Cum == s.una && h.Seq > h.Cum && s.una < s.next && s.una >= s.recover:
		// A packet beyond the hole arrived; a duplicate of one below it
		// (h.Seq < h.Cum, a copy sent again) says nothing of loss.
		s.dups++
		if s.dups == 3 {
			s.goBack()
			s.stats.FastRetx++
			lost = 1
		}
	}
	n := max(uint64(h.DX.Count), 1) // data packets the ACK covers
	ce := h.Flags&FlagCE != 0
	if ce {
		s.stats.Marks += n
	}
	i := h.Seq % uint64(len(s.ringSeq))
	if s.ringSeq[i] == h.Seq && !s.ringRe[i] {
		sent := s.ringT1[i]
		t1 := sent
		owd := timestamp.Unwrap(s.lastOWD, h.DX.Stamp)
		s.lastOWD = owd
		shift, stamped := s.txShift(h.Seq, n)
		if stamped {
			// The packets carried the times read before sending; their
			// transmit stamps came later by shift on average.
			t1, owd = s.ringTx[i], owd-shift
			s.stats.TxStamped++
		}
		rtt := (t4 - t1) - int64(h.DX.Hold)
		if n == 1 {
			s.lastQ = s.delay.Observe(owd, rtt)
		} else {
			s.lastQ = s.delay.ObserveMean(owd, rtt) // a mean over n packets
		}
		s.lastRTT = rtt
		s.rttSample(rtt)
		s.stats.Samples++
		if s.cfg.OnSample != nil {
			s.cfg.OnSample(DelaySample{Seq: h.Seq, Packets: int(n), Queue: s.lastQ, RTT: rtt, HostRTT: (read - sent) - int64(h.DX.Hold), TxStamped: stamped})
		}
	}
	base, _ := s.delay.MinRTT()
	var hops []transport.Hop
	if h.Flags&FlagINT != 0 {
		hops = s.hops[:hopsOf(s.hops[:], b[HeaderLen:])]
	}
	s.cc.OnAck(transport.Ack{Seq: h.Seq, Next: s.next, CE: ce, Lost: lost, Queue: s.lastQ, BaseRTT: base, RTT: s.srtt, Packets: n, Hops: hops})
}

// rttSample updates srtt and rttvar (RFC 6298 §2).
func (s *Sender) rttSample(r int64) {
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

// record appends a log line when one is due at t.
func (s *Sender) record(t int64) {
	if s.cfg.LogEvery < 0 || t < s.logAt {
		return
	}
	s.log = append(s.log, Sample{
		T:       t - s.start,
		Cwnd:    s.cc.Window(),
		Queue:   s.lastQ,
		RTT:     s.lastRTT,
		Marks:   s.stats.Marks,
		Acked:   s.una,
		Retrans: s.stats.Retrans,
	})
	s.logAt = t + int64(s.cfg.LogEvery)
}
