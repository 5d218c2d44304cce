package udp

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/ecnswitch/ecnswitch/timestamp"
)

// batch is how many datagrams one recvmmsg or sendmmsg moves at most.
const batch = 64

// FlowStats are what a receiver counted of one flow.
type FlowStats struct {
	Flow       uint32
	Packets    uint64 // delivered in order
	Bytes      uint64 // UDP payload bytes delivered in order
	CE         uint64 // data packets that arrived with CE (delivered or not)
	NotECT     uint64 // data packets that arrived without ECN capability
	Unstamped  uint64 // data packets the kernel gave no receive stamp (t2 is the read's time)
	Duplicates uint64 // data packets below the expected sequence
	OutOfOrder uint64 // data packets above it, dropped (go-back-N)
	First      int64  // t2 of the first packet delivered, ns
	Last       int64  // t2 of the last packet delivered, ns
}

// Receiver acknowledges the data of any number of flows on one socket.
type Receiver struct {
	conn Conn

	mu        sync.Mutex
	flows     map[uint32]*FlowStats
	expected  map[uint32]uint64
	malformed uint64
}

// NewReceiver returns a receiver reading conn, which should come from
// Prepare with tos NotECT.
func NewReceiver(conn Conn) *Receiver {
	return &Receiver{conn: conn, flows: map[uint32]*FlowStats{}, expected: map[uint32]uint64{}}
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
	h  Header
	t2 int64
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
	wbuf := make([]byte, batch*HeaderLen)
	for i := range wms {
		wms[i].Buffers = [][]byte{wbuf[i*HeaderLen : (i+1)*HeaderLen]}
	}
	acks := make([]ack, 0, batch)
	for ctx.Err() == nil {
		if err := r.conn.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
			return err
		}
		n, err := r.conn.ReadBatch(rms, 0)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue
		}
		if err != nil {
			return err
		}
		read := now()
		acks = acks[:0]
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
				if a, ok := r.data(d, rx, read); ok {
					wms[len(acks)].Addr = m.Addr
					acks = append(acks, a)
				}
			})
			if err != nil {
				r.mu.Unlock()
				return err
			}
		}
		r.mu.Unlock()
		if err := r.send(wms, acks); err != nil {
			return err
		}
	}
	return nil
}

// send sends the ACKs, stamped with their send time t3.
func (r *Receiver) send(wms []ipv4.Message, acks []ack) error {
	if len(acks) == 0 {
		return nil
	}
	t3 := now() // just before sendmmsg
	for i := range acks {
		a := &acks[i]
		a.h.DX.Hold = uint32(t3 - a.t2)
		a.h.Put(wms[i].Buffers[0])
	}
	for sent := 0; sent < len(acks); {
		k, err := r.conn.WriteBatch(wms[sent:len(acks)], 0)
		if err != nil {
			return err
		}
		sent += k
	}
	return nil
}

// data takes one received datagram and returns its ACK (without Hold),
// or false if it is not data. The caller holds r.mu.
func (r *Receiver) data(b []byte, rx RX, read int64) (ack, bool) {
	h, err := Parse(b)
	if err != nil || h.Type != TypeData {
		r.malformed++
		return ack{}, false
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
	switch {
	case h.Seq == exp:
		exp++
		r.expected[h.Flow] = exp
		if f.Packets == 0 {
			f.First = t2
		}
		f.Packets++
		f.Bytes += uint64(len(b))
		f.Last = t2
	case h.Seq < exp:
		f.Duplicates++
	default:
		f.OutOfOrder++
	}
	a := ack{t2: t2, h: Header{
		Type: TypeAck,
		Flow: h.Flow,
		Seq:  h.Seq,
		Cum:  exp,
		DX: timestamp.Option{
			Stamp: uint32(t2) - h.DX.Stamp, // t2 − t1 mod 2³²
			Count: 1,
			Flags: timestamp.FlagACK,
		},
	}}
	if ce {
		a.h.Flags |= FlagCE
	}
	return a, true
}
