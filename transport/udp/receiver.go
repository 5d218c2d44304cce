package udp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/ecnswitch/ecnswitch/packet/intmd"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// batch is how many datagrams one recvmmsg or sendmmsg moves at most.
const batch = 64

// Limits of a receiver's ACK coalescing (ReceiverConfig).
const (
	DefaultAckEvery = 16
	maxAckEvery     = 1024
	maxAckDelay     = time.Second
)

// ReceiverConfig says how a Receiver coalesces ACKs.
type ReceiverConfig struct {
	// AckEvery is the most data packets one ACK covers: 1 acknowledges
	// every packet; default DefaultAckEvery.
	AckEvery int
	// AckDelay is how long an ACK that covers a single in-order, unmarked
	// packet may wait for the flow's next packet, so that one ACK covers
	// both (delayed ACKs, RFC 1122 §4.2.3.2: at least every second
	// segment); 0, the default, sends every ACK at the end of its read.
	// It delays the window's growth by up to AckDelay where a flow's next
	// packet waits for this ACK; DX's RTT excludes it (t3 − t2).
	AckDelay time.Duration
	// INT says every data datagram starts with INT headers and their
	// records (a sender's Config.INTHops): the receiver reads its
	// transport header after them and echoes them in the ACK (int.go).
	INT bool
}

// FlowStats are what a receiver counted of one flow.
type FlowStats struct {
	Flow       uint32
	Packets    uint64 // delivered in order
	Bytes      uint64 // UDP payload bytes delivered in order, as sent (without the INT records switches added)
	CE         uint64 // data packets that arrived with CE (delivered or not)
	NotECT     uint64 // data packets that arrived without ECN capability
	Unstamped  uint64 // data packets the kernel gave no receive stamp (t2 is the read's time)
	Acks       uint64 // ACKs sent
	Duplicates uint64 // data packets below the expected sequence
	OutOfOrder uint64 // data packets above it, dropped (go-back-N)
	First      int64  // t2 of the first packet delivered, ns
	Last       int64  // t2 of the last packet delivered, ns
}

// Receiver acknowledges the data of any number of flows on one socket.
//
// It coalesces ACKs as a receiver with LRO does (004 §V-A): the in-order
// data packets of one flow that one read returns share an ACK, up to
// ReceiverConfig.AckEvery of them, and the ACK carries their mean one-way
// delay with their count. Without ReceiverConfig.AckDelay an ACK never
// waits for a later read, so a flow that arrives one packet per read is
// acknowledged per packet. A packet whose CE mark differs from the
// previous one's starts a new ACK (DCTCP's receiver, Alizadeh et al.
// §3.1: the sender sees exactly which packets were marked), and a packet
// out of order or duplicate has an ACK of its own (the sender counts
// duplicate ACKs).
type Receiver struct {
	conn     Conn
	ackEvery int
	ackDelay int64 // ns
	int      bool  // data start with INT headers, which ACKs echo

	mu        sync.Mutex
	flows     map[uint32]*FlowStats
	expected  map[uint32]uint64
	malformed uint64
}

// NewReceiver returns a receiver reading conn, which should come from
// Prepare with tos NotECT, coalescing ACKs as cfg says.
func NewReceiver(conn Conn, cfg ReceiverConfig) (*Receiver, error) {
	if cfg.AckEvery == 0 {
		cfg.AckEvery = DefaultAckEvery
	}
	if cfg.AckEvery < 1 || cfg.AckEvery > maxAckEvery {
		return nil, fmt.Errorf("udp transport: ack every %d packets: want 1..%d", cfg.AckEvery, maxAckEvery)
	}
	if cfg.AckDelay < 0 || cfg.AckDelay > maxAckDelay {
		return nil, fmt.Errorf("udp transport: ack delay %v: want 0..%v", cfg.AckDelay, maxAckDelay)
	}
	return &Receiver{
		conn: conn, ackEvery: cfg.AckEvery, ackDelay: int64(cfg.AckDelay), int: cfg.INT,
		flows: map[uint32]*FlowStats{}, expected: map[uint32]uint64{},
	}, nil
}

// Flows returns every flow's counts so far, by flow number.
func (r *Receiver) Flows() []FlowStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]FlowStats, 0, len(r.flows))
	for _, f := range r.flows {
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b FlowStats) int { return int(a.Flow) - int(b.Flow) })
	return out
}

