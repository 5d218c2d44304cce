//go:build linux

package xdpsink

import (
	"encoding/binary"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/internal/testenv"
)

const testMagic = 0xEC5B

// frame is a test frame: Ethernet with tags, IPv4 (ihl words) or IPv6,
// UDP, and the generator's header of run, flow and seq, then pad bytes.
type frame struct {
	tags    []uint16 // TPIDs of VLAN tags, outermost first
	ipv6    bool
	ihl     int   // IPv4 header words; default 5
	version uint8 // IP version written; default 4 or 6
	proto   uint8 // IP protocol; default UDP
	frag    uint16
	tos     uint8
	magic   uint16
	run     uint16
	flow    uint16
	seq     uint32
	tx      int64
	pad     int
}

func (f frame) bytes() []byte {
	b := make([]byte, 12, 128)
	b[0], b[6] = 0x02, 0x02
	for _, t := range f.tags {
		b = binary.BigEndian.AppendUint16(b, t)
		b = binary.BigEndian.AppendUint16(b, 7)
	}
	proto := f.proto
	if proto == 0 {
		proto = protoUDP
	}
	magic := f.magic
	if magic == 0 {
		magic = testMagic
	}
	payload := binary.BigEndian.AppendUint16(nil, magic)
	payload = binary.BigEndian.AppendUint16(payload, f.run)
	payload = binary.BigEndian.AppendUint16(payload, f.flow)
	payload = binary.BigEndian.AppendUint32(payload, f.seq)
	payload = binary.BigEndian.AppendUint64(payload, uint64(f.tx))
	payload = append(payload, make([]byte, f.pad)...)
	udp := binary.BigEndian.AppendUint16(nil, 40000+f.flow)
	udp = binary.BigEndian.AppendUint16(udp, 9)
	udp = binary.BigEndian.AppendUint16(udp, uint16(udpLen+len(payload)))
	udp = append(udp, 0, 0)
	udp = append(udp, payload...)
	if f.ipv6 {
		v := f.version
		if v == 0 {
			v = 6
		}
		b = binary.BigEndian.AppendUint16(b, etherIPv6)
		ip := make([]byte, ipv6Len)
		ip[0] = v<<4 | f.tos>>4
		ip[1] = f.tos << 4
		binary.BigEndian.PutUint16(ip[4:], uint16(len(udp)))
		ip[6], ip[7] = proto, 64
		ip[8], ip[24] = 0xfd, 0xfd
		return append(append(b, ip...), udp...)
	}
	v, ihl := f.version, f.ihl
	if v == 0 {
		v = 4
	}
	if ihl == 0 {
		ihl = 5
	}
	b = binary.BigEndian.AppendUint16(b, etherIPv4)
	ip := make([]byte, max(ihl, 5)*4)
	ip[0] = v<<4 | uint8(ihl)
	ip[1] = f.tos
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)+len(udp)))
	binary.BigEndian.PutUint16(ip[6:], f.frag)
	ip[8], ip[9] = 64, proto
	copy(ip[12:], []byte{198, 18, 0, 1, 198, 18, 0, 2})
	return append(append(b, ip...), udp...)
}

