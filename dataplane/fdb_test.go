package dataplane_test

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports/memport"
)

// from returns a UDP frame with source MAC src to the host on port to.
func from(t *testing.T, src packet.MAC, to int) []byte {
	return packettest.UDP4(t, packettest.Options{SrcMAC: src, DstMAC: dataplanetest.MAC(to)})
}

// reached sends a frame from the host on port 2 to the host on port
// victim and reports which ports it reached: only victim when the switch
// has learned that host's MAC, every port but 2 when it floods.
func reached(t *testing.T, r *dataplanetest.Rig, victim int) []int {
	t.Helper()
	r.Send(2, dataplanetest.Frame(t, 2, victim, packettest.Options{}))
	r.Step(10_000, 1000)
	var got []int
	for h := range r.Hosts {
		if n := len(r.Recv(h)); n > 0 {
			got = append(got, h)
		}
	}
	return got
}

// unseededHome is the learning table's home slot before issue 12: a fixed
// multiplicative hash anyone can compute, here for 4096 slots.
func unseededHome(mac packet.MAC) uint64 {
	var b [8]byte
	copy(b[2:], mac[:])
	return (binary.BigEndian.Uint64(b[:]) * 0x9e3779b97f4a7c15 >> 32) & 4095
}

// Eight MACs crafted to share the victim's home slot under the old,
// unseeded hash filled its whole probe window, so the victim was never
// learned and every frame to it flooded. With a seeded hash they land
// anywhere.
func TestCraftedMACsDoNotBlockAVictim(t *testing.T) {
	r := dataplanetest.New(t, dataplanetest.Config(3, 1, 0, 1<<20), memport.Link{})
	victim := dataplanetest.MAC(1)
	home := unseededHome(victim)
	var crafted [][]byte
	for i := uint32(0); len(crafted) < 8; i++ {
		m := packet.MAC{0x02, 0xee}
		binary.BigEndian.PutUint32(m[2:], i)
		if unseededHome(m) == home {
			crafted = append(crafted, from(t, m, 2))
		}
	}
	r.Send(0, crafted...)
	r.Drain(1000)
	r.Send(1, dataplanetest.Frame(t, 1, 0, packettest.Options{})) // the victim speaks
	r.Drain(1000)
	for h := range r.Hosts {
		r.Recv(h)
	}
	if got := reached(t, r, 1); len(got) != 1 || got[0] != 1 {
		t.Fatalf("a frame to the victim reached ports %v, want only its port 1: it was not learned", got)
	}
}

// A flood of random source MACs on one port fills at most that port's
// share of the table (forwarding.mac_limit): a new station on another
// port is still learned, and the refused MACs are counted.
func TestMACLimitPerPort(t *testing.T) {
	const limit, n = 512, 12000
	cfg := dataplanetest.Config(3, 1, 0, 1<<20)
	cfg.Forwarding.MACLimit = limit
	r := dataplanetest.New(t, cfg, memport.Link{})
	r.Send(2, dataplanetest.Frame(t, 2, 0, packettest.Options{})) // learn host 2: the flood below is unicast
	r.Drain(1000)
	rng := rand.New(rand.NewPCG(12, 12))
	for sent := 0; sent < n; {
		batch := make([][]byte, 0, 1000)
		for range 1000 {
			m := packet.MAC{0x02}
			binary.BigEndian.PutUint32(m[1:5], rng.Uint32())
			m[5] = byte(rng.Uint32())
			batch = append(batch, from(t, m, 2))
		}
		sent += r.Send(0, batch...)
		r.Drain(1000)
	}
	r.Send(1, dataplanetest.Frame(t, 1, 0, packettest.Options{})) // a new station on port 1
	r.Drain(1000)
	for h := range r.Hosts {
		r.Recv(h)
	}
	if got := reached(t, r, 1); len(got) != 1 || got[0] != 1 {
		t.Fatalf("a frame to the new station reached ports %v, want only its port 1", got)
	}
	st := r.Switch.Stats()
	p0 := st.Ports[0]
	if p0.MACs != limit || p0.MACLimited == 0 || int(p0.MACs)+int(p0.MACLimited)+int(st.MACTable.Full) < n {
		t.Errorf("port 0 holds %d MACs, %d refused at the limit, %d found no slot; want %d held and the rest of %d counted",
			p0.MACs, p0.MACLimited, st.MACTable.Full, limit, n)
	}
	if st.Ports[1].MACs != 1 || st.Ports[2].MACs != 1 || st.MACTable.Entries != limit+2 || st.MACTable.Limit != limit {
		t.Errorf("MACs on ports 1 and 2: %d, %d; table %+v", st.Ports[1].MACs, st.Ports[2].MACs, *st.MACTable)
	}
}

