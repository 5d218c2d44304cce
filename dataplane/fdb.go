package dataplane

import (
	"hash/maphash"
	"sync/atomic"
)

// fdb is the L2 learning table: source MAC → port, shared by every worker
// without a lock. It is an open-addressing hash table of fixed size whose
// slots are two atomic words: the key (MAC in the high 48 bits, port+1 in
// the low 16) and the time the entry was last seen. Slots never become
// empty again, so probe chains stay intact: an entry older than the aging
// time counts as absent, and its slot may be taken by another MAC or
// turned into a tombstone by the aging sweep.
//
// The home slot of a MAC comes from hash/maphash with a seed drawn when the
// table is made, so that nobody outside can compute which MACs share a
// victim's probe window (with an unseeded multiplicative hash, eight
// crafted MACs kept a victim from ever being learned). Each port may hold
// at most limit entries, stale ones included until they are reused or
// swept: a port security maximum, so that a flood of random source MACs on
// one port cannot fill the table for the others.
//
// Every change of a slot's key is a compare-and-swap, and only its winner
// adjusts the per-port counts, so they equal the number of slots holding
// each port's MACs. A racing reader may see a new key with the old time
// for an instant, which at worst floods one frame.
type fdb struct {
	seed  maphash.Seed
	slots []fdbSlot
	mask  uint64
	age   int64 // ns; entries last seen longer ago are stale
	limit int64 // entries per port; 0 for none
	ports []fdbPort
	full  atomic.Uint64 // MACs not learned: no usable slot in the probe window
	sweep atomic.Uint64 // the aging sweep's cursor
}

type fdbSlot struct {
	key  atomic.Uint64
	seen atomic.Int64
}

// fdbPort are one port's learning counters, on a cache line of their own:
// learned is written by the port's worker on every new MAC.
type fdbPort struct {
	learned atomic.Int64  // slots holding a MAC of the port
	limited atomic.Uint64 // new MACs not learned because the port was at its limit
	_       [48]byte
}

const (
	// fdbProbe is how many slots a lookup or insert inspects.
	fdbProbe = 8
	// fdbSweep is how many slots the aging sweep looks at when a port at
	// its limit sees a new MAC.
	fdbSweep = 64
	// tomb is the key of a slot whose entry was swept: a broadcast MAC,
	// which is never learned or looked up.
	tomb = ^uint64(0)
)

func newFDB(size int, age int64, limit int, nports int) *fdb {
	n := 1
	for n < size {
		n <<= 1
	}
	return &fdb{
		seed:  maphash.MakeSeed(),
		slots: make([]fdbSlot, n), mask: uint64(n - 1), age: age,
		limit: int64(max(limit, 0)), ports: make([]fdbPort, nports),
	}
}

func macKey(mac []byte) uint64 {
	return uint64(mac[0])<<40 | uint64(mac[1])<<32 | uint64(mac[2])<<24 |
		uint64(mac[3])<<16 | uint64(mac[4])<<8 | uint64(mac[5])
}

// home returns the first slot of mac, the 6 bytes whose key is macKey(mac).
func (t *fdb) home(mac []byte) uint64 { return maphash.Bytes(t.seed, mac) }

// keyPort returns the port of a slot's key.
func keyPort(k uint64) int { return int(k&0xffff) - 1 }

// lookup returns the port the MAC mac (key k) was learned on, or -1.
func (t *fdb) lookup(mac []byte, k uint64, now int64) int {
	i := t.home(mac)
	for p := uint64(0); p < fdbProbe; p++ {
		s := &t.slots[(i+p)&t.mask]
		sk := s.key.Load()
		if sk == 0 {
			return -1
		}
		if sk>>16 == k {
			if now-s.seen.Load() > t.age {
				return -1
			}
			return keyPort(sk)
		}
	}
	return -1
}

