package ect1

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/ecnswitch/ecnswitch/internal/testenv"
)

// TestPortsRejected: a rewriter chooses 1 to MaxPorts ports, and nothing
// is loaded before they are checked.
func TestPortsRejected(t *testing.T) {
	for _, n := range []int{0, MaxPorts + 1} {
		if _, err := Attach("", "lo", make([]uint16, n)); err == nil || !strings.Contains(err.Error(), "ports") {
			t.Errorf("%d ports: %v; want an error naming the ports", n, err)
		}
	}
}

// ECN codepoints (RFC 3168).
const (
	notECT = 0
	ect1   = 1
	ect0   = 2
	ce     = 3
)

// tcxNext is the program's verdict on every packet, TCX_NEXT (−1), as
// BPF_PROG_TEST_RUN returns it.
const tcxNext = ^uint32(0)

// TestRewrite runs the program on frames (BPF_PROG_TEST_RUN) and checks
// what it sends on: ECT(0) TCP packets of a chosen port become ECT(1),
// over IPv4 (with the header checksum equal to a full recomputation and
// only the ECN bits and the checksum changed, header options or not) and
// IPv6 (the traffic class's ECN bits only); every other packet leaves
// byte for byte as it came, and is counted as left when it belongs to a
// chosen flow.
func TestRewrite(t *testing.T) {
	testenv.MustBeRoot(t, "loads a BPF program")
	const port = 5001
	const dscp = 10 << 2 // AF11
	cases := []struct {
		name  string
		frame []byte
		want  []byte // nil: unchanged
		left  bool
	}{
		{"v4 to the port", v4(dscp|ect0, 6, 0, 40000, port), v4(dscp|ect1, 6, 0, 40000, port), false},
		{"v4 from the port", v4(ect0, 6, 0, port, 40000), v4(ect1, 6, 0, port, 40000), false},
		{"v4 with options", v4(dscp|ect0, 6, 3, 40000, port), v4(dscp|ect1, 6, 3, 40000, port), false},
		{"v4 other ports", v4(dscp|ect0, 6, 0, 40000, port+1), nil, false},
		{"v4 CE", v4(dscp|ce, 6, 0, 40000, port), nil, true},
		{"v4 Not-ECT", v4(notECT, 6, 0, 40000, port), nil, true},
		{"v4 ECT(1)", v4(ect1, 6, 0, 40000, port), nil, true},
		{"v4 UDP", v4(ect0, 17, 0, 40000, port), nil, false},
		{"v6 to the port", v6(dscp|ect0, 6, 40000, port), v6(dscp|ect1, 6, 40000, port), false},
		{"v6 CE", v6(ce, 6, 40000, port), nil, true},
		{"v6 extension header", v6(ect0, 0, 40000, port), nil, false},
		{"ARP", arp(), nil, false},
	}
	r, err := load([]uint16{port})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var rewritten, left uint64
	for _, c := range cases {
		want := c.want
		if want == nil {
			want = c.frame
		} else {
			rewritten++
		}
		if c.left {
			left++
		}
		got := run(t, r.objs.Ect1Egress, c.frame)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: sent on\n% x\nwant\n% x", c.name, got, want)
		}
	}
	n, err := r.Counts()
	if err != nil {
		t.Fatal(err)
	}
	if n != (Counts{Rewritten: rewritten, Left: left}) {
		t.Errorf("counts %+v, want %d rewritten and %d left", n, rewritten, left)
	}

	// AnyPort chooses every TCP packet, and still no UDP one.
	all, err := load([]uint16{AnyPort})
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	if got, want := run(t, all.objs.Ect1Egress, v4(ect0, 6, 0, 80, 443)), v4(ect1, 6, 0, 80, 443); !bytes.Equal(got, want) {
		t.Errorf("any port: sent on % x, want % x", got, want)
	}
	if f := v4(ect0, 17, 0, 80, 443); !bytes.Equal(run(t, all.objs.Ect1Egress, f), f) {
		t.Error("any port: a UDP packet changed")
	}
}

// run runs prog on frame and returns the frame it sends on.
func run(t *testing.T, prog *ebpf.Program, frame []byte) []byte {
	t.Helper()
	out := make([]byte, len(frame)+256)
	ret, err := prog.Run(&ebpf.RunOptions{Data: frame, DataOut: out})
	if err != nil {
		t.Fatal(err)
	}
	if ret != tcxNext {
		t.Fatalf("verdict %d, want TCX_NEXT", int32(ret))
	}
	return out[:len(frame)]
}

// eth is an Ethernet header of EtherType typ.
func eth(typ uint16) []byte {
	b := []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0, 0}
	binary.BigEndian.PutUint16(b[12:], typ)
	return b
}

// l4 is the first 20 bytes of a TCP header (or a UDP header and payload)
// from sport to dport, and 16 bytes of payload.
func l4(sport, dport uint16) []byte {
	b := make([]byte, 36)
	binary.BigEndian.PutUint16(b, sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	b[12] = 5 << 4
	copy(b[20:], "ecnswitch ect(1)")
	return b
}

// v4 is an IPv4 frame with tos, protocol proto and opts words of options,
// its header checksum computed in full.
func v4(tos, proto uint8, opts int, sport, dport uint16) []byte {
	ihl := 5 + opts
	ip := make([]byte, 4*ihl)
	ip[0], ip[1], ip[8], ip[9] = 4<<4|uint8(ihl), tos, 64, proto
	seg := l4(sport, dport)
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)+len(seg)))
	copy(ip[12:], []byte{198, 18, 0, 1, 198, 18, 0, 2})
	for i := 20; i < len(ip); i++ {
		ip[i] = 1 // NOP options
	}
	binary.BigEndian.PutUint16(ip[10:], ^onesSum(ip))
	return append(append(eth(0x0800), ip...), seg...)
}

// v6 is an IPv6 frame with traffic class tc, next header next and a
// flow label.
func v6(tc, next uint8, sport, dport uint16) []byte {
	ip := make([]byte, 40)
	binary.BigEndian.PutUint32(ip, 6<<28|uint32(tc)<<20|0xbeef5)
	seg := l4(sport, dport)
	binary.BigEndian.PutUint16(ip[4:], uint16(len(seg)))
	ip[6], ip[7] = next, 64
	ip[8], ip[9], ip[23] = 0x20, 0x01, 1
	ip[24], ip[25], ip[39] = 0x20, 0x01, 2
	return append(append(eth(0x86dd), ip...), seg...)
}

// arp is an ARP request.
func arp() []byte {
	b := append(eth(0x0806), make([]byte, 28)...)
	copy(b[14:], []byte{0, 1, 8, 0, 6, 4, 0, 1})
	return b
}

// onesSum is the one's complement sum of b's 16-bit words (RFC 1071).
func onesSum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

func ExampleAttach() {
	// Every TCP packet host h1 sends to or from port 5201 leaves as ECT(1).
	r, err := Attach("ecnsw-abc123-h1", "eth0", []uint16{5201})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
}
