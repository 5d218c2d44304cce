package integration

import (
	"bytes"
	"context"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/intmd"
	"github.com/ecnswitch/ecnswitch/scheduler"
	"github.com/ecnswitch/ecnswitch/testbed"
)

// TestINTOnTheWire: UDP datagrams from h1's kernel that carry INT
// headers (HPCC's fields, one hop) cross ecnswitch on AF_XDP ports to
// h2, whose port is shaped to 100 Mbit/s and adds its record, over IPv4
// and IPv6. h2's kernel delivers every datagram to its socket, each with
// the record on top of its stack (the port's rate, TX bytes and egress
// times that grow from one to the next, occupancies the burst left);
// gopacket finds every frame's lengths and checksums right as h2
// received it (a veth with receive checksumming does not check them
// itself). A datagram without room below the MTU arrives without a
// record, its M flag set, and one whose payload is not INT arrives
// untouched; the switch counts all three kinds.
func TestINTOnTheWire(t *testing.T) {
	const (
		rate    = 100_000_000
		intPort = 4790
		n       = 40
		size    = 1000 // UDP payload
	)
	r := newRig(t, 2, func(hs []testbed.Host) dataplane.Config {
		cfg := baseConfig(hs, 1)
		p := &cfg.Ports[1]
		p.Shaper = scheduler.ShaperConfig{Rate: rate, Bucket: 2500, Overhead: scheduler.OverheadEthernet}
		p.Scheduler.Overhead, p.Scheduler.LineRate = scheduler.OverheadEthernet, rate
		p.INT = &dataplane.INT{Port: intPort}
		return cfg
	}, withIPv6)
	h1, h2 := r.hosts[0], r.hosts[1]
	hdr, err := intmd.NewHeader(intmd.HPCCInstructions, intmd.HPCCDSInstructions, 1)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := h2.ListenUDP(intPort)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	for fi, fam := range []struct {
		name string
		dst  netip.Addr
		ip   int // IP header bytes
	}{{"IPv4", h2.IPv4, 20}, {"IPv6", h2.IPv6, 40}} {
		t.Run(fam.name, func(t *testing.T) {
			if got := ping(t, h1, fam.dst, 3, 2*time.Second); got != 3 {
				t.Fatalf("%d of 3 echo replies from %s", got, fam.dst)
			}
			capt := startCaptureKeeping(t, h2, intPort)
			before := *r.port(h2).INT
			cl, err := h1.DialUDP(context.Background(), netip.AddrPortFrom(fam.dst, intPort), 0, packet.ECT0)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			msg := func(seq, size int) []byte {
				b := make([]byte, size)
				hdr.Put(b)
				binary.BigEndian.PutUint16(b[intmd.HeaderLen:], uint16(seq))
				return b
			}
			var sent [][]byte
			for i := range n {
				sent = append(sent, msg(i, size))
			}
			full := 1514 - 14 - fam.ip - 8 - 10 // 10 bytes short of the MTU: no room for 24
			sent = append(sent, msg(n, full), bytes.Repeat([]byte{0xab}, 300))
			for _, m := range sent {
				if _, err := cl.Write(m); err != nil {
					t.Fatal(err)
				}
			}
			buf := make([]byte, 2048)
			var got [][]byte
			for range sent {
				srv.SetReadDeadline(time.Now().Add(2 * time.Second))
				k, _, err := srv.ReadFromUDP(buf)
				if err != nil {
					t.Fatalf("after %d of %d datagrams: %v", len(got), len(sent), err)
				}
				got = append(got, bytes.Clone(buf[:k]))
			}
			var first, prev intmd.Hop
			for i, g := range got[:n] {
				h, stack, err := intmd.Parse(g)
				if err != nil || h.Hops() != 1 || h.RemainingHops != 0 || h.Flags != 0 || len(g) != size+24 {
					t.Fatalf("datagram %d (%d bytes): %+v, %v; want one record, no hops left", i, len(g), h, err)
				}
				if seq := binary.BigEndian.Uint16(g[intmd.HeaderLen+len(stack):]); int(seq) != i {
					t.Fatalf("datagram %d carries seq %d: reordered", i, seq)
				}
				hop, _ := h.Hop(stack, 0)
				if behind := (n-1-i)*(size+14+fam.ip+8) + (full + 14 + fam.ip + 8) + (300 + 14 + fam.ip + 8); hop.LinkRate() != rate || int(hop.QueueBytes) > behind {
					t.Errorf("datagram %d: record %+v: want the port's rate, at most the %d bytes sent after it queued", i, hop, behind)
				}
				if i > 0 && (hop.TxBytes <= prev.TxBytes || hop.EgressTS < prev.EgressTS) {
					t.Errorf("datagram %d: TX bytes %d, egress %d after %d, %d: want TX bytes to grow, time not to go back", i, hop.TxBytes, hop.EgressTS, prev.TxBytes, prev.EgressTS)
				}
				if i == 0 {
					first = hop
				}
				prev = hop
			}
			// The shaper's bound: over any interval, the line sends at most
			// its bucket and one frame more than the rate allows.
			if dt, dtx := prev.EgressTS-first.EgressTS, prev.TxBytes-first.TxBytes; dtx > 2500+1538+uint64(dt)*rate/8e9 {
				t.Errorf("%d bytes sent in %d ns at %d bit/s: more than the rate and the bucket allow", dtx, dt, rate)
			}
			if h, _, err := intmd.Parse(got[n]); err != nil || h.Hops() != 0 || h.Flags != intmd.FlagM || len(got[n]) != full {
				t.Errorf("the full datagram: %+v, %v, %d bytes; want no record, M set, %d bytes", h, err, len(got[n]), full)
			}
			if !bytes.Equal(got[n+1], sent[n+1]) {
				t.Error("the datagram without INT headers changed on its way")
			}
			after := *r.port(h2).INT
			if a, nr, m := after.Added-before.Added, after.NoRoom-before.NoRoom, after.Malformed-before.Malformed; a != n || nr != 1 || m != 1 {
				t.Errorf("the switch counted %d added, %d without room, %d malformed; want %d, 1, 1", a, nr, m, n)
			}
			capt.stop(t)
			if len(capt.kept) != len(sent) {
				t.Fatalf("h2's interface saw %d frames to port %d, want %d", len(capt.kept), intPort, len(sent))
			}
			for _, f := range capt.kept {
				validFrame(t, f, fi == 1)
			}
		})
	}
}

// validFrame fails tb unless gopacket, decoding Ethernet/IP/UDP frame f
// and serialising it again with lengths and checksums recomputed, gets f
// back byte for byte.
func validFrame(tb testing.TB, f []byte, v6 bool) {
	tb.Helper()
	p := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
	eth, _ := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	udp, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if eth == nil || udp == nil {
		tb.Fatalf("gopacket finds no Ethernet/UDP in % x", f)
	}
	var ip gopacket.SerializableLayer
	if v6 {
		ip6 := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
		_ = udp.SetNetworkLayerForChecksum(ip6)
		ip = ip6
	} else {
		ip4 := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		_ = udp.SetNetworkLayerForChecksum(ip4)
		ip = ip4
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, udp, gopacket.Payload(udp.Payload)); err != nil {
		tb.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes()[:len(f)], f) {
		tb.Fatalf("lengths or checksums wrong:\nframe    % x\ngopacket % x", f, buf.Bytes()[:len(f)])
	}
}