func load(t testing.TB, cfg Config) *Program {
	t.Helper()
	testenv.MustBeRoot(t, "BPF programs")
	if cfg.Magic == 0 {
		cfg.Magic = testMagic
	}
	p, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

func inject(t *testing.T, p *Program, b []byte, want Action) {
	t.Helper()
	a, err := p.Inject(b)
	if err != nil {
		t.Fatal(err)
	}
	if a != want {
		t.Errorf("action %d, want %d, for % x", a, want, b)
	}
}

// TestVerifierAccepts loads the program at the corners of its
// configuration: the verifier must accept every one on this kernel.
func TestVerifierAccepts(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Flows: 1, Window: MinWindow, Sample: 0.5},
		{Flows: MaxFlows, Window: MinWindow, Sample: 1},
		{Flows: 4, Window: MaxWindow, Sample: 0.001, RingSize: 4096},
	} {
		load(t, cfg)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Flows: MaxFlows + 1}, "flows: 65537"},
		{Config{Flows: -1}, "flows: -1"},
		{Config{Window: 100}, "window: 100"},
		{Config{Window: 32}, "window: 32"},
		{Config{Window: MaxWindow * 2}, "window: 131072"},
		{Config{Sample: 1.5}, "sample: 1.5"},
		{Config{Sample: -0.1}, "sample: -0.1"},
		{Config{RingSize: 5000}, "ring_size: 5000"},
		{Config{Flows: MaxFlows, Window: MaxWindow}, "flows × window"},
	} {
		err := c.cfg.setDefaults(2)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %q", c.cfg, err, c.want)
		}
	}
}

// TestFrameKinds runs every kind of frame through the program: the
// generator's (in every encapsulation the sink accepts) are counted and
// dropped; others are passed and counted as foreign, those with headers
// cut short or invalid also as malformed; other runs' as stale and flows
// beyond the table as unknown, both dropped.
func TestFrameKinds(t *testing.T) {
	p := load(t, Config{Flows: 8, Window: 64})
	p.SetRun(3)
	arp := append(make([]byte, 12), 0x08, 0x06)
	arp = append(arp, make([]byte, 28)...)
	good := frame{run: 3}.bytes()
	for _, c := range []struct {
		name                                        string
		b                                           []byte
		act                                         Action
		counted, foreign, malformed, stale, unknown uint64
	}{
		{"IPv4", frame{run: 3, flow: 1}.bytes(), Drop, 1, 0, 0, 0, 0},
		{"IPv4 with options", frame{run: 3, flow: 1, ihl: 15, seq: 1}.bytes(), Drop, 1, 0, 0, 0, 0},
		{"802.1Q", frame{run: 3, flow: 1, seq: 2, tags: []uint16{etherVLAN}}.bytes(), Drop, 1, 0, 0, 0, 0},
		{"QinQ", frame{run: 3, flow: 1, seq: 3, tags: []uint16{etherQinQ, etherVLAN}}.bytes(), Drop, 1, 0, 0, 0, 0},
		{"IPv6", frame{run: 3, flow: 1, seq: 4, ipv6: true}.bytes(), Drop, 1, 0, 0, 0, 0},
		{"padded", frame{run: 3, flow: 1, seq: 5, pad: 1000}.bytes(), Drop, 1, 0, 0, 0, 0},
		{"ARP", arp, Pass, 0, 1, 0, 0, 0},
		{"TCP", frame{run: 3, proto: 6}.bytes(), Pass, 0, 1, 0, 0, 0},
		{"IPv6 TCP", frame{run: 3, proto: 6, ipv6: true}.bytes(), Pass, 0, 1, 0, 0, 0},
		{"other magic", frame{run: 3, magic: 0x1234}.bytes(), Pass, 0, 1, 0, 0, 0},
		{"fragment", frame{run: 3, frag: 0x2000}.bytes(), Pass, 0, 1, 0, 0, 0},
		{"later fragment", frame{run: 3, frag: 0x0010}.bytes(), Pass, 0, 1, 0, 0, 0},
		{"UDP without payload", good[:ethLen+ipv4Len+udpLen], Pass, 0, 1, 0, 0, 0},
		{"UDP with one byte", good[:ethLen+ipv4Len+udpLen+1], Pass, 0, 1, 0, 0, 0},
		{"three tags", frame{run: 3, tags: []uint16{etherQinQ, etherVLAN, etherVLAN}}.bytes(), Pass, 0, 1, 0, 0, 0},
		{"short header", good[:ethLen+ipv4Len+udpLen+headerLen-1], Pass, 0, 1, 1, 0, 0},
		{"short UDP header", good[:ethLen+ipv4Len+udpLen-1], Pass, 0, 1, 1, 0, 0},
		{"short IPv4 header", good[:ethLen+ipv4Len-1], Pass, 0, 1, 1, 0, 0},
		{"IHL 4", frame{run: 3, ihl: 4}.bytes(), Pass, 0, 1, 1, 0, 0},
		{"IHL past the end", frame{run: 3, ihl: 15}.bytes()[:ethLen+40], Pass, 0, 1, 1, 0, 0},
		{"IP version 5", frame{run: 3, version: 5}.bytes(), Pass, 0, 1, 1, 0, 0},
		{"IPv6 version 4", frame{run: 3, ipv6: true, version: 4}.bytes(), Pass, 0, 1, 1, 0, 0},
		{"short IPv6 header", frame{run: 3, ipv6: true}.bytes()[:ethLen+ipv6Len-1], Pass, 0, 1, 1, 0, 0},
		{"short VLAN tag", frame{run: 3, tags: []uint16{etherVLAN}}.bytes()[:ethLen+2], Pass, 0, 1, 1, 0, 0},
		{"Ethernet header only, VLAN", frame{run: 3, tags: []uint16{etherVLAN}}.bytes()[:ethLen], Pass, 0, 1, 1, 0, 0},
		{"other run", frame{run: 4}.bytes(), Drop, 0, 0, 0, 1, 0},
		{"flow beyond the table", frame{run: 3, flow: 8}.bytes(), Drop, 0, 0, 0, 0, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			g0, f0 := global(t, p), received(t, p)
			inject(t, p, c.b, c.act)
			g, f := global(t, p), received(t, p)
			got := [6]uint64{f - f0, g.Foreign - g0.Foreign, g.Malformed - g0.Malformed, g.Stale - g0.Stale,
				g.Unknown - g0.Unknown, g.Packets - g0.Packets}
			want := [6]uint64{c.counted, c.foreign, c.malformed, c.stale, c.unknown, 1}
			if got != want {
				t.Errorf("counted, foreign, malformed, stale, unknown, packets = %v, want %v", got, want)
			}
			if d := g.Bytes - g0.Bytes; d != uint64(len(c.b)+4) {
				t.Errorf("bytes +%d, want %d (the frame and its FCS)", d, len(c.b)+4)
			}
		})
	}
	fl, err := p.Flows()
	if err != nil {
		t.Fatal(err)
	}
	if len(fl) != 1 || fl[0].ID != 1 || fl[0].Received != 6 || fl[0].Top != 5 || fl[0].Lost() != 0 || fl[0].Reordered != 0 {
		t.Errorf("flows %+v, want flow 1 alone, with sequence numbers 0 to 5 in order", fl)
	}
}