// learn records that the MAC mac (key k) was seen on port at now. It
// returns the slot that now holds mac on port, or nil if none does.
func (t *fdb) learn(mac []byte, k uint64, port int, now int64) *fdbSlot {
	i := t.home(mac)
	want := k<<16 | uint64(port+1)
	var free *fdbSlot // the first stale or swept slot
	var freeKey uint64
	for p := uint64(0); p < fdbProbe; p++ {
		s := &t.slots[(i+p)&t.mask]
		sk := s.key.Load()
		switch {
		case sk>>16 == k && sk != 0 && sk != tomb:
			if sk != want { // the station moved
				if t.atLimit(port, now) || !s.key.CompareAndSwap(sk, want) {
					return nil
				}
				t.ports[keyPort(sk)].learned.Add(-1)
				t.ports[port].learned.Add(1)
				s.seen.Store(now)
				return s
			}
			// Refresh at most a few times per aging period, so that a busy
			// flow does not bounce the slot's cache line between workers.
			if now-s.seen.Load() > t.age>>3 {
				s.seen.Store(now)
			}
			return s
		case sk == 0:
			if free != nil {
				return t.take(free, freeKey, want, port, now)
			}
			if t.atLimit(port, now) {
				return nil
			}
			if s.key.CompareAndSwap(0, want) {
				t.ports[port].learned.Add(1)
				s.seen.Store(now)
				return s
			}
			p-- // lost the race for this slot; look at it again
		case free == nil && (sk == tomb || now-s.seen.Load() > t.age):
			free, freeKey = s, sk
		}
	}
	if free != nil {
		return t.take(free, freeKey, want, port, now)
	}
	t.full.Add(1)
	return nil
}

// take puts want, a MAC new to the table, in slot s, which held old (a
// stale entry or a tombstone), unless the port is at its limit or another
// worker changed the slot first. It returns s if it did, else nil.
func (t *fdb) take(s *fdbSlot, old, want uint64, port int, now int64) *fdbSlot {
	if t.atLimit(port, now) || !s.key.CompareAndSwap(old, want) {
		return nil
	}
	if old != tomb {
		t.ports[keyPort(old)].learned.Add(-1)
	}
	t.ports[port].learned.Add(1)
	s.seen.Store(now)
	return s
}

// lastSource is, for one ingress port, the slot its last source MAC was
// found or learned in, so that frames from one station in a row skip the
// hash and the probe: while the slot holds the same key (the station has
// not moved, the slot was not reused) and learn ran less than age/8 ago,
// learn would only have refreshed the slot's time, at most every age/8.
// So an entry in use is refreshed at least every age/4 and never ages
// out. Only the port's receiving worker uses it.
type lastSource struct {
	slot *fdbSlot
	key  uint64 // the slot's key: MAC and port
	at   int64  // when learn last ran for it
}

// learnFrom is learn through port's lastSource c.
func (t *fdb) learnFrom(c *lastSource, mac []byte, k uint64, port int, now int64) {
	key := k<<16 | uint64(port+1)
	if c.slot != nil && c.key == key && now-c.at <= t.age>>3 && c.slot.key.Load() == key {
		return
	}
	c.slot, c.key, c.at = t.learn(mac, k, port, now), key, now
}

// atLimit reports whether port may learn no more MACs, counting the refusal.
// At the limit it first sweeps part of the table, which may free some of
// the port's stale entries.
func (t *fdb) atLimit(port int, now int64) bool {
	c := &t.ports[port]
	if t.limit == 0 || c.learned.Load() < t.limit {
		return false
	}
	t.expire(now, fdbSweep)
	if c.learned.Load() < t.limit {
		return false
	}
	c.limited.Add(1)
	return true
}

// expire turns the stale entries among the next n slots of the sweep's
// cursor into tombstones, returning them to their ports' counts. It runs
// only when a port at its limit sees a new MAC, so a whole table is swept
// after size/n such frames.
func (t *fdb) expire(now int64, n int) {
	end := t.sweep.Add(uint64(n))
	for i := end - uint64(n); i != end; i++ {
		s := &t.slots[i&t.mask]
		sk := s.key.Load()
		if sk == 0 || sk == tomb || now-s.seen.Load() <= t.age {
			continue
		}
		if s.key.CompareAndSwap(sk, tomb) {
			t.ports[keyPort(sk)].learned.Add(-1)
		}
	}
}
