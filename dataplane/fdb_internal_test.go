package dataplane

import (
	"encoding/binary"
	"sync"
	"testing"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
)

// macN is a locally administered unicast MAC numbered n.
func macN(n uint32) []byte {
	m := []byte{0x02, 0xaa, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(m[2:], n)
	return m
}

// counted returns, by port, the slots whose key names the port.
func (t *fdb) counted() []int64 {
	n := make([]int64, len(t.ports))
	for i := range t.slots {
		if k := t.slots[i].key.Load(); k != 0 && k != tomb {
			n[keyPort(k)]++
		}
	}
	return n
}

// Routing allocates nothing on any of the table's paths: a new MAC, a
// known one, one refused at its port's limit (with a sweep), a flood, and
// a frame storm control drops. The table is large enough that no probe
// window fills (with 256 slots, 1% of seeds filled one before any port
// reached its limit, and the limit path went untested).
func TestRouteAllocatesNothing(t *testing.T) {
	fw, err := newForwarder(Forwarding{MACLimit: 64, TableSize: 4096, AgeTime: 1_000_000, FloodRate: 1000, FloodBurst: 10}, 4)
	if err != nil {
		t.Fatal(err)
	}
	frame := packettest.UDP4(t, packettest.Options{SrcMAC: packet.MAC{0x02, 1, 2, 3, 4, 5}, DstMAC: packet.MAC{0x02, 9, 9, 9, 9, 9}})
	d := packettest.Desc(t, frame)
	n, now := uint32(0), int64(0)
	verdicts := map[int]int{}
	allocs := testing.AllocsPerRun(2000, func() {
		n++
		now += 1000
		binary.BigEndian.PutUint32(d.Buf[8:12], n%512) // 512 MACs: new, then known, then stale
		d.InPort = uint16(n % 4)
		verdicts[fw.route(d, now)]++
	})
	if allocs != 0 {
		t.Errorf("route allocates %v times per frame", allocs)
	}
	if verdicts[flood] == 0 || verdicts[stormed] == 0 {
		t.Errorf("verdicts %v: want floods and storm drops", verdicts)
	}
	limited := uint64(0)
	for p, c := range fw.fdb.counted() {
		if c > 64 {
			t.Errorf("port %d holds %d MACs, over the limit of 64", p, c)
		}
		limited += fw.fdb.ports[p].limited.Load()
	}
	if limited == 0 {
		t.Error("no MAC was refused at the limit")
	}
}

// Workers learn, move, look up and sweep concurrently: afterwards every
// port's count equals the slots holding its MACs, and none is over the
// limit. Run with -race.
func TestFDBConcurrentCounts(t *testing.T) {
	const ports, limit, macs = 4, 100, 2000
	tb := newFDB(1024, 1000, limit, ports)
	var wg sync.WaitGroup
	for w := range ports {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 * macs {
				m := uint32((i*7 + w*13) % macs)
				mac := macN(m)
				now := int64(i) // ages out entries older than 1000 steps
				tb.learn(mac, macKey(mac), w, now)
				tb.lookup(mac, macKey(mac), now)
			}
		}()
	}
	wg.Wait()
	got := tb.counted()
	for p := range ports {
		if l := tb.ports[p].learned.Load(); l != got[p] || l > limit {
			t.Errorf("port %d: count %d, slots %d, limit %d", p, l, got[p], limit)
		}
	}
}

// The all-zeros MAC is a key like any other, not an empty slot.
func TestFDBZeroMAC(t *testing.T) {
	tb := newFDB(64, 1000, 0, 2)
	zero := make([]byte, 6)
	tb.learn(zero, 0, 1, 0)
	tb.learn(zero, 0, 1, 1)
	if p := tb.lookup(zero, 0, 2); p != 1 {
		t.Errorf("the zero MAC maps to port %d, want 1", p)
	}
	if c := tb.counted(); c[1] != 1 || tb.ports[1].learned.Load() != 1 {
		t.Errorf("counts %v, %d; want one entry on port 1", c, tb.ports[1].learned.Load())
	}
}

// Learning through a port's last source: a station sending without pause
// never ages out, though most of its frames skip the table; a station
// that moves is at its new port from its first frame there; a cached slot
// that another MAC took is learned again.
func TestLearnFromLastSource(t *testing.T) {
	const age = 1_000_000
	tb := newFDB(64, age, 0, 2)
	src := make([]lastSource, 2)
	x := macN(1)
	kx := macKey(x)
	for now := int64(0); now <= 5*age; now += age / 64 {
		tb.learnFrom(&src[0], x, kx, 0, now)
		if p := tb.lookup(x, kx, now); p != 0 {
			t.Fatalf("at %d ns, sending every %d ns: x is on port %d, want 0", now, age/64, p)
		}
	}
	now := int64(5*age + 1)
	tb.learnFrom(&src[1], x, kx, 1, now)
	if p := tb.lookup(x, kx, now); p != 1 {
		t.Fatalf("x moved to port 1: lookup says %d", p)
	}
	now++
	tb.learnFrom(&src[0], x, kx, 0, now) // back at once, port 0's cache still fresh
	if p := tb.lookup(x, kx, now); p != 0 {
		t.Fatalf("x moved back to port 0: lookup says %d", p)
	}

	// Another MAC takes x's slot once x is stale; x's next frame, within
	// port 0's cache time, learns it again.
	slot := src[0].slot
	now += age + 1
	slot.key.Store(macKey(macN(2))<<16 | 1) // as take would, after x went stale
	src[0].at = now                         // the cache itself is fresh
	tb.learnFrom(&src[0], x, kx, 0, now)
	if p := tb.lookup(x, kx, now); p != 0 {
		t.Fatalf("x's cached slot was reused: lookup says %d, want 0", p)
	}
}