func global(t *testing.T, p *Program) Global {
	t.Helper()
	g, err := p.Global()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func received(t *testing.T, p *Program) uint64 {
	t.Helper()
	fl, err := p.Flows()
	if err != nil {
		t.Fatal(err)
	}
	n := uint64(0)
	for _, f := range fl {
		n += f.Received
	}
	return n
}

// TestSamples: with Sample 1 every counted frame's flow, sequence number
// and TX time reach user space with the time the program saw it; with 0
// none; with 1/2 about half, chosen at random (not every other frame).
func TestSamples(t *testing.T) {
	p := load(t, Config{Sample: 1})
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	start := ts.Nano()
	for i := range 100 {
		inject(t, p, frame{flow: uint16(i % 3), seq: uint32(i / 3), tx: int64(1000 + i)}.bytes(), Drop)
	}
	inject(t, p, frame{run: 9}.bytes(), Drop) // stale: not sampled
	var got []Sample
	n, err := p.ReadSamples(time.Time{}, func(s Sample) { got = append(got, s) })
	if err != nil || n != 100 || len(got) != 100 {
		t.Fatalf("read %d samples (%v), want 100", n, err)
	}
	for i, s := range got {
		if s.Flow != uint16(i%3) || s.Seq != uint32(i/3) || s.TxTime != int64(1000+i) || s.RxTime < start {
			t.Errorf("sample %d: %+v, want flow %d, seq %d, tx %d, rx after %d", i, s, i%3, i/3, 1000+i, start)
		}
	}
	if g := global(t, p); g.Sampled != 100 || g.SamplesLost != 0 {
		t.Errorf("sampled %d, lost %d: want 100, 0", g.Sampled, g.SamplesLost)
	}

	none := load(t, Config{})
	half := load(t, Config{Sample: 0.5})
	for i := range 4000 {
		b := frame{seq: uint32(i)}.bytes()
		inject(t, none, b, Drop)
		inject(t, half, b, Drop)
	}
	if n, _ := none.ReadSamples(time.Time{}, nil); n != 0 || global(t, none).Sampled != 0 {
		t.Errorf("sample 0: %d samples, want none", n)
	}
	var odd int
	n, err = half.ReadSamples(time.Time{}, func(s Sample) { odd += int(s.Seq & 1) })
	if err != nil {
		t.Fatal(err)
	}
	// Binomial(4000, 1/2): σ ≈ 32; 6σ bounds. Half of the samples odd.
	if n < 2000-190 || n > 2000+190 || odd < n/2-150 || odd > n/2+150 {
		t.Errorf("sample 1/2: %d of 4000 sampled, %d odd; want about 2000, half of them odd", n, odd)
	}
}

// TestSamplesLostWhenRingFull: a full ring loses samples, never frames.
func TestSamplesLostWhenRingFull(t *testing.T) {
	p := load(t, Config{Sample: 1, RingSize: 4096})
	for i := range 1000 {
		inject(t, p, frame{seq: uint32(i)}.bytes(), Drop)
	}
	g := global(t, p)
	fl, err := p.Flows()
	if err != nil {
		t.Fatal(err)
	}
	// 4096 bytes hold 127 records of 8 + 24 bytes (the kernel keeps
	// the producer less than the ring's size ahead of the consumer).
	if g.Sampled != 127 || g.SamplesLost != 1000-127 || len(fl) != 1 || fl[0].Received != 1000 || fl[0].Lost() != 0 {
		t.Errorf("sampled %d, lost %d, flows %+v: want 127 samples, 873 lost, all 1000 frames counted", g.Sampled, g.SamplesLost, fl)
	}
}

// TestTwoCPUs: a flow whose frames arrive on two CPUs keeps exact
// received, lost, CE and byte counts once merged, and says it arrived on
// two; reordering across the CPUs is not seen (each CPU's frames are in
// order).
func TestTwoCPUs(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU")
	}
	p := load(t, Config{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the pinned thread ends with the goroutine
		on := func(cpu int, seqs ...uint32) {
			var set unix.CPUSet
			set.Set(cpu)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				t.Error(err)
				return
			}
			for _, s := range seqs {
				if a, err := p.Inject(frame{seq: s, tos: 3}.bytes()); a != Drop || err != nil {
					t.Errorf("seq %d: action %d, %v", s, a, err)
				}
			}
		}
		// 0..9 with 4 and 7 lost; odd on CPU 1 first, then even on CPU 0:
		// on one CPU, 0, 2, 6 and 8 after 9 would be reordered.
		on(1, 1, 3, 5, 9)
		on(0, 0, 2, 6, 8)
	}()
	<-done
	fl, err := p.Flows()
	if err != nil {
		t.Fatal(err)
	}
	if len(fl) != 1 {
		t.Fatalf("flows %+v, want one", fl)
	}
	f := fl[0]
	if f.CPUs != 2 || f.Received != 8 || f.Lost() != 2 || f.Top != 9 || f.CE != 8 || f.Reordered != 0 || f.Duplicated != 0 {
		t.Errorf("flow %+v: want on 2 CPUs, 8 received, 2 lost, top 9, 8 CE, none reordered", f)
	}
	g := global(t, p)
	if g.First == 0 || g.Last < g.First {
		t.Errorf("first %d, last %d: want the receive times of the first and last frame", g.First, g.Last)
	}
}

