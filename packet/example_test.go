package packet_test

import (
	"fmt"

	"github.com/ecnswitch/ecnswitch/packet"
)

// A dataplane worker parses each received frame, counts rejects by kind,
// and marks CE where a marker says so.
func ExampleParse() {
	var drops [packet.NumParseErrors]uint64

	frames := [][]byte{
		ipv4Frame(0xb8|byte(packet.ECT0), 60), // DSCP 46 (EF), ECT(0)
		ipv4Frame(0x45, 60)[:20],              // cut inside the IPv4 header
	}
	for _, f := range frames {
		d := &packet.Desc{Buf: f, Len: len(f)}
		if err := packet.Parse(d); err != nil {
			drops[err.(packet.ParseError)]++
			continue
		}
		fmt.Println(d.SrcAddr(), "→", d.DstAddr(), "DSCP", d.DSCP, d.ECN)
		fmt.Println("marked:", packet.SetCE(d), d.ECN)
	}
	fmt.Println("truncated:", drops[packet.ErrTruncated])
	// Output:
	// 198.18.0.1 → 198.18.0.2 DSCP 46 ECT(0)
	// marked: true CE
	// truncated: 1
}

// ipv4Frame returns an Ethernet/IPv4 frame of n bytes, protocol 253, whose
// header checksum is correct.
func ipv4Frame(tos byte, n int) []byte {
	f := make([]byte, n)
	copy(f, []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00})
	ip := f[14:]
	copy(ip, []byte{0x45, tos, 0, byte(n - 14), 0, 0, 0, 0, 64, 253, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2})
	c := ipv4Checksum(ip[:20])
	ip[10], ip[11] = byte(c>>8), byte(c)
	return f
}
