package testbed_test

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/testbed"
	"github.com/ecnswitch/ecnswitch/testbed/bulk"
	"github.com/ecnswitch/ecnswitch/testbed/dctcp"
	"github.com/ecnswitch/ecnswitch/testbed/ect1"
	"github.com/ecnswitch/ecnswitch/testbed/testbedtest"
)

// TestECT1Hosts: with ECT1Ports, on the wire (AF_PACKET on h1's switch
// end, hosts joined by a Linux bridge), over IPv4 and IPv6:
//   - every TCP packet of a dctcp flow to a chosen port carries ECT(1),
//     both ways and the SYN included, where dctcp alone sends ECT(0)
//     (TestDCTCPHosts), and every IPv4 header checksum verifies; the
//     flow keeps ECN and dctcp (its ECT(1) SYN asked for ECN);
//   - a dctcp flow to another port keeps ECT(0);
//   - Down removes the pins and the kernel frees the rewriters' links.
func TestECT1Hosts(t *testing.T) {
	const chosen = 9331
	tb := testbedtest.New(t, 2, withIPv6, func(o *testbed.Options) {
		o.CongestionControl = dctcp.Name
		o.ECT1Ports = []uint16{chosen}
	})
	if got := tb.ECT1Ports(); len(got) != 1 || got[0] != chosen {
		t.Fatalf("ECT1Ports() = %v, want [%d]", got, chosen)
	}
	pins := filepath.Join(ect1.DefaultPinDir, "testbed-"+tb.ID())
	var links []link.ID
	for _, h := range tb.Hosts() {
		l, err := link.LoadPinnedLink(filepath.Join(pins, h.Name), nil)
		if err != nil {
			t.Fatalf("%s's rewriter: %v", h.Name, err)
		}
		info, err := l.Info()
		l.Close()
		if err != nil {
			t.Fatal(err)
		}
		links = append(links, info.ID)
	}
	bridge(t, tb)
	h1, h2 := tb.Hosts()[0], tb.Hosts()[1]

	for _, dst := range []netip.Addr{h2.IPv4, h2.IPv6} {
		for _, port := range []uint16{chosen, chosen + 1} {
			want := packet.ECT0
			if port == chosen {
				want = packet.ECT1
			}
			capt := startCapture(t, h1.SwitchIf)
			c, rcv := dialPort(t, h1, h2, netip.AddrPortFrom(dst, port))
			const n = 1 << 20
			if _, err := c.Write(make([]byte, n)); err != nil {
				t.Fatal(err)
			}
			if got := congestionControl(t, c); got != dctcp.Name {
				t.Errorf("%s port %d: the connection runs %s, want dctcp (ECN negotiated)", dst, port, got)
			}
			if tcpInfo(t, c).Options&tcpiOptECN == 0 {
				t.Errorf("%s port %d: ECN not negotiated", dst, port)
			}
			c.Close()
			waitFlowsDone(t, rcv, 1)
			rcv.Close()
			var syns, data, other int
			seen := map[uint32]bool{}
			for _, f := range capt.stop() {
				if f.proto != unix.IPPROTO_TCP || f.sport != port && f.dport != port {
					continue
				}
				if !f.csum {
					t.Fatalf("%s port %d: a TCP packet from %s with a bad IPv4 header checksum", dst, port, f.src)
				}
				ecn := packet.ECN(f.tos & 3)
				switch {
				case ecn == want:
				case ecn == packet.NotECT && f.payload > 0 && seen[f.seq]:
					continue // a retransmission (RFC 3168 §6.1.5), which the program leaves alone
				default:
					t.Fatalf("%s port %d: a TCP packet from %s (SYN %v, %d bytes) carries %v, want %v", dst, port, f.src, f.syn, f.payload, ecn, want)
				}
				seen[f.seq] = true
				switch {
				case f.syn:
					syns++
				case f.payload > 0:
					data += f.payload
				default:
					other++
				}
			}
			if syns != 2 || data < n/2 || other == 0 {
				t.Errorf("%s port %d: captured %d SYNs, %d data bytes, %d other packets with %v; want 2, at least %d, some",
					dst, port, syns, data, other, want, n/2)
			}
		}
	}

	if err := tb.Down(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pins); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Down, %s: %v; want it gone", pins, err)
	}
	// The kernel frees an unpinned link from a work queue.
	deadline := time.Now().Add(5 * time.Second)
	for _, id := range links {
		for {
			l, err := link.NewFromID(id)
			if err != nil {
				break
			}
			l.Close()
			if time.Now().After(deadline) {
				t.Fatalf("after Down, link %d is still there", id)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// tcpiOptECN is TCP_INFO's bit for a connection that negotiated ECN
// (uapi linux/tcp.h TCPI_OPT_ECN).
const tcpiOptECN = 8

// dialPort listens on h2 at dst's port and dials it from h1, both with
// their hosts' default congestion control.
func dialPort(t *testing.T, h1, h2 testbed.Host, dst netip.AddrPort) (net.Conn, *bulk.Receiver) {
	t.Helper()
	ln, err := h2.ListenTCP(dst.Port())
	if err != nil {
		t.Fatal(err)
	}
	rcv := bulk.Serve(ln)
	t.Cleanup(func() { rcv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := h1.DialTCP(ctx, dst, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, rcv
}