// TestReset forgets counts and sequence numbers: after it, a sequence
// number seen before is new again, not a duplicate.
func TestReset(t *testing.T) {
	p := load(t, Config{Sample: 1})
	for i := range 5 {
		inject(t, p, frame{seq: uint32(i)}.bytes(), Drop)
	}
	if err := p.Reset(); err != nil {
		t.Fatal(err)
	}
	if fl, _ := p.Flows(); len(fl) != 0 {
		t.Errorf("flows after reset %+v, want none", fl)
	}
	if n, _ := p.ReadSamples(time.Time{}, nil); n != 0 {
		t.Errorf("%d samples left after reset", n)
	}
	inject(t, p, frame{seq: 3}.bytes(), Drop)
	fl, _ := p.Flows()
	if g := global(t, p); len(fl) != 1 || fl[0].Duplicated != 0 || fl[0].Unique != 1 || g.Packets != 1 {
		t.Errorf("after reset: flows %+v, packets %d; want sequence number 3 new, one frame", fl, g.Packets)
	}
}

// FuzzProgram runs any frame through the program: it never fails, and
// accounts for every frame exactly once: passed and counted as foreign
// (and malformed at most then), or dropped and counted as received,
// stale or unknown; its bytes are the frame's and its FCS.
func FuzzProgram(f *testing.F) {
	for _, fr := range []frame{
		{run: 3}, {run: 3, flow: 2, seq: 7}, {run: 4}, {run: 3, flow: 9}, {run: 3, ihl: 7}, {run: 3, ipv6: true},
		{run: 3, tags: []uint16{etherQinQ, etherVLAN}}, {run: 3, proto: 6}, {run: 3, frag: 0x2000}, {run: 3, magic: 1},
	} {
		b := fr.bytes()
		f.Add(b)
		f.Add(b[:len(b)-1])
		f.Add(b[:ethLen+ipv4Len+udpLen+3])
	}
	p := load(f, Config{Flows: 4, Window: 64, Sample: 0.5, RingSize: 4096})
	p.SetRun(3)
	counts := func(t *testing.T) (Global, uint64) {
		g, err := p.Global()
		if err != nil {
			t.Fatal(err)
		}
		fl, err := p.Flows()
		if err != nil {
			t.Fatal(err)
		}
		var n uint64
		for _, x := range fl {
			n += x.Received
		}
		return g, n
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < ethLen || len(b) > 3000 {
			t.Skip("BPF_PROG_RUN takes 14 bytes to a page less head- and tailroom")
		}
		g0, n0 := counts(t)
		a, err := p.Inject(b)
		if err != nil {
			t.Fatal(err)
		}
		g, n := counts(t)
		foreign, malformed := g.Foreign-g0.Foreign, g.Malformed-g0.Malformed
		kept := n - n0 + g.Stale - g0.Stale + g.Unknown - g0.Unknown
		switch {
		case g.Packets-g0.Packets != 1 || g.Bytes-g0.Bytes != uint64(len(b)+4):
			t.Errorf("packets +%d, bytes +%d: want 1, %d", g.Packets-g0.Packets, g.Bytes-g0.Bytes, len(b)+4)
		case a == Pass && (foreign != 1 || malformed > 1 || kept != 0):
			t.Errorf("passed: foreign +%d, malformed +%d, counted +%d: want 1, at most 1, 0", foreign, malformed, kept)
		case a == Drop && (foreign != 0 || malformed != 0 || kept != 1):
			t.Errorf("dropped: foreign +%d, malformed +%d, counted +%d: want 0, 0, 1", foreign, malformed, kept)
		case a != Pass && a != Drop:
			t.Errorf("action %d", a)
		}
		if _, err := p.ReadSamples(time.Time{}, nil); err != nil {
			t.Fatal(err)
		}
	})
}
