package main

import (
	"context"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/ecnswitch/ecnswitch/config"
	"github.com/ecnswitch/ecnswitch/node"
	"github.com/ecnswitch/ecnswitch/telemetry"
	"github.com/ecnswitch/ecnswitch/testbed"
	"github.com/ecnswitch/ecnswitch/testbed/testbedtest"
)

// TestInterfaceRecreated: deleting a port's interface while traffic runs
// stops the daemon with an error naming the port and the cure (its
// sockets and XDP program went with the interface, and nothing would
// drive a successor of the same name), rather than logging "port
// resumes" and never driving it again; once the interface is recreated,
// a restarted switch forwards through it.
func TestInterfaceRecreated(t *testing.T) {
	tb := testbedtest.New(t, 2)
	hosts := tb.Hosts()
	h1, h2 := hosts[0], hosts[1]
	y := strings.Replace(string(testbedConfig(tb.ID(), tb.StatePath(), hosts, nil)), "listen: "+telemetry.DefaultListen, "listen: 127.0.0.1:0", 1)
	y += "control:\n  socket: " + filepath.Join(t.TempDir(), "ecnswitch.sock") + "\n"
	cfg, err := config.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run := func() (*syncBuffer, context.CancelFunc, <-chan error) {
		var logs syncBuffer
		log, _ := newLogger("info", &logs)
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := node.Run(runCtx, cfg, log, nil)
			done <- err
		}()
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "ecnswitch running"); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the switch did not start:\n%s", logs.String())
			}
		}
		return &logs, stop, done
	}

	logs, stop, done := run()
	defer stop()
	if got := datagrams(t, ctx, h1, h2, 5); got != 5 {
		t.Fatalf("%d of 5 datagrams arrived before the deletion", got)
	}
	// Traffic runs: h1 streams UDP datagrams to h2 through the switch.
	udp, err := h1.DialUDP(ctx, netip.AddrPortFrom(h2.IPv4, 9), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	stopUDP := make(chan struct{})
	defer close(stopUDP)
	go func() {
		for {
			select {
			case <-stopUDP:
				return
			default:
				udp.Write(make([]byte, 500))
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	time.Sleep(200 * time.Millisecond)

	sw, err := netlink.LinkByName(h2.SwitchIf)
	if err != nil {
		t.Fatal(err)
	}
	index := sw.Attrs().Index
	if err := netlink.LinkDel(sw); err != nil { // the host end goes with it
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "was deleted") || !strings.Contains(err.Error(), "restart ecnswitch") ||
			!strings.Contains(err.Error(), h2.SwitchIf) {
			t.Fatalf("node.Run after the interface was deleted = %v; want an error naming it and the cure", err)
		}
		t.Log(err)
	case <-time.After(10 * time.Second):
		t.Fatalf("the switch still runs 10 s after its port's interface was deleted:\n%s", logs.String())
	}

	recreate(t, h2, index, tb.Subnet().Bits())
	_, stop2, done2 := run()
	// A restarted switch's first frames meet its start-up (an empty MAC
	// table, the transmit path being chosen) and a machine busy with the
	// other packages' tests: once one datagram has come through, every
	// one must.
	forwarding(t, ctx, h1, h2)
	if got := datagrams(t, ctx, h1, h2, 5); got != 5 {
		t.Errorf("after the interface was recreated and the switch restarted, %d of 5 datagrams arrived", got)
	}
	stop2()
	if err := <-done2; err != nil {
		t.Errorf("second run: %v", err)
	}
}

// recreate makes h's veth pair again, as the testbed made it (the same
// names, the host end's MAC and address), and removes it when the test
// ends, before the testbed's cleanup, which leaves alone a switch end it
// did not create.
func recreate(t *testing.T, h testbed.Host, oldIndex, bits int) {
	t.Helper()
	ns, err := netns.GetFromName(h.Netns)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	la := netlink.NewLinkAttrs()
	la.Name = h.SwitchIf
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: h.HostIf, PeerNamespace: netlink.NsFd(ns), PeerHardwareAddr: h.MAC}); err != nil {
		t.Fatalf("recreate %s: %v", h.SwitchIf, err)
	}
	sw, err := netlink.LinkByName(h.SwitchIf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { netlink.LinkDel(sw) })
	if sw.Attrs().Index == oldIndex {
		t.Fatalf("the new %s has the old ifindex %d", h.SwitchIf, oldIndex)
	}
	if err := netlink.LinkSetUp(sw); err != nil {
		t.Fatal(err)
	}
	err = h.Do(func() error {
		l, err := netlink.LinkByName(h.HostIf)
		if err != nil {
			return err
		}
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: h.IPv4.AsSlice(), Mask: net.CIDRMask(bits, 32)}}
		if err := netlink.AddrAdd(l, addr); err != nil {
			return err
		}
		return netlink.LinkSetUp(l)
	})
	if err != nil {
		t.Fatalf("configure the new %s: %v", h.HostIf, err)
	}
}

// udpPath returns a socket listening on port in b, one in a sending to
// it, and a function that closes both.
func udpPath(t *testing.T, ctx context.Context, a, b testbed.Host, port uint16) (ln, c *net.UDPConn, done func()) {
	t.Helper()
	ln, err := b.ListenUDP(port)
	if err != nil {
		t.Fatal(err)
	}
	c, err = a.DialUDP(ctx, netip.AddrPortFrom(b.IPv4, port), 0, 0)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	return ln, c, func() { c.Close(); ln.Close() }
}

// forwarding waits until a datagram from a reaches b, sending one every
// 10 ms for up to 5 s.
func forwarding(t *testing.T, ctx context.Context, a, b testbed.Host) {
	t.Helper()
	ln, c, done := udpPath(t, ctx, a, b, 5998)
	defer done()
	buf := make([]byte, 100)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if _, err := c.Write([]byte("probe")); err != nil {
			t.Fatal(err)
		}
		ln.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if _, err := ln.Read(buf); err == nil {
			return
		}
	}
	t.Fatal("no datagram came through the switch in 5 s")
}

// datagrams sends n UDP datagrams from a to b through the switch and
// returns how many b received within a second of the last.
func datagrams(t *testing.T, ctx context.Context, a, b testbed.Host, n int) int {
	t.Helper()
	ln, c, done := udpPath(t, ctx, a, b, 5999)
	defer done()
	for range n {
		if _, err := c.Write([]byte("through the switch")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	got := 0
	buf := make([]byte, 100)
	for got < n {
		ln.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := ln.Read(buf); err != nil {
			break
		}
		got++
	}
	return got
}
