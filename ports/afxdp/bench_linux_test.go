//go:build linux

package afxdp

import (
	"os"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/vishvananda/netlink"
)

// newVethPair makes a veth pair a↔b with both ends in the root namespace
// (each driven by its own Port), offloads and IPv6 off, removed in
// tb.Cleanup.
func newVethPair(tb testing.TB) (a, b string) {
	tb.Helper()
	requireRoot(tb)
	sfx := randHex(tb, 3)
	a, b = "exb"+sfx+"a", "exb"+sfx+"b"
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: a, MTU: 1500}, PeerName: b}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if l, err := netlink.LinkByName(a); err == nil {
			_ = netlink.LinkDel(l)
		}
	})
	for _, name := range []string{a, b} {
		if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+name+"/disable_ipv6", []byte("1"), 0); err != nil {
			tb.Fatal(err)
		}
		setOffloads(tb, name)
		l, err := netlink.LinkByName(name)
		if err != nil {
			tb.Fatal(err)
		}
		if err := netlink.LinkSetUp(l); err != nil {
			tb.Fatal(err)
		}
	}
	waitUp(tb, a)
	waitUp(tb, b)
	return a, b
}

// BenchmarkTransmitReceive forwards 64-byte frames from one Port to the
// Port on the other end of a veth pair, batch by batch, on one goroutine:
// Transmit on a (copy-mode kick, veth, native XDP on b, redirect) then
// Receive on b. One op is one frame; Mpps counts frames received.
func BenchmarkTransmitReceive(b *testing.B) {
	for _, size := range []int{64, 1514} {
		b.Run(map[int]string{64: "64B", 1514: "1514B"}[size], func(b *testing.B) {
			ea, eb := newVethPair(b)
			tx := openPort(b, ea, Options{})
			rx := openPort(b, eb, Options{})
			ds := newDescs(ports.BatchSize, 2048)
			for _, d := range ds {
				d.Len = copy(d.Buf, ethFrame([]byte{2, 0, 0, 0, 0, 2}, []byte{2, 0, 0, 0, 0, 1}, make([]byte, size-14)))
			}
			in := newDescs(ports.BatchSize, 2048)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			b.ResetTimer()
			start := time.Now()
			sent, got := 0, 0
			for sent < b.N {
				k, err := tx.Transmit(ds[:min(len(ds), b.N-sent)])
				if err != nil {
					b.Fatal(err)
				}
				sent += k
				for {
					m, err := rx.Receive(in)
					if err != nil {
						b.Fatal(err)
					}
					got += m
					if m < len(in) {
						break
					}
				}
			}
			for deadline := time.Now().Add(time.Second); got < sent && time.Now().Before(deadline); {
				m, _ := rx.Receive(in)
				got += m
			}
			el := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(got)/el.Seconds()/1e6, "Mpps")
			b.ReportMetric(float64(sent-got), "lost")
		})
	}
}
