package dataplane_test

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// The trimming tests' port b: queue 0 takes the data, queue 1 the
// trimmed headers, marked DSCP trimDSCP.
const (
	trimDSCP  = 46
	trimRate  = 100_000_000
	trimBurst = 20
	trimSize  = 1000
)

// trimConfig is a switch forwarding port a to port b, whose queue 1 is
// the trim queue; change adapts port b.
func trimConfig(pool int64, change func(pc *dataplane.PortConfig)) dataplane.Config {
	cfg := dataplanetest.Config(2, 2, trimRate, pool)
	cfg.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 1}}
	cfg.Forwarding.NoLearning = true
	pc := &cfg.Ports[1]
	pc.Scheduler.Queues = []scheduler.QueueConfig{{}, {Strict: true}}
	pc.Trim = &dataplane.Trim{Queue: 1, DSCP: trimDSCP}
	if change != nil {
		change(pc)
	}
	return cfg
}

// trimFrames returns n frames of size bytes from a's host to b's, UDP
// over IPv4 or IPv6, each of its own source port.
func trimFrames(t *testing.T, n, size int, v6 bool) [][]byte {
	var fs [][]byte
	for i := range n {
		o := packettest.Options{Size: size, SrcPort: uint16(1000 + i), DstPort: 9, SrcMAC: dataplanetest.MAC(0), DstMAC: dataplanetest.MAC(1)}
		if v6 {
			fs = append(fs, packettest.UDP6(t, o))
		} else {
			fs = append(fs, packettest.UDP4(t, o))
		}
	}
	return fs
}

// burst sends frames from a at once and returns what b's host received
// once the switch is idle.
func burst(t *testing.T, r *dataplanetest.Rig, frames [][]byte) [][]byte {
	t.Helper()
	r.Send(0, frames...)
	var got [][]byte
	for range 1000 {
		r.Step(100_000, 10_000)
		got = append(got, r.Recv(1)...)
		if r.Switch.Account().Held == 0 && r.Backlog(0) == 0 {
			break
		}
	}
	return append(got, r.Recv(1)...)
}

// checkTrimmedFrame checks a frame b's host received trimmed: cut to the
// headers plus packet.DefaultTrimPayload, DSCP trimDSCP, and valid by
// gopacket (IPv4 header checksum, IP and UDP lengths, UDP checksum).
func checkTrimmedFrame(t *testing.T, f []byte, hdr int) {
	t.Helper()
	if len(f) != hdr+packet.DefaultTrimPayload {
		t.Fatalf("a trimmed frame of %d bytes, want %d", len(f), hdr+packet.DefaultTrimPayload)
	}
	p := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
	if el := p.ErrorLayer(); el != nil {
		t.Fatalf("gopacket: %v", el.Error())
	}
	u, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if u == nil || int(u.Length) != len(f)-(hdr-8) {
		t.Fatalf("UDP layer %v, want one %d bytes long", u, len(f)-(hdr-8))
	}
	switch ip := p.NetworkLayer().(type) {
	case *layers.IPv4:
		if _, v := ip.VerifyChecksum(); !v.Valid || ip.TOS>>2 != trimDSCP || int(ip.Length) != len(f)-14 {
			t.Fatalf("IPv4 header: checksum valid %v, TOS %#02x, length %d", v.Valid, ip.TOS, ip.Length)
		}
		_ = u.SetNetworkLayerForChecksum(ip)
	case *layers.IPv6:
		if ip.TrafficClass>>2 != trimDSCP || int(ip.Length) != len(f)-hdr+8 {
			t.Fatalf("IPv6 header: traffic class %#02x, payload length %d", ip.TrafficClass, ip.Length)
		}
		_ = u.SetNetworkLayerForChecksum(ip)
	}
	if _, v := u.VerifyChecksum(); !v.Valid || u.Checksum == 0 {
		t.Fatalf("UDP checksum %#04x, want %#04x", v.Actual, v.Correct)
	}
}

