package marking

import (
	"fmt"
	"sync/atomic"

	"github.com/ecnswitch/ecnswitch/packet"
)

// NonECT is what a chain does with a packet it would mark that is not
// ECN-capable (RFC 3168 §5: Not-ECT).
type NonECT uint8

// Non-ECT actions.
const (
	NonECTDrop NonECT = iota // drop it, as RED does (RFC 3168 §7); the default
	NonECTPass               // let it through unmarked, as ECN♯'s ns-3 code does
)

func (a NonECT) String() string {
	if a == NonECTPass {
		return "pass"
	}
	return "drop"
}

// Member is one named marker of a chain. The name labels its counters.
type Member struct {
	Name   string
	Marker Marker
}

// MemberCounts are one member's votes: how many packets it said Mark and
// Drop for, whatever the chain then decided.
type MemberCounts struct {
	Name  string `json:"name"`
	Marks uint64 `json:"marks"`
	Drops uint64 `json:"drops"`
}

// ChainCounts are a chain's outcomes after the non-ECT policy. A packet
// that every member passes touches no counter; the dataplane counts
// packets.
type ChainCounts struct {
	Marked        uint64 `json:"marked"`          // Mark returned: the packet gets CE
	Dropped       uint64 `json:"dropped"`         // Drop returned, including NonECTDropped
	NonECTDropped uint64 `json:"non_ect_dropped"` // marks turned into drops because the packet was Not-ECT
	NonECTPassed  uint64 `json:"non_ect_passed"`  // marks turned into passes because the packet was Not-ECT
}

// chainCounter is a counter with one writer, the port's worker, and any
// number of readers: the writer adds with a plain load and store (no locked
// read-modify-write), readers load atomically.
type chainCounter struct{ n atomic.Uint64 }

func (c *chainCounter) inc()         { c.n.Store(c.n.Load() + 1) }
func (c *chainCounter) load() uint64 { return c.n.Load() }

// chainMember is a member with its counters.
type chainMember struct {
	name         string
	marker       Marker
	marks, drops chainCounter
}

// Chain runs several markers on the same packet at one stage. Every member
// sees every packet, so each keeps its own state (averages, random draws)
// and counters; the chain drops the packet if any member says Drop, else
// marks it if any member says Mark — "a packet gets marked if anyone decides
// to mark it" (002 §IV-B). A chain is itself a Marker, so it can be a member
// of another chain.
//
// A chain is used by one goroutine, the port's worker; its counters may be
// read by any goroutine.
type Chain struct {
	stage   Stage
	nonECT  NonECT
	members []chainMember
	last    int  // index of the member whose verdict the last packet got; -1 if none
	needs   Need // what the members read, together

	marked, dropped, nonECTDropped, nonECTPassed chainCounter
}

// NewChain returns a chain of members for one stage. Names must be unique
// and non-empty, markers non-nil. A member that reports its own placement
// through a Stage() Stage method must report stage. An empty chain passes
// every packet.
func NewChain(stage Stage, nonECT NonECT, members ...Member) (*Chain, error) {
	if err := checkStage("chain", stage); err != nil {
		return nil, err
	}
	if nonECT > NonECTPass {
		return nil, fmt.Errorf("marking: chain: non_ect %d out of range, want drop or pass", nonECT)
	}
	c := &Chain{stage: stage, nonECT: nonECT, members: make([]chainMember, len(members)), last: -1}
	for i, m := range members {
		if m.Name == "" {
			return nil, fmt.Errorf("marking: chain: member %d has no name", i)
		}
		if m.Marker == nil {
			return nil, fmt.Errorf("marking: chain: member %q has no marker", m.Name)
		}
		for _, prev := range members[:i] {
			if prev.Name == m.Name {
				return nil, fmt.Errorf("marking: chain: member name %q used twice", m.Name)
			}
		}
		if p, ok := m.Marker.(interface{ Stage() Stage }); ok && p.Stage() != stage {
			return nil, fmt.Errorf("marking: chain: member %q is placed at %v, the chain at %v", m.Name, p.Stage(), stage)
		}
		c.members[i].name, c.members[i].marker = m.Name, m.Marker
	}
	for i := range c.members {
		c.needs |= Needs(c.members[i].marker)
	}
	return c, nil
}

// Stage returns the stage the chain runs at.
func (c *Chain) Stage() Stage { return c.stage }

// Len returns the number of members.
func (c *Chain) Len() int { return len(c.members) }

