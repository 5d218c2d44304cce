package dataplane

import (
	"sync/atomic"
)

// fdb is the L2 learning table: source MAC → port, shared by every worker
// without a lock. It is an open-addressing hash table of fixed size whose
// slots are two atomic words: the key (MAC in the high 48 bits, port+1 in the
// low 16) and the time the entry was last seen. Slots are never emptied;
// an entry older than the aging time counts as absent and its slot may be
// taken by another MAC. A racing reader may see a new key with the old
// time for an instant, which at worst floods one frame.
type fdb struct {
	slots []fdbSlot
	mask  uint64
	age   int64 // ns; entries last seen longer ago are stale
	full  atomic.Uint64
}

type fdbSlot struct {
	key  atomic.Uint64
	seen atomic.Int64
}

// fdbProbe is how many slots a lookup or insert inspects.
const fdbProbe = 8

func newFDB(size int, age int64) *fdb {
	n := 1
	for n < size {
		n <<= 1
	}
	return &fdb{slots: make([]fdbSlot, n), mask: uint64(n - 1), age: age}
}

func macKey(mac []byte) uint64 {
	return uint64(mac[0])<<40 | uint64(mac[1])<<32 | uint64(mac[2])<<24 |
		uint64(mac[3])<<16 | uint64(mac[4])<<8 | uint64(mac[5])
}

func (t *fdb) home(mac uint64) uint64 {
	h := mac * 0x9e3779b97f4a7c15
	return h >> 32
}

// lookup returns the port a MAC was learned on, or -1.
func (t *fdb) lookup(mac uint64, now int64) int {
	i := t.home(mac)
	for p := uint64(0); p < fdbProbe; p++ {
		s := &t.slots[(i+p)&t.mask]
		k := s.key.Load()
		if k == 0 {
			return -1
		}
		if k>>16 == mac {
			if now-s.seen.Load() > t.age {
				return -1
			}
			return int(k&0xffff) - 1
		}
	}
	return -1
}

// learn records that mac was seen on port at now.
func (t *fdb) learn(mac uint64, port int, now int64) {
	i := t.home(mac)
	want := mac<<16 | uint64(port+1)
	var stale *fdbSlot
	for p := uint64(0); p < fdbProbe; p++ {
		s := &t.slots[(i+p)&t.mask]
		k := s.key.Load()
		switch {
		case k>>16 == mac:
			if k != want {
				s.key.Store(want) // the station moved
			}
			// Refresh at most a few times per aging period, so that a busy
			// flow does not bounce the slot's cache line between workers.
			if now-s.seen.Load() > t.age>>3 {
				s.seen.Store(now)
			}
			return
		case k == 0:
			if s.key.CompareAndSwap(0, want) {
				s.seen.Store(now)
				return
			}
			p-- // lost the race for this slot; look at it again
		case stale == nil && now-s.seen.Load() > t.age:
			stale = s
		}
	}
	if stale != nil {
		stale.key.Store(want)
		stale.seen.Store(now)
		return
	}
	t.full.Add(1)
}