// trimTap counts a port's events: trims (checking each), and the egress
// events of trimmed packets.
type trimTap struct {
	t                    *testing.T
	why                  dataplane.DropReason
	trims, trimmedEgress int
	trimmedDrops         int
}

func (tp *trimTap) Record(ev *dataplane.Event) {
	switch {
	case ev.Kind == dataplane.EventTrim:
		tp.trims++
		if ev.Drop != tp.why || ev.Queue != 0 || ev.CutFrom != trimSize || !ev.Trimmed || len(ev.Frame) >= trimSize {
			tp.t.Errorf("trim event: %v, queue %d, cut from %d to %d bytes, trimmed %v; want %v, queue 0, from %d",
				ev.Drop, ev.Queue, ev.CutFrom, len(ev.Frame), ev.Trimmed, tp.why, trimSize)
		}
	case ev.Kind == dataplane.EventEgress && ev.Trimmed:
		tp.trimmedEgress++
	case ev.Kind == dataplane.EventDrop && ev.Trimmed:
		tp.trimmedDrops++
	}
}

// TestTrimReasons: every refusal of the data queue turns into a trim, over
// IPv4 and IPv6 — a static cap, the Dynamic Threshold, a full pool (the
// trim queue's reserve takes the headers) and an enqueue marker's drop.
// Every frame of a burst leaves b whole or trimmed (valid by gopacket,
// DSCP 46), the data queue counts the trims and their reason, the trim
// queue takes them, nothing is dropped, and the switch accounts for every
// packet.
func TestTrimReasons(t *testing.T) {
	for _, c := range []struct {
		name   string
		why    dataplane.DropReason
		whole  int // frames that leave whole
		pool   int64
		change func(pc *dataplane.PortConfig)
	}{
		{"static_cap", dataplane.DropStaticCap, 3, 1 << 20, func(pc *dataplane.PortConfig) {
			pc.Queues[0] = buffer.QueueConfig{Cap: 3 * trimSize}
		}},
		{"dynamic_threshold", dataplane.DropDynamicThreshold, 1, 100_000, func(pc *dataplane.PortConfig) {
			pc.Queues[0] = buffer.QueueConfig{Alpha: 0.01} // T = α·(B − ΣQ) ≈ 1000 B: one frame
		}},
		{"pool_full", dataplane.DropPoolFull, 5, 5 * trimSize, func(pc *dataplane.PortConfig) {
			pc.Queues[0] = buffer.QueueConfig{Alpha: buffer.MaxAlpha}
			pc.Queues[1] = buffer.QueueConfig{Alpha: 1, Reserve: 4000}
		}},
		{"enqueue_marker", dataplane.DropEnqueueMarker, 1, 1 << 20, func(pc *dataplane.PortConfig) {
			pc.Enqueue = []dataplane.MarkerSpec{{Name: "k1", New: func(q int) (marking.Marker, error) {
				return marking.NewRED(marking.CutOff(marking.MeasureQueue, marking.Bytes(1)), marking.Enqueue, q)
			}}}
		}},
	} {
		for _, v6 := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/ipv6=%v", c.name, v6), func(t *testing.T) {
				r := dataplanetest.New(t, trimConfig(c.pool, c.change), memport.Link{})
				tap := &trimTap{t: t, why: c.why}
				if err := r.Switch.AddTap(1, tap); err != nil {
					t.Fatal(err)
				}
				hdr := 14 + 20 + 8
				if v6 {
					hdr = 14 + 40 + 8
				}
				got := burst(t, r, trimFrames(t, trimBurst, trimSize, v6))
				whole, trimmed := 0, 0
				for _, f := range got {
					if len(f) == trimSize {
						whole++
						continue
					}
					checkTrimmedFrame(t, f, hdr)
					trimmed++
				}
				if whole != c.whole || trimmed != trimBurst-c.whole {
					t.Errorf("%d whole, %d trimmed; want %d, %d", whole, trimmed, c.whole, trimBurst-c.whole)
				}
				st := r.Switch.Stats().Ports[1]
				q0, q1 := st.Queues[0], st.Queues[1]
				reason := c.why.String()
				if c.why == dataplane.DropEnqueueMarker {
					reason = buffer.Marker.String()
				}
				if q0.Trimmed != uint64(trimmed) || q0.TrimDropped != 0 || q0.Drops[reason] != uint64(trimmed) || st.Trimmed != q0.Trimmed {
					t.Errorf("queue 0: trimmed %d (%d dropped), drops %v; port trimmed %d; want %d trimmed for %s",
						q0.Trimmed, q0.TrimDropped, q0.Drops, st.Trimmed, trimmed, reason)
				}
				if q1.Enqueued != uint64(trimmed) || q1.Trimmed != 0 || len(st.Drops) != 0 {
					t.Errorf("queue 1 took %d (trimmed %d), port dropped %v; want %d, 0, none", q1.Enqueued, q1.Trimmed, st.Drops, trimmed)
				}
				if tap.trims != trimmed || tap.trimmedEgress != trimmed || tap.trimmedDrops != 0 {
					t.Errorf("the tap saw %d trims, %d trimmed egress, %d trimmed drops; want %d, %d, 0", tap.trims, tap.trimmedEgress, tap.trimmedDrops, trimmed, trimmed)
				}
				if a := r.Switch.Account(); !a.Balanced() || a.Held != 0 || a.Received != trimBurst || a.Transmitted != trimBurst {
					t.Errorf("%+v: want %d received and transmitted, balanced", a, trimBurst)
				}
				if b := r.Switch.Buffer().PortBytes(1); b != 0 {
					t.Errorf("the buffer holds %d bytes of an idle port", b)
				}
			})
		}
	}
}