// Entries age out of a port's count: once its MACs are stale, a port at
// its limit learns new ones (the sweep frees the old).
func TestMACLimitFreesStaleEntries(t *testing.T) {
	const limit = 16
	cfg := dataplanetest.Config(3, 1, 0, 1<<20)
	cfg.Forwarding.MACLimit = limit
	cfg.Forwarding.TableSize = 256
	cfg.Forwarding.AgeTime = 1_000_000 // 1 ms
	r := dataplanetest.New(t, cfg, memport.Link{})
	wave := func(base byte) {
		var fs [][]byte
		for i := range 2 * limit {
			fs = append(fs, from(t, packet.MAC{0x02, base, 0, 0, 0, byte(i)}, 2))
		}
		r.Send(0, fs...)
		r.Drain(1000)
	}
	wave(1)
	if st := r.Switch.Stats(); st.Ports[0].MACs != limit || st.Ports[0].MACLimited != limit {
		t.Fatalf("first wave: %d MACs, %d refused; want %d and %d", st.Ports[0].MACs, st.Ports[0].MACLimited, limit, limit)
	}
	r.Step(2_000_000, 1_000_000) // every entry is stale
	wave(2)
	// The first refused MAC sweeps 64 slots, the next ones the rest of
	// the 256: the port learns all but the few that came before its
	// stale entries were swept.
	if st := r.Switch.Stats(); st.Ports[0].MACs != limit || st.MACTable.Entries != limit {
		t.Errorf("second wave: port 0 holds %d MACs, the table %d; want %d of the new wave", st.Ports[0].MACs, st.MACTable.Entries, limit)
	}
}

// Storm control: with a flood rate of 1000 frames/s in a bucket of 100,
// 300 broadcasts at once flood 100 and drop 200 as storm; 50 ms later the
// bucket holds 50 again; every frame is accounted for.
func TestStormControl(t *testing.T) {
	cfg := dataplanetest.Config(3, 1, 0, 1<<20)
	cfg.Forwarding.FloodRate, cfg.Forwarding.FloodBurst = 1000, 100
	for i := range cfg.Ports {
		cfg.Ports[i].Coalesce = -1 // each pass sends what it floods: the clock stands still
	}
	r := dataplanetest.New(t, cfg, memport.Link{})
	bc := packettest.UDP4(t, packettest.Options{SrcMAC: dataplanetest.MAC(0), DstMAC: packet.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}})
	burst := func(n int) [][]byte {
		fs := make([][]byte, n)
		for i := range fs {
			fs[i] = bc
		}
		return fs
	}
	r.Send(0, burst(300)...)
	r.Switch.Poll() // all at one instant: the clock does not move
	for range 10 {
		r.Switch.Poll()
	}
	if n1, n2 := len(r.Recv(1)), len(r.Recv(2)); n1 != 100 || n2 != 100 {
		t.Fatalf("300 broadcasts at once reached ports 1 and 2 %d and %d times; want the bucket's 100", n1, n2)
	}
	r.Step(50_000_000, 50_000_000)
	r.Send(0, burst(300)...)
	for range 10 {
		r.Switch.Poll()
	}
	if n1 := len(r.Recv(1)); n1 != 50 {
		t.Errorf("50 ms later: %d flooded, want 50 (1000/s)", n1)
	}
	// Unicast to a known MAC is not flooding and is never limited.
	r.Send(1, dataplanetest.Frame(t, 1, 0, packettest.Options{}))
	r.Step(10_000, 1000)
	st := r.Switch.Stats()
	if got := st.Ports[0].Drops[dataplane.DropStorm.String()]; got != 450 {
		t.Errorf("storm drops on port 0: %d, want 450", got)
	}
	if n0 := len(r.Recv(0)); n0 != 1 {
		t.Errorf("the unicast reply: %d frames at port 0", n0)
	}
	if a := r.Switch.Account(); !a.Balanced() || a.Held != 0 {
		t.Errorf("accounting %+v", a)
	}
}

// The default flood rate lets ordinary flooding through: ARP, a first
// frame to a station not yet learned.
func TestStormControlDefault(t *testing.T) {
	r := dataplanetest.New(t, dataplanetest.Config(3, 1, 0, 1<<20), memport.Link{})
	fs := make([][]byte, dataplane.DefaultFloodBurst)
	for i := range fs {
		fs[i] = dataplanetest.Frame(t, 0, 1, packettest.Options{})
	}
	r.Send(0, fs...)
	r.Drain(1000)
	if st := r.Switch.Stats(); st.Ports[0].Drops[dataplane.DropStorm.String()] != 0 || st.Ports[0].Flooded != dataplane.DefaultFloodBurst {
		t.Errorf("a default burst of unknown unicast: %+v", st.Ports[0])
	}
}
