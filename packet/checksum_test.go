package packet_test

import (
	"math/rand/v2"
	"testing"

	"github.com/ecnswitch/ecnswitch/packet"
)

// TestIPv4Checksum compares IPv4Checksum with the tests' oracle (itself
// checked against gopacket in TestChecksumOracle) on random headers of
// every length.
func TestIPv4Checksum(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 10_000; i++ {
		h := make([]byte, 20+4*r.IntN(11))
		fill(r, h)
		h[10], h[11] = 0, 0
		if got, want := packet.IPv4Checksum(h), ipv4Checksum(h); got != want {
			t.Fatalf("header % x: checksum %#04x, want %#04x", h, got, want)
		}
	}
}
