package intmd_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/intmd"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
)

// hpcc is the header of a packet that asks up to hops hops for HPCC's
// fields.
func hpcc(tb testing.TB, hops int) intmd.Header {
	tb.Helper()
	h, err := intmd.NewHeader(intmd.HPCCInstructions, intmd.HPCCDSInstructions, hops)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// TestHeaderBytes: the headers of an HPCC source, byte by byte, as the
// package doc lays them out (INT v2.1 §5.6.2, §5.7).
func TestHeaderBytes(t *testing.T) {
	h := hpcc(t, 5)
	b := make([]byte, intmd.HeaderLen)
	h.Put(b)
	want := []byte{
		0x10, 4, 0, 0, // shim: type 1 (INT-MD), NPT 0; length 4 words; reserved
		0x20, 0, 6, 5, // ver 2, no flags; hop ML 6 words (24 bytes); 5 hops remaining
		0x14, 0x00, // instructions: bit 3 (queue) and bit 5 (egress timestamp)
		0x45, 0x43, // domain "EC"
		0xc0, 0x00, // DS bits 0 (TX bytes) and 1 (link rate)
		0, 0, // DS flags
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("headers % x, want % x", b, want)
	}
	if h.RecordLen() != 24 || h.Room() != 120 || h.Hops() != 0 {
		t.Fatalf("record %d, room %d, hops %d; want 24, 120, 0", h.RecordLen(), h.Room(), h.Hops())
	}
	got, stack, err := intmd.Parse(b)
	if err != nil || got != h || len(stack) != 0 {
		t.Fatalf("Parse = %+v, %d-byte stack, %v; want %+v", got, len(stack), err, h)
	}
}

// frame is an Ethernet frame carrying UDP to port 4790 whose payload is
// the INT headers h, an empty stack, then payload bytes 0x01, 0x02, … (n
// of them). v6 selects IPv6, vlan a VLAN tag.
func frame(tb testing.TB, h intmd.Header, n int, v6, vlan bool) []byte {
	tb.Helper()
	pl := make([]byte, intmd.HeaderLen+n)
	h.Put(pl)
	for i := range n {
		pl[intmd.HeaderLen+i] = byte(i + 1)
	}
	o := packettest.Options{SrcPort: 1234, DstPort: 4790, DSCP: 26, ECN: packet.ECT0, Payload: pl}
	if vlan {
		o.Tags = []packettest.Tag{{VLAN: 7}}
	}
	if v6 {
		return packettest.UDP6(tb, o)
	}
	return packettest.UDP4(tb, o)
}

// slot is a descriptor holding f in a 2 KB buffer, parsed.
func slot(tb testing.TB, f []byte) *packet.Desc {
	tb.Helper()
	buf := make([]byte, 2048)
	copy(buf, f)
	d := &packet.Desc{Buf: buf, Len: len(f)}
	if err := packet.Parse(d); err != nil {
		tb.Fatal(err)
	}
	return d
}

// valid checks the frame's lengths and checksums against gopacket's:
// decoded and serialised again with lengths and checksums recomputed, it
// must come out byte for byte the same. It returns the UDP payload.
func valid(tb testing.TB, f []byte) []byte {
	tb.Helper()
	p := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
	if el := p.ErrorLayer(); el != nil {
		tb.Fatalf("gopacket: %v", el.Error())
	}
	var ls []gopacket.SerializableLayer
	var udp *layers.UDP
	for _, l := range p.Layers() {
		switch l := l.(type) {
		case *layers.Ethernet:
			ls = append(ls, l)
		case *layers.Dot1Q:
			ls = append(ls, l)
		case *layers.IPv4:
			ls = append(ls, l)
		case *layers.IPv6:
			ls = append(ls, l)
		case *layers.UDP:
			udp = l
			if ip4, ok := p.NetworkLayer().(*layers.IPv4); ok {
				_ = l.SetNetworkLayerForChecksum(ip4)
			} else {
				_ = l.SetNetworkLayerForChecksum(p.NetworkLayer().(*layers.IPv6))
			}
			ls = append(ls, l, gopacket.Payload(l.Payload))
		}
	}
	if udp == nil {
		tb.Fatal("no UDP layer")
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		tb.Fatal(err)
	}
	if again := buf.Bytes()[:len(f)]; !bytes.Equal(again, f) {
		tb.Fatalf("lengths or checksums wrong:\nframe     % x\ngopacket  % x", f, again)
	}
	return udp.Payload
}

// TestPushHPCC: two hops each push an HPCC record onto IPv4, IPv6 and
// VLAN-tagged packets (odd payloads too): the newest record on top, every
// field as given, the payload intact behind the stack, and every length
// and checksum as gopacket computes them.
func TestPushHPCC(t *testing.T) {
	for _, c := range []struct {
		name     string
		v6, vlan bool
		n        int
	}{{"ipv4", false, false, 100}, {"ipv4 odd", false, false, 101}, {"ipv6", true, false, 57}, {"vlan ipv4", false, true, 200}} {
		t.Run(c.name, func(t *testing.T) {
			f := frame(t, hpcc(t, 3), c.n, c.v6, c.vlan)
			d := slot(t, f)
			hops := []intmd.Metadata{
				{QueueID: 2, QueueBytes: 45_000, EgressTS: 1_000_000_123, TxBytes: 9_876_543_210, LinkRate: 995_000_000},
				{QueueID: 0, QueueBytes: 1 << 25, EgressTS: 1_000_050_000, TxBytes: 12, LinkRate: 100_000_000_000}, // occupancy saturates at 2²⁴ − 1
			}
			for i := range hops {
				tr, err := intmd.Open(d)
				if err != nil {
					t.Fatal(err)
				}
				if r := tr.Push(d, &hops[i], 1514); r != intmd.Added {
					t.Fatalf("hop %d: %v", i+1, r)
				}
				if err := packet.Parse(d); err != nil {
					t.Fatalf("hop %d: the frame no longer parses: %v", i+1, err)
				}
			}
			if d.Len != len(f)+2*24 {
				t.Fatalf("frame %d bytes, want %d + 2 records", d.Len, len(f))
			}
			pl := valid(t, d.Frame())
			h, stack, err := intmd.Parse(pl)
			if err != nil {
				t.Fatal(err)
			}
			if h.Length != 4+2*6 || h.RemainingHops != 1 || h.Hops() != 2 || h.Flags != 0 {
				t.Fatalf("header %+v", h)
			}
			for i, want := range []intmd.Metadata{hops[1], hops[0]} { // newest first
				hop, ok := h.Hop(stack, i)
				if !ok {
					t.Fatalf("record %d missing", i)
				}
				q := uint32(min(want.QueueBytes, 1<<24-1))
				if hop.QueueID != want.QueueID || hop.QueueBytes != q || hop.EgressTS != uint64(want.EgressTS) ||
					hop.TxBytes != want.TxBytes || hop.LinkRate() != want.LinkRate || hop.Unknown != 0 {
					t.Errorf("record %d = %+v, want %+v", i, hop, want)
				}
			}
			rest := pl[intmd.HeaderLen+len(stack):]
			for i, b := range rest {
				if b != byte(i+1) {
					t.Fatalf("payload byte %d is %d, want %d: the payload moved wrong", i, b, i+1)
				}
			}
			if len(rest) != c.n {
				t.Fatalf("payload %d bytes, want %d", len(rest), c.n)
			}
		})
	}
}

// TestRecordOffsets: an HPCC record's bytes, at the offsets the package
// doc gives.
func TestRecordOffsets(t *testing.T) {
	d := slot(t, frame(t, hpcc(t, 1), 8, false, false))
	tr, err := intmd.Open(d)
	if err != nil {
		t.Fatal(err)
	}
	m := intmd.Metadata{QueueID: 3, QueueBytes: 0x0a0b0c, EgressTS: 0x0102030405060708, TxBytes: 0x1112131415161718, LinkRate: 0x21222324 * 1000}
	tr.Push(d, &m, 1514)
	rec := d.Frame()[14+20+8+intmd.HeaderLen:][:24]
	want := []byte{
		3, 0x0a, 0x0b, 0x0c, // queue ID, occupancy
		1, 2, 3, 4, 5, 6, 7, 8, // egress timestamp
		0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, // TX bytes
		0x21, 0x22, 0x23, 0x24, // link rate, kbit/s
	}
	if !bytes.Equal(rec, want) {
		t.Fatalf("record % x, want % x", rec, want)
	}
}

// TestEveryField: a record with every standard instruction (reserved bits
// too) and every DS instruction decodes to what was pushed; a record of
// another domain's DS instructions ends in 0xff.
func TestEveryField(t *testing.T) {
	all := uint16(0xffff)
	h, err := intmd.NewHeader(all, intmd.DSTxBytes|intmd.DSLinkRate|intmd.DSPortBytes, 2)
	if err != nil {
		t.Fatal(err)
	}
	if h.RecordLen() != 4+4+4+4+8+8+8+4+4+6*4+4+8+4+4 {
		t.Fatalf("record %d bytes", h.RecordLen())
	}
	d := slot(t, frame(t, h, 10, false, false))
	tr, err := intmd.Open(d)
	if err != nil {
		t.Fatal(err)
	}
	m := intmd.Metadata{NodeID: 7, InPort: 3, OutPort: 70000, QueueID: 1, QueueBytes: 1500, IngressTS: 100, EgressTS: 350,
		BufferID: 2, BufferBytes: 300_000, TxBytes: 5, LinkRate: 25_000_000_000, PortBytes: 3000}
	if r := tr.Push(d, &m, 2048); r != intmd.Added {
		t.Fatal(r)
	}
	pl := valid(t, d.Frame())
	h, stack, err := intmd.Parse(pl)
	if err != nil {
		t.Fatal(err)
	}
	hop, _ := h.Hop(stack, 0)
	want := intmd.Hop{Instructions: all, DSInstr: h.DSInstr, NodeID: 7, InPort: 3, OutPort: 70000, HopLatency: 250,
		QueueID: 1, QueueBytes: 1500, IngressTS: 100, EgressTS: 350, TxUtil: 0xffffffff, BufferID: 2, BufferBytes: 300_000,
		TxBytes: 5, LinkRateKbps: 25_000_000, PortBytes: 3000, Reserved: 6*4 + 4}
	if hop != want {
		t.Fatalf("decoded\n%+v\nwant\n%+v", hop, want)
	}

	// Another domain: its DS fields (Hop ML beyond the standard ones) are 0xff.
	pl = make([]byte, intmd.HeaderLen+16)
	other := intmd.Header{Length: 4, HopML: 3 + 2, RemainingHops: 1, Instructions: intmd.InstrEgressTS | intmd.InstrQueue, Domain: 0x1234, DSInstr: 0x8000}
	other.Put(pl)
	d = slot(t, packettest.UDP4(t, packettest.Options{DstPort: 4790, Payload: pl}))
	if tr, err = intmd.Open(d); err != nil {
		t.Fatal(err)
	}
	tr.Push(d, &m, 1514)
	pl = valid(t, d.Frame())
	h, stack, _ = intmd.Parse(pl)
	hop, _ = h.Hop(stack, 0)
	if hop.EgressTS != 350 || hop.Unknown != 8 || !bytes.Equal(stack[12:20], bytes.Repeat([]byte{0xff}, 8)) {
		t.Fatalf("another domain's record % x decodes as %+v", stack, hop)
	}
}

// TestLimits: a hop with no room (the caller's limit, or the shim's
// Length) sets M and a hop with no remaining hop count sets E, and neither
// adds a record; the checksums stay valid either way. A UDP packet without
// a checksum keeps none.
func TestLimits(t *testing.T) {
	m := intmd.Metadata{QueueBytes: 10, EgressTS: 1, TxBytes: 1, LinkRate: 1e9}
	t.Run("mtu", func(t *testing.T) {
		f := frame(t, hpcc(t, 2), 1514-14-20-8-intmd.HeaderLen-20, false, false) // room for 20 bytes, not 24
		d := slot(t, f)
		tr, _ := intmd.Open(d)
		if r := tr.Push(d, &m, 1514); r != intmd.NoRoom || d.Len != len(f) {
			t.Fatalf("Push = %v, %d bytes; want no_room, %d", r, d.Len, len(f))
		}
		h, _, _ := intmd.Parse(valid(t, d.Frame()))
		if h.Flags != intmd.FlagM || h.Hops() != 0 || h.RemainingHops != 2 {
			t.Fatalf("header %+v: want M set, no record, 2 hops left", h)
		}
		if r := tr.Push(d, &m, 1514+4); r != intmd.Added { // exactly room for one
			t.Fatalf("with 24 bytes more room: %v", r)
		}
		valid(t, d.Frame())
	})
	t.Run("hop limit", func(t *testing.T) {
		d := slot(t, frame(t, hpcc(t, 1), 10, true, false))
		for i, want := range []intmd.Result{intmd.Added, intmd.HopLimit, intmd.HopLimit} {
			tr, err := intmd.Open(d)
			if err != nil {
				t.Fatal(err)
			}
			if r := tr.Push(d, &m, 1514); r != want {
				t.Fatalf("hop %d: %v, want %v", i+1, r, want)
			}
		}
		h, _, _ := intmd.Parse(valid(t, d.Frame()))
		if h.Flags != intmd.FlagE || h.Hops() != 1 {
			t.Fatalf("header %+v: want E set and one record", h)
		}
	})
	t.Run("shim length", func(t *testing.T) {
		h := intmd.Header{Length: intmd.MaxLength - 5, HopML: 6, RemainingHops: 9, Instructions: intmd.HPCCInstructions, Domain: intmd.DomainID, DSInstr: intmd.HPCCDSInstructions}
		stack := (intmd.MaxLength - 5 - 4) * 4
		if stack%24 != 0 {
			h.Length -= uint8(stack % 24 / 4)
		}
		pl := make([]byte, 4*int(h.Length))
		h.Put(pl)
		d := slot(t, packettest.UDP4(t, packettest.Options{DstPort: 4790, Payload: pl}))
		tr, err := intmd.Open(d)
		if err != nil {
			t.Fatal(err)
		}
		if r := tr.Push(d, &m, 2048); r != intmd.NoRoom {
			t.Fatalf("Push = %v with Length %d + 6 > 255", r, h.Length)
		}
	})
	t.Run("no udp checksum", func(t *testing.T) {
		f := frame(t, hpcc(t, 1), 20, false, false)
		binary.BigEndian.PutUint16(f[14+20+6:], 0)
		d := slot(t, f)
		tr, _ := intmd.Open(d)
		tr.Push(d, &m, 1514)
		if c := binary.BigEndian.Uint16(d.Frame()[14+20+6:]); c != 0 {
			t.Fatalf("UDP checksum %#04x, want 0 (none)", c)
		}
	})
}

// TestOpenRejects: what Open refuses, by its error.
func TestOpenRejects(t *testing.T) {
	good := func() []byte {
		b := make([]byte, intmd.HeaderLen+8)
		h := hpcc(t, 1)
		h.Put(b)
		return b
	}
	for _, c := range []struct {
		name string
		mod  func(b []byte) []byte
		want error
	}{
		{"short", func(b []byte) []byte { return b[:intmd.HeaderLen-1] }, intmd.ErrShort},
		{"type INT-MX", func(b []byte) []byte { b[0] = 3 << 4; return b }, intmd.ErrType},
		{"version 1", func(b []byte) []byte { b[4] = 1 << 4; return b }, intmd.ErrVersion},
		{"length past the packet", func(b []byte) []byte { b[1] = 10; return b }, intmd.ErrLength},
		{"length below the headers", func(b []byte) []byte { b[1] = 3; return b }, intmd.ErrLength},
		{"part of a record", func(b []byte) []byte { b[1] = 5; return b }, intmd.ErrLength},
		{"hop ML 0", func(b []byte) []byte { b[6] = 0; return b }, intmd.ErrHopML},
		{"hop ML beside the instructions", func(b []byte) []byte { b[6] = 7; return b }, intmd.ErrHopML},
		{"unknown DS bit of our domain", func(b []byte) []byte { b[12] |= 0x01; return b }, intmd.ErrHopML},
	} {
		d := slot(t, packettest.UDP4(t, packettest.Options{DstPort: 4790, Payload: c.mod(good())}))
		if _, err := intmd.Open(d); !errors.Is(err, c.want) {
			t.Errorf("%s: Open = %v, want %v", c.name, err, c.want)
		}
	}
	tcp := packettest.Desc(t, packettest.TCP4(t, packettest.Options{Size: 200}))
	if _, err := intmd.Open(tcp); err == nil {
		t.Error("Open accepted TCP")
	}
	// The UDP length must agree with the IP length.
	f := packettest.UDP4(t, packettest.Options{DstPort: 4790, Payload: good()})
	binary.BigEndian.PutUint16(f[14+20+4:], uint16(8+intmd.HeaderLen))
	if _, err := intmd.Open(slot(t, f)); !errors.Is(err, intmd.ErrLength) {
		t.Errorf("UDP length below the IP length: Open = %v, want ErrLength", err)
	}
}

// TestNewHeaderRejects: NewHeader's ranges.
func TestNewHeaderRejects(t *testing.T) {
	for _, c := range []struct {
		instr, ds uint16
		hops      int
	}{{0, 0, 1}, {intmd.InstrQueue, 0, 0}, {intmd.InstrQueue, 0, 256}, {intmd.InstrQueue, 0x0001, 1}} {
		if _, err := intmd.NewHeader(c.instr, c.ds, c.hops); err == nil {
			t.Errorf("NewHeader(%#04x, %#04x, %d) accepted", c.instr, c.ds, c.hops)
		}
	}
}

func TestPushAllocatesNothing(t *testing.T) {
	f := frame(t, hpcc(t, 255), 100, false, false)
	d := slot(t, f)
	m := intmd.Metadata{QueueBytes: 10, EgressTS: 1}
	allocs := testing.AllocsPerRun(100, func() {
		copy(d.Buf, f)
		d.Len = len(f)
		tr, err := intmd.Open(d)
		if err != nil {
			t.Fatal(err)
		}
		tr.Push(d, &m, 1514)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per Open and Push, want 0", allocs)
	}
}

// BenchmarkPush is a transit hop's work on one packet: open its INT
// headers and push an HPCC record (the headers put back each time).
func BenchmarkPush(b *testing.B) {
	for _, size := range []int{64, 1476} {
		b.Run(strconv.Itoa(size)+"B", func(b *testing.B) {
			f := frame(b, hpcc(b, 1), size-14-20-8-intmd.HeaderLen, false, false)
			d := slot(b, f)
			m := intmd.Metadata{QueueBytes: 10, EgressTS: 1, TxBytes: 5, LinkRate: 1e9}
			b.ReportAllocs()
			for b.Loop() {
				d.Len = len(f)
				copy(d.Buf, f[:64]) // the headers as they were: the rest is moved, not read
				tr, err := intmd.Open(d)
				if err != nil {
					b.Fatal(err)
				}
				if tr.Push(d, &m, 1514) != intmd.Added {
					b.Fatal("no record")
				}
			}
		})
	}
}
