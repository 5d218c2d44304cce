package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/testbed"
)

// TestForwarding: kernel traffic of every kind crosses ecnswitch between
// three hosts — ARP and NDP (the hosts have no static neighbours, so
// nothing else works unless these do), ICMP echo, UDP and TCP, over IPv4
// and IPv6. The switch learns the hosts' MACs from that traffic: once h1
// and h2 know each other, their unicast frames are no longer flooded to h3.
func TestForwarding(t *testing.T) {
	r := newRig(t, 3, func(hs []testbed.Host) dataplane.Config { return baseConfig(hs, 1) }, withIPv6)
	h1, h2, h3 := r.hosts[0], r.hosts[1], r.hosts[2]

	for _, fam := range []struct {
		name     string
		src, dst netip.Addr
	}{
		{"IPv4", h1.IPv4, h2.IPv4},
		{"IPv6", h1.IPv6, h2.IPv6},
	} {
		t.Run(fam.name, func(t *testing.T) {
			// ICMP echo, which first needs ARP or NDP to cross the switch.
			if got := ping(t, h1, fam.dst, 5, 2*time.Second); got != 5 {
				t.Fatalf("%d of 5 echo replies from %s", got, fam.dst)
			}
			mac, state := neighbour(t, h1, fam.dst)
			if !bytes.Equal(mac, h2.MAC) {
				t.Fatalf("h1's neighbour entry for %s is %v, want h2's MAC %v (resolved through the switch)", fam.dst, mac, h2.MAC)
			}
			if state&(netlink.NUD_PERMANENT|netlink.NUD_NOARP) != 0 {
				t.Fatalf("h1's neighbour entry for %s has state %#x: static, not learned", fam.dst, state)
			}

			// Unicast learning: h3's port sees none of the UDP below.
			h3Before := r.port(h3).TxPackets

			// UDP: 200 datagrams with DSCP 10 and ECT(0), each checked.
			srv, err := h2.ListenUDP(0)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			port := uint16(srv.LocalAddr().(*net.UDPAddr).Port)
			cl, err := h1.DialUDP(context.Background(), netip.AddrPortFrom(fam.dst, port), 10, packet.ECT0)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			const n = 200
			got := map[byte]bool{}
			buf := make([]byte, 2048)
			for i := 0; i < n; i++ {
				msg := bytes.Repeat([]byte{byte(i)}, 100+i)
				if _, err := cl.Write(msg); err != nil {
					t.Fatal(err)
				}
				srv.SetReadDeadline(time.Now().Add(2 * time.Second))
				k, from, err := srv.ReadFromUDP(buf)
				if err != nil {
					t.Fatalf("datagram %d: %v", i, err)
				}
				if a := from.AddrPort().Addr().Unmap(); a != fam.src {
					t.Fatalf("datagram %d from %v, want %v", i, a, fam.src)
				}
				if !bytes.Equal(buf[:k], msg) {
					t.Fatalf("datagram %d: %d bytes differ from the %d sent", i, k, len(msg))
				}
				got[byte(i)] = true
			}
			if len(got) != n {
				t.Fatalf("received %d distinct datagrams of %d", len(got), n)
			}
			if flooded := r.port(h3).TxPackets - h3Before; flooded > 10 {
				t.Errorf("h3's port sent %d frames during h1→h2 unicast UDP: the switch did not learn h2's MAC", flooded)
			}

			// TCP: 4 MiB from h1 to h2, checked by SHA-256.
			ln, err := h2.ListenTCP(0)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			sums := make(chan [32]byte, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					sums <- [32]byte{}
					return
				}
				defer c.Close()
				h := sha256.New()
				io.Copy(h, c)
				var s [32]byte
				copy(s[:], h.Sum(nil))
				sums <- s
			}()
			data := make([]byte, 4<<20)
			rand.Read(data)
			c := dialTCP(t, h1, netip.AddrPortFrom(fam.dst, uint16(ln.Addr().(*net.TCPAddr).Port)), 0)
			c.SetDeadline(time.Now().Add(20 * time.Second))
			if _, err := c.Write(data); err != nil {
				t.Fatal(err)
			}
			c.Close()
			select {
			case s := <-sums:
				if s != sha256.Sum256(data) {
					t.Fatal("TCP: the 4 MiB received differ from those sent")
				}
			case <-time.After(20 * time.Second):
				t.Fatal("TCP: transfer did not finish in 20 s")
			}
		})
	}

	st := r.port(h1)
	if st.Flooded == 0 {
		t.Error("no frame from h1 was flooded: ARP requests and NDP solicitations must be")
	}
	if st.Drops["malformed"] != 0 {
		t.Errorf("%d frames from h1 counted malformed", st.Drops["malformed"])
	}
}