// Malformed returns how many datagrams were dropped because they did not
// parse as data.
func (r *Receiver) Malformed() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.malformed
}

// ack is one ACK waiting for the batch's send time t3.
type ack struct {
	h    Header
	t2   int64             // of the newest packet covered
	owd  timestamp.OWDMean // t2 − t1 of every packet covered
	f    *FlowStats
	addr net.Addr
	due  int64 // it may wait for the flow's next packet until then (AckDelay)
	// in holds the INT headers and records of the newest data packet
	// covered, inLen bytes of it, to echo.
	in    [maxINT]byte
	inLen int
}

// waits reports whether a may wait past t for the flow's next packet: it
// covers one in-order unmarked packet and its delay has not passed.
func (a *ack) waits(t int64) bool {
	return a.due > t && a.owd.Count() == 1 && a.h.Seq+1 == a.h.Cum && a.h.Flags&FlagCE == 0
}

// extends reports whether a, the ACK of one in-order data packet, may join
// p, the flow's latest ACK in the batch: p acknowledges in-order data
// ending right before a's packet, with the same CE echo, and has room.
func (a *ack) extends(p *ack, ackEvery int) bool {
	return p.h.Flow == a.h.Flow && p.h.Seq+1 == p.h.Cum && p.h.Cum == a.h.Seq &&
		p.h.Flags == a.h.Flags && p.owd.Count() < ackEvery
}

// Run acknowledges data until ctx ends; it returns nil then, or the
// socket's error.
func (r *Receiver) Run(ctx context.Context) error {
	rms := make([]ipv4.Message, batch)
	for i := range rms {
		rms[i].Buffers = [][]byte{make([]byte, 65536)}
		rms[i].OOB = make([]byte, controlLen+64)
	}
	wms := make([]ipv4.Message, batch)
	size := HeaderLen
	if r.int {
		size += maxINT
	}
	wbuf := make([]byte, batch*size)
	for i := range wms {
		wms[i].Buffers = [][]byte{wbuf[i*size : (i+1)*size]}
	}
	acks := make([]ack, 0, batch) // the read's, after those still waiting
	out := make([]ack, 0, batch)
	for ctx.Err() == nil {
		wake := now() + int64(20*time.Millisecond)
		for i := range acks {
			wake = min(wake, acks[i].due)
		}
		if err := r.conn.SetReadDeadline(time.Unix(0, wake)); err != nil {
			return err
		}
		n, err := r.conn.ReadBatch(rms, 0)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if acks, err = r.flush(wms, acks, out, now()); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		read := now()
		r.mu.Lock()
		for i := range rms[:n] {
			m := &rms[i]
			rx, err := ParseControl(m.OOB[:m.NN])
			if err != nil {
				r.malformed++
				continue
			}
			segments(m.Buffers[0][:m.N], rx, func(d []byte) {
				if len(acks) == batch {
					r.mu.Unlock()
					err = r.send(wms, acks)
					acks = acks[:0]
					r.mu.Lock()
				}
				a, inOrder, ok := r.data(d, rx, read)
				switch {
				case !ok:
				case inOrder && r.join(acks, &a):
				default:
					a.addr = m.Addr
					if r.ackDelay > 0 {
						a.due = read + r.ackDelay
					}
					acks = append(acks, a)
				}
			})
			if err != nil {
				r.mu.Unlock()
				return err
			}
		}
		r.mu.Unlock()
		if acks, err = r.flush(wms, acks, out, read); err != nil {
			return err
		}
	}
	_, err := r.flush(wms, acks, out, math.MaxInt64)
	return err
}

// flush sends the ACKs in acks that may not wait past t, through out, and
// returns those that wait, in order, at the front of acks. An ACK waits
// only while it is its flow's latest: one sent behind it would carry a
// newer cumulative ACK.
func (r *Receiver) flush(wms []ipv4.Message, acks, out []ack, t int64) ([]ack, error) {
	keep := 0
	out = out[:0]
	for i := range acks {
		a := &acks[i]
		if a.waits(t) && latest(acks, i) {
			acks[keep] = *a
			keep++
			continue
		}
		out = append(out, *a)
	}
	return acks[:keep], r.send(wms, out)
}

