package capture

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/ecnswitch/ecnswitch/internal/buildinfo"
	"github.com/ecnswitch/ecnswitch/packet"
)

// pkt is one packet read back from a capture file.
type pkt struct {
	ts      time.Time
	data    []byte
	length  int
	comment string
	flags   uint32 // epb_flags; 0 if absent
}

// ecn decodes p's IP header with gopacket and returns its ECN codepoint.
func (p pkt) ecn(tb testing.TB) packet.ECN {
	tb.Helper()
	g := gopacket.NewPacket(p.data, layers.LayerTypeEthernet, gopacket.Default)
	ip, ok := g.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	if !ok {
		tb.Fatalf("captured frame has no IPv4 layer: %v", g)
	}
	return packet.ECN(ip.TOS & 3)
}

// readPcap reads a nanosecond pcap file with gopacket's pcapgo reader,
// checking the header it reports.
func readPcap(tb testing.TB, path string, snaplen int) []pkt {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil || binary.LittleEndian.Uint32(magic[:]) != 0xa1b23c4d {
		tb.Fatalf("%s: magic % x, want the nanosecond pcap magic a1b23c4d (%v)", path, magic, err)
	}
	f.Seek(0, io.SeekStart)
	// pcapgo v1.1.19's Reader.Resolution reports the two resolutions the
	// wrong way round, hence the magic check above; its timestamps are right.
	r, err := pcapgo.NewReader(f)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	if r.LinkType() != layers.LinkTypeEthernet || r.Snaplen() != uint32(snaplen) {
		tb.Fatalf("%s: link type %v, snaplen %d", path, r.LinkType(), r.Snaplen())
	}
	var out []pkt
	for {
		data, ci, err := r.ReadPacketData()
		if err == io.EOF {
			return out
		}
		if err != nil {
			tb.Fatalf("%s: record %d: %v", path, len(out), err)
		}
		out = append(out, pkt{ts: ci.Timestamp, data: data, length: ci.Length})
	}
}

// crossCheckPcapng reads path with gopacket's NgReader and checks that it
// finds the same packets, timestamps and lengths as our own parser, which
// also returns the comments NgReader does not expose.
func crossCheckPcapng(tb testing.TB, path string, want []pkt) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		tb.Fatalf("%s: gopacket's NgReader: %v", path, err)
	}
	// The section header records the build, the kernel and the CPU.
	if got, want := r.SectionInfo(), sectionInfo(buildinfo.Read()); got != want {
		tb.Fatalf("%s: section header %+v, want %+v", path, got, want)
	}
	for i := 0; ; i++ {
		data, ci, err := r.ReadPacketData()
		if err == io.EOF {
			if i != len(want) {
				tb.Fatalf("%s: NgReader found %d packets, our parser %d", path, i, len(want))
			}
			return
		}
		if err != nil {
			tb.Fatalf("%s: NgReader, packet %d: %v", path, i, err)
		}
		if i >= len(want) || !bytes.Equal(data, want[i].data) || !ci.Timestamp.Equal(want[i].ts) || ci.Length != want[i].length {
			tb.Fatalf("%s: packet %d differs between NgReader and our parser", path, i)
		}
	}
}

// interfaceDescription returns a pcapng file's if_description, read by
// gopacket's NgReader.
func interfaceDescription(tb testing.TB, path string) string {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	intf, err := r.Interface(0)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return intf.Description
}

// readPcapng reads a pcapng file: it checks every block's framing, the
// section's byte order, the interface's link type, snap length and
// nanosecond resolution, and returns the Enhanced Packet Blocks with their
// comments.
func readPcapng(tb testing.TB, path string, snaplen int) []pkt {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	le := binary.LittleEndian
	var out []pkt
	sawSHB, tsresol := false, -1
	for off := 0; off < len(b); {
		if len(b) < off+12 {
			tb.Fatalf("%s: truncated block at %d", path, off)
		}
		typ, n := le.Uint32(b[off:]), int(le.Uint32(b[off+4:]))
		if n%4 != 0 || n < 12 || len(b) < off+n || int(le.Uint32(b[off+n-4:])) != n {
			tb.Fatalf("%s: block at %d: length %d does not frame it", path, off, n)
		}
		body := b[off+8 : off+n-4]
		switch typ {
		case 0x0a0d0d0a:
			if le.Uint32(body) != 0x1a2b3c4d || le.Uint16(body[4:]) != 1 {
				tb.Fatalf("%s: bad section header % x", path, body[:8])
			}
			sawSHB = true
			readOpts(tb, body[16:])
		case 1:
			if le.Uint16(body) != 1 || le.Uint32(body[4:]) != uint32(snaplen) {
				tb.Fatalf("%s: interface link type %d snaplen %d", path, le.Uint16(body), le.Uint32(body[4:]))
			}
			if v, ok := readOpts(tb, body[8:])[9]; ok && len(v) == 1 {
				tsresol = int(v[0])
			}
		case 6:
			if !sawSHB || tsresol != 9 {
				tb.Fatalf("%s: packet before a section and a nanosecond interface (tsresol %d)", path, tsresol)
			}
			ts := int64(le.Uint32(body[4:]))<<32 | int64(le.Uint32(body[8:]))
			incl, orig := int(le.Uint32(body[12:])), int(le.Uint32(body[16:]))
			if incl > orig || incl > snaplen || 20+pad4(incl) > len(body) {
				tb.Fatalf("%s: bad packet block at %d: incl %d orig %d", path, off, incl, orig)
			}
			opts := readOpts(tb, body[20+pad4(incl):])
			p := pkt{ts: time.Unix(0, ts), data: body[20 : 20+incl], length: orig, comment: string(opts[1])}
			if f, ok := opts[2]; ok {
				p.flags = le.Uint32(f)
			}
			out = append(out, p)
		default:
			tb.Fatalf("%s: unexpected block type %#x", path, typ)
		}
		off += n
	}
	if !sawSHB {
		tb.Fatalf("%s: no section header", path)
	}
	crossCheckPcapng(tb, path, out)
	return out
}

// readOpts parses pcapng options up to opt_endofopt, which must be there.
func readOpts(tb testing.TB, b []byte) map[uint16][]byte {
	tb.Helper()
	le := binary.LittleEndian
	opts := map[uint16][]byte{}
	for off := 0; ; {
		if len(b) < off+4 {
			tb.Fatalf("options end without opt_endofopt: % x", b)
		}
		code, n := le.Uint16(b[off:]), int(le.Uint16(b[off+2:]))
		if code == 0 {
			if n != 0 || off+4 != len(b) {
				tb.Fatalf("opt_endofopt of length %d with %d bytes after it", n, len(b)-off-4)
			}
			return opts
		}
		if len(b) < off+4+pad4(n) {
			tb.Fatalf("option %d of length %d overruns the block", code, n)
		}
		opts[code] = b[off+4 : off+4+n]
		off += 4 + pad4(n)
	}
}

// readFile reads either format.
func readFile(tb testing.TB, f Format, path string, snaplen int) []pkt {
	tb.Helper()
	if f == PCAP {
		return readPcap(tb, path, snaplen)
	}
	return readPcapng(tb, path, snaplen)
}

// key identifies a captured packet across files: its time and bytes.
func (p pkt) key() string { return fmt.Sprintf("%d/%x", p.ts.UnixNano(), p.data) }

// pad4 rounds n up to pcapng's 32-bit alignment.
func pad4(n int) int { return (n + 3) &^ 3 }
