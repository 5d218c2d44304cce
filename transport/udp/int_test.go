package udp

import (
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/intmd"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/transport"
)

// intLink is a switch's INT on the pipe: it wraps each data datagram in a
// frame, pushes the record of a link of rate bit/s that carries the
// datagrams back to back with queue bytes queued behind each (intmd's
// transit, as the dataplane runs it), and puts the grown payload back.
type intLink struct {
	tb    testing.TB
	rate  int64
	queue int64

	mu    sync.Mutex
	tx    uint64 // bytes the link has sent
	now   int64  // ns: when the link is next free
	buf   []byte
	added int
}

func (l *intLink) push(d *datagram) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := packettest.UDP4(l.tb, packettest.Options{DstPort: 4790, Payload: d.b})
	if l.buf == nil {
		l.buf = make([]byte, 4096)
	}
	desc := &packet.Desc{Buf: l.buf, Len: copy(l.buf, f)}
	if err := packet.Parse(desc); err != nil {
		l.tb.Error(err)
		return false
	}
	tr, err := intmd.Open(desc)
	if err != nil {
		l.tb.Errorf("data datagram without INT headers: %v", err)
		return false
	}
	m := intmd.Metadata{QueueBytes: l.queue, EgressTS: l.now, TxBytes: l.tx, LinkRate: l.rate}
	if tr.Push(desc, &m, 1514) == intmd.Added {
		l.added++
	}
	l.tx += uint64(desc.Len)
	l.now += int64(desc.Len) * 8e9 / l.rate
	d.b = append(d.b[:0], desc.Frame()[14+20+8:]...)
	return true
}

// TestHPCCOverINT: an HPCC flow whose data carry INT headers through a
// link that adds a record to each, at 1 Gbit/s with 15 000 bytes always
// queued (1.2 B·T for T = 100 µs): the receiver echoes the records, the
// sender hands them to HPCC, whose U converges to txRate/B + qlen/(B·T)
// = 1 + 1.2, and whose window falls to the floor. Every datagram grows by
// one record, and the receiver counts the bytes as sent.
func TestHPCCOverINT(t *testing.T) {
	for name, rc := range receivers() {
		t.Run(name, func(t *testing.T) {
			rc.INT = true
			link := &intLink{tb: t, rate: 1e9, queue: 15_000}
			cfg := Config{Flow: 9, CC: transport.KindHPCC, INTHops: 2, Packets: 3000, LogEvery: -1,
				HPCC: transport.HPCCConfig{BaseRTT: 100_000, Init: 16}}
			s, f, r := run(t, rc, cfg, func(k int, d *datagram) bool {
				if len(d.b) != DefaultSize-2*24 {
					t.Errorf("datagram %d: %d bytes, want %d (room for 2 records)", k, len(d.b), DefaultSize-48)
				}
				return link.push(d)
			})
			sent := uint64(DefaultSize - 2*24)
			if f.Packets != cfg.Packets || f.Bytes != cfg.Packets*sent || r.Malformed() != 0 {
				t.Errorf("delivered %d packets, %d bytes, %d malformed; want %d, %d, 0", f.Packets, f.Bytes, r.Malformed(), cfg.Packets, cfg.Packets*sent)
			}
			h := s.Controller().(*transport.HPCC)
			if h.Updates() < 10 || math.Abs(h.U()-2.2) > 0.01 || h.Window() != transport.MinWindow {
				t.Errorf("HPCC: %d updates, U %.4f, W %g; want ≥ 10 updates, U ≈ 2.2, W at the floor", h.Updates(), h.U(), h.Window())
			}
			if link.added < int(cfg.Packets) {
				t.Errorf("the link added %d records for %d packets", link.added, cfg.Packets)
			}
		})
	}
}

// TestHopsOf: an ACK's echo decodes first hop first, with every HPCC field.
func TestHopsOf(t *testing.T) {
	h, _ := hpccHeader(3)
	b := make([]byte, intmd.HeaderLen, 200)
	h.Length += 2 * 6
	h.RemainingHops = 1
	h.Put(b)
	// Newest first: hop 2 (queue 7, 2000 B, t 20, tx 99, 100 Gbit/s), then hop 1.
	b = append(b, 7, 0, 0x07, 0xd0, 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0, 99, 0x05, 0xf5, 0xe1, 0x00)
	b = append(b, 0, 0, 0, 100, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0x0f, 0x42, 0x40)
	var hops [4]transport.Hop
	n := hopsOf(hops[:], b)
	want := []transport.Hop{{QLen: 100, TxBytes: 5, TS: 10, Rate: 1e9}, {QLen: 2000, TxBytes: 99, TS: 20, Rate: 100e9}}
	if n != 2 || hops[0] != want[0] || hops[1] != want[1] {
		t.Fatalf("hopsOf = %d %+v, want %+v", n, hops[:n], want)
	}
	if n := hopsOf(hops[:1], b); n != 0 {
		t.Errorf("more hops than room: %d, want 0", n)
	}
	other, _ := intmd.NewHeader(intmd.InstrQueue, 0, 1)
	other.Put(b)
	if n := hopsOf(hops[:], b[:intmd.HeaderLen]); n != 0 {
		t.Errorf("records without HPCC's fields: %d hops, want 0", n)
	}
}

// TestINTConfig: the sender's INT and HPCC settings, and their errors.
func TestINTConfig(t *testing.T) {
	c, err := Config{INTHops: 3}.withDefaults()
	if err != nil || c.Size != DefaultSize-3*24 {
		t.Fatalf("size %d, %v; want %d", c.Size, err, DefaultSize-72)
	}
	a, _ := newPipe(ECT0, NotECT)
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{CC: transport.KindHPCC, HPCC: transport.HPCCConfig{BaseRTT: 1, Init: 10}}, "hpcc needs int hops"},
		{Config{CC: transport.KindHPCC, INTHops: 1}, "hpcc base rtt"},
		{Config{CC: transport.KindDCTCP, INTHops: 256}, "int hops 256"},
		{Config{CC: transport.KindDCTCP, INTHops: 1, Size: HeaderLen}, "want 52.."},
	} {
		if _, err := NewSender(a, nil, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