// TestTrimDropped: a trimmed packet the trim queue refuses is dropped and
// counted: with room for two headers, a burst of 20 into a 3-frame cap
// leaves 3 whole and 2 trimmed, and 15 are dropped at the trim queue's
// cap; sent = delivered whole + delivered trimmed + dropped.
func TestTrimDropped(t *testing.T) {
	r := dataplanetest.New(t, trimConfig(1<<20, func(pc *dataplane.PortConfig) {
		pc.Queues[0] = buffer.QueueConfig{Cap: 3 * trimSize}
		pc.Queues[1] = buffer.QueueConfig{Cap: 2*(42+packet.DefaultTrimPayload) + 10}
	}), memport.Link{})
	tap := &trimTap{t: t, why: dataplane.DropStaticCap}
	if err := r.Switch.AddTap(1, tap); err != nil {
		t.Fatal(err)
	}
	got := burst(t, r, trimFrames(t, trimBurst, trimSize, false))
	whole, trimmed := 0, 0
	for _, f := range got {
		if len(f) == trimSize {
			whole++
		} else {
			checkTrimmedFrame(t, f, 42)
			trimmed++
		}
	}
	st := r.Switch.Stats().Ports[1]
	dropped := st.Drops["static_cap"]
	if whole != 3 || trimmed != 2 || dropped != 15 || uint64(whole+trimmed)+dropped != trimBurst {
		t.Errorf("%d whole + %d trimmed + %d dropped of %d sent; want 3 + 2 + 15", whole, trimmed, dropped, trimBurst)
	}
	q0, q1 := st.Queues[0], st.Queues[1]
	if q0.Trimmed != 17 || q0.TrimDropped != 15 || st.TrimDropped != 15 || q1.Drops["static_cap"] != 15 || q0.Drops["static_cap"] != 17 {
		t.Errorf("queue 0: trimmed %d, %d of them dropped, drops %v; queue 1 drops %v; want 17, 15, 17 static_cap; 15 static_cap",
			q0.Trimmed, q0.TrimDropped, q0.Drops, q1.Drops)
	}
	if tap.trims != 17 || tap.trimmedEgress != 2 || tap.trimmedDrops != 15 {
		t.Errorf("the tap saw %d trims, %d trimmed egress, %d trimmed drops; want 17, 2, 15", tap.trims, tap.trimmedEgress, tap.trimmedDrops)
	}
	if a := r.Switch.Account(); !a.Balanced() || a.Held != 0 {
		t.Errorf("%+v: want balanced, nothing held", a)
	}
}