// Decide asks every member about the packet and returns the chain's
// verdict for a packet with ECN codepoint ecn: Drop if any member says
// Drop; else Mark if any says Mark and the packet is ECN-capable (ECT(0),
// ECT(1), or already CE, which stays CE); a Mark for a Not-ECT packet
// becomes Drop or Pass by the chain's NonECT action. v.Value and
// v.Threshold are those of the member that decided (the first member with
// the strongest verdict).
func (c *Chain) Decide(v *View, ecn packet.ECN) Verdict {
	verdict := c.run(v)
	if verdict == Mark && ecn == packet.NotECT {
		if c.nonECT == NonECTPass {
			c.nonECTPassed.inc()
			return Pass
		}
		c.nonECTDropped.inc()
		verdict = Drop
	}
	switch verdict {
	case Mark:
		c.marked.inc()
	case Drop:
		c.dropped.inc()
	}
	return verdict
}

// Mark is Decide for an ECN-capable packet, so that a chain can be a
// member of another chain, which then applies its own non-ECT policy.
func (c *Chain) Mark(v *View) Verdict { return c.Decide(v, packet.ECT0) }

// run asks every member and combines their verdicts.
func (c *Chain) run(v *View) Verdict {
	if len(c.members) == 1 { // the usual chain: nothing to combine
		m := &c.members[0]
		r := m.marker.Mark(v)
		switch r {
		case Mark:
			m.marks.inc()
		case Drop:
			m.drops.inc()
		default:
			c.last = -1
			return r
		}
		c.last = 0
		return r
	}
	best, who := Pass, -1
	var value, threshold int64
	for i := range c.members {
		m := &c.members[i]
		switch r := m.marker.Mark(v); r {
		case Mark, Drop:
			if r == Mark {
				m.marks.inc()
			} else {
				m.drops.inc()
			}
			if r > best {
				best, who, value, threshold = r, i, v.Value, v.Threshold
			}
		}
	}
	c.last = who
	if who >= 0 {
		v.Value, v.Threshold = value, threshold
	}
	return best
}

// Needs implements Needer: what its members read, together.
func (c *Chain) Needs() Need { return c.needs }

// Peers returns, for each of a port's nq queues, the other queue the
// chain's members read for its packets (Peerer), or -1; nil when no member
// reads one. Members that name different peers for one queue, or a peer
// outside the port, are an error.
func (c *Chain) Peers(nq int) ([]int, error) {
	if c.needs&NeedPeer == 0 {
		return nil, nil
	}
	peers := make([]int, nq)
	for q := range peers {
		peers[q] = -1
		for i := range c.members {
			m := &c.members[i]
			pr, ok := m.marker.(Peerer)
			if !ok || Needs(m.marker)&NeedPeer == 0 {
				continue
			}
			switch p := pr.Peer(q); {
			case p < 0:
			case p >= nq || p == q:
				return nil, fmt.Errorf("marking: chain: member %q reads queue %d beside queue %d of a port of %d queues", m.name, p, q, nq)
			case peers[q] >= 0 && peers[q] != p:
				return nil, fmt.Errorf("marking: chain: member %q reads queue %d beside queue %d, another member queue %d", m.name, p, q, peers[q])
			default:
				peers[q] = p
			}
		}
	}
	return peers, nil
}

// Decider returns the index of the member whose verdict the last packet
// got, or -1 if every member passed it. Like Decide, it belongs to the
// port's worker.
func (c *Chain) Decider() int { return c.last }

// Name returns member i's name.
func (c *Chain) Name(i int) string { return c.members[i].name }

// Counts appends every member's counts to dst, in chain order, and returns
// the extended slice; with enough capacity in dst it does not allocate.
func (c *Chain) Counts(dst []MemberCounts) []MemberCounts {
	for i := range c.members {
		m := &c.members[i]
		dst = append(dst, MemberCounts{Name: m.name, Marks: m.marks.load(), Drops: m.drops.load()})
	}
	return dst
}

// Inherit adds the counts of old, a chain this one replaces, to its own:
// each member's from old's member of the same name, if it has one, and
// the chain's outcomes. It must run before the chain decides anything, on
// the goroutine that will use it.
func (c *Chain) Inherit(old *Chain) {
	for i := range c.members {
		m := &c.members[i]
		for j := range old.members {
			if o := &old.members[j]; o.name == m.name {
				m.marks.n.Add(o.marks.load())
				m.drops.n.Add(o.drops.load())
			}
		}
	}
	c.marked.n.Add(old.marked.load())
	c.dropped.n.Add(old.dropped.load())
	c.nonECTDropped.n.Add(old.nonECTDropped.load())
	c.nonECTPassed.n.Add(old.nonECTPassed.load())
}

// Totals returns the chain's outcome counts.
func (c *Chain) Totals() ChainCounts {
	return ChainCounts{
		Marked:        c.marked.load(),
		Dropped:       c.dropped.load(),
		NonECTDropped: c.nonECTDropped.load(),
		NonECTPassed:  c.nonECTPassed.load(),
	}
}
