package xdpgen

import "fmt"

// HeadLen is how many bytes of each frame an Entry holds: the smallest
// frame the program sends (a 64-byte Ethernet frame without its FCS).
const HeadLen = 60

// MaxBatch is the most frames a run sends between two flushes
// (TEST_XDP_MAX_BATCH).
const MaxBatch = 256

// Entry is one frame of a thread's cycle.
type Entry struct {
	Head [HeadLen]byte // the frame's first bytes
	Len  uint16        // its length without FCS, HeadLen to Config.MaxLen
	Flow uint16        // its flow: the index of its sequence number
	// Cost is the frame's time at the thread's rate, in 1/256 ns (see
	// Program.Pace); 0 in every entry sends as fast as the program runs.
	Cost uint64
}

// Config describes a generator's frames.
type Config struct {
	// Template is the frame every run starts from (its first MaxLen bytes;
	// the program overwrites the head and trims the tail): the bytes past
	// HeadLen of every frame come from it.
	Template []byte
	// MaxLen is the length of the largest frame, and of the template.
	MaxLen int
	// Cycles holds the entries each thread sends, in turn, round and round.
	// Threads must not share flows.
	Cycles [][]Entry
	// Flows is the number of flows; every Entry.Flow is below it.
	Flows int
	// SeqOff and TimeOff are where the program writes the sequence number
	// (4 bytes) and the TX time (8 bytes) in each frame's head.
	SeqOff, TimeOff int
	// Redirect, when not 0, is the ifindex the program redirects frames
	// to instead of returning XDP_TX.
	Redirect int
}

func (c *Config) validate() error {
	switch {
	case c.MaxLen < HeadLen || c.MaxLen > 3520:
		return fmt.Errorf("max_len: %d bytes: want %d to 3520 (a page less the headroom and the frame's tail)", c.MaxLen, HeadLen)
	case len(c.Template) < c.MaxLen:
		return fmt.Errorf("template: %d bytes: want max_len (%d)", len(c.Template), c.MaxLen)
	case len(c.Cycles) == 0:
		return fmt.Errorf("cycles: none: want one per thread")
	case c.Flows < 1 || c.Flows > 1<<16:
		return fmt.Errorf("flows: %d: want 1 to 65536", c.Flows)
	case c.SeqOff < 0 || c.SeqOff+4 > HeadLen:
		return fmt.Errorf("seq_off: %d: want 0 to %d", c.SeqOff, HeadLen-4)
	case c.TimeOff < 0 || c.TimeOff+8 > HeadLen:
		return fmt.Errorf("time_off: %d: want 0 to %d", c.TimeOff, HeadLen-8)
	case c.Redirect < 0:
		return fmt.Errorf("redirect: ifindex %d: want ≥ 0", c.Redirect)
	}
	for t, cyc := range c.Cycles {
		if len(cyc) == 0 {
			return fmt.Errorf("cycles[%d]: empty", t)
		}
		for i, e := range cyc {
			if (e.Cost == 0) != (cyc[0].Cost == 0) {
				return fmt.Errorf("cycles[%d][%d]: cost %d: want every entry of a cycle paced (cost > 0) or none", t, i, e.Cost)
			}
			if int(e.Len) < HeadLen || int(e.Len) > c.MaxLen {
				return fmt.Errorf("cycles[%d][%d]: length %d: want %d to max_len (%d)", t, i, e.Len, HeadLen, c.MaxLen)
			}
			if int(e.Flow) >= c.Flows {
				return fmt.Errorf("cycles[%d][%d]: flow %d: want below flows (%d)", t, i, e.Flow, c.Flows)
			}
		}
	}
	return nil
}