// TestTrimNotEligible: what packet.Trim does not trim — TCP, a non-IP
// frame — and what the trim queue itself or a queue outside trim.queues
// refuses is dropped whole as before, and leaves its bytes alone.
func TestTrimNotEligible(t *testing.T) {
	nonIP := func(i int) []byte {
		f := make([]byte, trimSize)
		m0, m1 := dataplanetest.MAC(0), dataplanetest.MAC(1)
		copy(f, m1[:])
		copy(f[6:], m0[:])
		binary.BigEndian.PutUint16(f[12:], 0x88b5) // local experimental EtherType
		f[20] = byte(i)
		return f
	}
	for _, c := range []struct {
		name   string
		frame  func(i int) []byte
		change func(pc *dataplane.PortConfig)
	}{
		{"tcp", func(i int) []byte {
			return packettest.TCP4(t, packettest.Options{Size: trimSize, SrcPort: uint16(i), SrcMAC: dataplanetest.MAC(0), DstMAC: dataplanetest.MAC(1)})
		}, nil},
		{"non-ip", nonIP, nil},
		{"refused by the trim queue", func(i int) []byte {
			o := packettest.Options{Size: trimSize, SrcPort: uint16(i), DSCP: 8, SrcMAC: dataplanetest.MAC(0), DstMAC: dataplanetest.MAC(1)}
			return packettest.UDP4(t, o) // class selector 1: queue 1, the trim queue
		}, func(pc *dataplane.PortConfig) {
			pc.Queues[1] = buffer.QueueConfig{Cap: 3 * trimSize}
		}},
		{"not in trim.queues", func(i int) []byte {
			return trimFrames(t, 1, trimSize, false)[0]
		}, func(pc *dataplane.PortConfig) {
			// Three queues: data in 0, trims in 2, and only queue 1's refusals trimmed.
			pc.Scheduler.Queues = []scheduler.QueueConfig{{}, {}, {Strict: true}}
			pc.Scheduler.NumQueues = 3
			pc.Queues = append(pc.Queues, buffer.QueueConfig{Alpha: 1})
			pc.Trim = &dataplane.Trim{Queue: 2, DSCP: trimDSCP, Queues: []int{1}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := dataplanetest.New(t, trimConfig(1<<20, func(pc *dataplane.PortConfig) {
				pc.Queues[0] = buffer.QueueConfig{Cap: 3 * trimSize}
				if c.change != nil {
					c.change(pc)
					pc.Queues[0] = buffer.QueueConfig{Cap: 3 * trimSize}
				}
			}), memport.Link{})
			var frames [][]byte
			sent := map[string]bool{}
			for i := range trimBurst {
				f := c.frame(i)
				frames = append(frames, f)
				sent[string(f)] = true
			}
			got := burst(t, r, frames)
			for _, f := range got {
				if !sent[string(f)] {
					t.Errorf("a %d-byte frame left that was not sent", len(f))
				}
			}
			st := r.Switch.Stats().Ports[1]
			if len(got) != 3 || st.Drops["static_cap"] != trimBurst-3 || st.Trimmed != 0 {
				t.Errorf("%d left, %v dropped, %d trimmed; want 3, %d static_cap, 0", len(got), st.Drops, st.Trimmed, trimBurst-3)
			}
		})
	}
}

// TestTrimSchedulers: trimming composes with every scheduler: SP, and
// WRR, DWRR and WFQ under a strict trim queue. The trimmed headers
// overtake the data still queued: every one leaves before the last whole
// frame.
func TestTrimSchedulers(t *testing.T) {
	for _, k := range []scheduler.Kind{scheduler.SP, scheduler.WRR, scheduler.DWRR, scheduler.WFQ} {
		t.Run(k.String(), func(t *testing.T) {
			r := dataplanetest.New(t, trimConfig(1<<20, func(pc *dataplane.PortConfig) {
				pc.Scheduler.Kind = k
				pc.Queues[0] = buffer.QueueConfig{Cap: 5 * trimSize}
			}), memport.Link{})
			got := burst(t, r, trimFrames(t, trimBurst, trimSize, false))
			lastTrim, lastWhole, trimmed := -1, -1, 0
			for i, f := range got {
				if len(f) == trimSize {
					lastWhole = i
				} else {
					checkTrimmedFrame(t, f, 42)
					lastTrim, trimmed = i, trimmed+1
				}
			}
			if len(got) != trimBurst || trimmed != trimBurst-5 || lastTrim > lastWhole {
				t.Errorf("%d left, %d trimmed, the last trimmed %d-th, the last whole %d-th; want %d, %d, trims first",
					len(got), trimmed, lastTrim, lastWhole, trimBurst, trimBurst-5)
			}
		})
	}
}

// TestTrimConfig: Validate rejects a Trim that makes no sense, naming
// the key.
func TestTrimConfig(t *testing.T) {
	for _, c := range []struct {
		name, want string
		change     func(pc *dataplane.PortConfig)
	}{
		{"queue out of range", "trim.queue: 2 outside [0, 1]", func(pc *dataplane.PortConfig) { pc.Trim.Queue = 2 }},
		{"dscp", "trim.dscp: 64 outside [0, 63]", func(pc *dataplane.PortConfig) { pc.Trim.DSCP = 64 }},
		{"size", "trim.bytes: 20 outside [60, 65536]", func(pc *dataplane.PortConfig) { pc.Trim.Size = 20 }},
		{"one queue", "trim.queue: 0 is the port's only queue", func(pc *dataplane.PortConfig) {
			pc.Scheduler.Queues, pc.Scheduler.NumQueues, pc.Queues = nil, 1, pc.Queues[:1]
			pc.Trim.Queue = 0
		}},
		{"trim queue eligible", "trim.queues[0]: 1 is trim.queue", func(pc *dataplane.PortConfig) { pc.Trim.Queues = []int{1} }},
		{"eligible twice", "trim.queues[1]: queue 0 listed twice", func(pc *dataplane.PortConfig) { pc.Trim.Queues = []int{0, 0} }},
		{"eligible out of range", "trim.queues[0]: 5 outside [0, 1]", func(pc *dataplane.PortConfig) { pc.Trim.Queues = []int{5} }},
		{"no room", "trim.queue: queue 1's buffer (cap 50 + reserve 0 bytes) cannot hold one 106-byte trimmed packet", func(pc *dataplane.PortConfig) {
			pc.Queues[1] = buffer.QueueConfig{Cap: 50}
		}},
		{"with a reshaper", "trim: set with a Reshaper", func(pc *dataplane.PortConfig) { pc.Reshape = &cutter{} }},
		{"on a DualQ port", "trim: set on a DualQ port", func(pc *dataplane.PortConfig) {
			pc.Scheduler = scheduler.Config{Kind: scheduler.DualQ}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := trimConfig(1<<20, c.change).Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "ports[1] (b)") {
				t.Errorf("Validate: %v; want %q at ports[1] (b)", err, c.want)
			}
		})
	}
	if err := trimConfig(1<<20, nil).Validate(); err != nil {
		t.Errorf("a valid trim: %v", err)
	}
}