// latest reports whether acks[i] is its flow's last ACK in acks.
func latest(acks []ack, i int) bool {
	for j := i + 1; j < len(acks); j++ {
		if acks[j].h.Flow == acks[i].h.Flow {
			return false
		}
	}
	return true
}

// join adds a, the ACK of one in-order data packet, to its flow's latest
// ACK in acks when a extends it, and reports whether it did.
func (r *Receiver) join(acks []ack, a *ack) bool {
	for i := len(acks) - 1; i >= 0; i-- {
		p := &acks[i]
		if p.h.Flow != a.h.Flow {
			continue
		}
		if !a.extends(p, r.ackEvery) {
			return false
		}
		p.h.Seq, p.h.Cum, p.t2 = a.h.Seq, a.h.Cum, a.t2
		p.owd.Add(a.owd.Mean()) // a covers one packet
		p.inLen = copy(p.in[:], a.in[:a.inLen])
		return true
	}
	return false
}

// send sends the ACKs, stamped with their send time t3.
func (r *Receiver) send(wms []ipv4.Message, acks []ack) error {
	if len(acks) == 0 {
		return nil
	}
	t3 := now() // just before sendmmsg
	r.mu.Lock()
	for i := range acks {
		a := &acks[i]
		a.h.DX.Stamp = a.owd.Mean()
		a.h.DX.Count = uint16(a.owd.Count())
		a.h.DX.Hold = uint32(t3 - a.t2)
		b := wms[i].Buffers[0][:cap(wms[i].Buffers[0])]
		if a.inLen > 0 {
			a.h.Flags |= FlagINT
		}
		a.h.Put(b)
		wms[i].Buffers[0] = b[:HeaderLen+copy(b[HeaderLen:], a.in[:a.inLen])]
		wms[i].Addr = a.addr
		a.f.Acks++
	}
	r.mu.Unlock()
	for sent := 0; sent < len(acks); {
		k, err := r.conn.WriteBatch(wms[sent:len(acks)], 0)
		if err != nil {
			return err
		}
		sent += k
	}
	return nil
}

// data takes one received datagram and returns its ACK (its one-way
// delay in DX.Stamp, without Hold) and whether the packet was the next in
// order, or false if it is not data. The caller holds r.mu.
func (r *Receiver) data(b []byte, rx RX, read int64) (a ack, inOrder, ok bool) {
	var in []byte
	sent := len(b) // the datagram as sent: without the records switches added
	if r.int {
		var err error
		if in, b, err = splitINT(b); err != nil {
			r.malformed++
			return ack{}, false, false
		}
		h, _, _ := intmd.Parse(in)
		sent -= h.StackLen()
	}
	h, err := Parse(b)
	if err != nil || h.Type != TypeData {
		r.malformed++
		return ack{}, false, false
	}
	t2 := read
	if rx.HasStamp {
		t2 = rx.Stamp
	}
	f := r.flows[h.Flow]
	if f == nil {
		f = &FlowStats{Flow: h.Flow}
		r.flows[h.Flow] = f
	}
	ce := rx.ECN() == CE
	switch {
	case ce:
		f.CE++
	case rx.ECN() == NotECT:
		f.NotECT++
	}
	if !rx.HasStamp {
		f.Unstamped++
	}
	exp := r.expected[h.Flow]
	inOrder = h.Seq == exp
	switch {
	case inOrder:
		exp++
		r.expected[h.Flow] = exp
		if f.Packets == 0 {
			f.First = t2
		}
		f.Packets++
		f.Bytes += uint64(sent)
		f.Last = t2
	case h.Seq < exp:
		f.Duplicates++
	default:
		f.OutOfOrder++
	}
	a = ack{t2: t2, f: f, h: Header{
		Type: TypeAck,
		Flow: h.Flow,
		Seq:  h.Seq,
		Cum:  exp,
		DX:   timestamp.Option{Flags: timestamp.FlagACK},
	}}
	a.owd.Add(uint32(t2) - h.DX.Stamp) // t2 − t1 mod 2³²
	if ce {
		a.h.Flags |= FlagCE
	}
	a.inLen = copy(a.in[:], in)
	return a, inOrder, true
}
