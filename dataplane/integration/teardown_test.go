package integration

import (
	"encoding/binary"
	"errors"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/testbed"
)

// TestTeardown: while the switch runs, ecnswitch's XDP program is attached
// to every switch interface; after the switch stops and closes its ports
// none is (netlink IFLA_XDP), no goroutine of the switch is left, and
// after the test's cleanup neither the hosts' namespaces nor the switch
// interfaces exist.
func TestTeardown(t *testing.T) {
	var hosts []testbed.Host
	before := runtime.NumGoroutine()
	t.Run("run", func(t *testing.T) {
		r := newRig(t, 3, func(hs []testbed.Host) dataplane.Config { return baseConfig(hs, 1) })
		hosts = r.hosts
		for i, h := range r.hosts {
			id, _ := xdpAttached(t, h.SwitchIf)
			if want := r.ports[i].Info().ProgramID; id == 0 || id != want {
				t.Fatalf("%s: XDP program %d attached while running, want the port's program %d", h.SwitchIf, id, want)
			}
		}
		if got := ping(t, hosts[0], hosts[2].IPv4, 2, 2*time.Second); got != 2 {
			t.Fatalf("%d of 2 echo replies through the switch", got)
		}
		r.stop() // checks that no XDP program is left on any switch interface
		for _, h := range r.hosts {
			if id, _ := xdpAttached(t, h.SwitchIf); id != 0 {
				t.Fatalf("%s: XDP program %d still attached after Close", h.SwitchIf, id)
			}
		}
	})
	if len(hosts) == 0 {
		t.Fatal("the testbed did not come up")
	}
	for _, h := range hosts {
		if netnsExists(h.Netns) {
			t.Errorf("namespace %s still exists after cleanup", h.Netns)
		}
		var nf netlink.LinkNotFoundError
		if _, err := netlink.LinkByName(h.SwitchIf); !errors.As(err, &nf) {
			t.Errorf("switch interface %s still exists after cleanup (lookup: %v)", h.SwitchIf, err)
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines before, %d after\n%s", before, after, buf[:runtime.Stack(buf, true)])
	}
}

// TestMalformedFlood: a host floods the switch with raw frames that no
// parser may accept — IPv4 with IHL below 5, IPv4 options running past
// the frame, IPv4 and IPv6 headers cut short, an IP version that
// contradicts the EtherType, a total length beyond the frame, a TCP data
// offset of 2 — sent from an AF_PACKET socket as fast as it goes. Every
// frame that reaches the switch is counted as malformed and nothing else
// happens: the switch keeps forwarding, Run returns without error, the
// packet balance holds, and every UMEM frame of every port is accounted
// for (afxdp's FrameAccount: none lost in the kernel, no violations).
func TestMalformedFlood(t *testing.T) {
	r := newRig(t, 2, func(hs []testbed.Host) dataplane.Config { return baseConfig(hs, 1) })
	h1, h2 := r.hosts[0], r.hosts[1]
	frames := malformedFrames(h1.MAC, h2.MAC)
	for i, f := range frames {
		d := &packet.Desc{Buf: f, Len: len(f)}
		if err := packet.Parse(d); err == nil {
			t.Fatalf("frame %d parses: the flood must be malformed only", i)
		}
	}

	var fd, ifindex int
	err := h1.Do(func() error {
		ifi, err := net.InterfaceByName(h1.HostIf)
		if err != nil {
			return err
		}
		ifindex = ifi.Index
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifi.Index})
	})
	if err != nil {
		t.Fatalf("host %s: AF_PACKET socket: %v", h1.Name, err)
	}
	defer unix.Close(fd)

	p0, l0 := r.port(h1), hostLinkStats(t, h1)
	const rounds = 2000
	sent := 0
	for round := range rounds {
		for _, f := range frames {
			if err := unix.Sendto(fd, f, 0, &unix.SockaddrLinklayer{Ifindex: ifindex}); err == nil {
				sent++
			}
		}
		// Bursts of 700 frames, a third of the socket's RX ring: on a
		// loaded machine the worker may not run for milliseconds, and a
		// flood that overran the ring would test the kernel's drops (which
		// the accounting below covers) rather than the switch's parser.
		if round%100 == 99 {
			for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if p := r.port(h1); p.RxPackets+p.Device.RxDropped+p.Device.RxOversize >= p0.RxPackets+p0.Device.RxDropped+p0.Device.RxOversize+uint64(sent) {
					break
				}
			}
		}
	}
	r.quiesce()
	p1, l1 := r.port(h1), hostLinkStats(t, h1)
	if p1.Device == nil {
		t.Fatal("the switch's stats have no device counters for an AF_XDP port")
	}
	x0, x1 := p0.Device, p1.Device // the kernel's drops as /stats shows them
	malformed := p1.Drops["malformed"] - p0.Drops["malformed"]
	rx := p1.RxPackets - p0.RxPackets
	hostTx := l1.TxPackets - l0.TxPackets
	kernelDrops := (x1.RxDropped + x1.RxOversize) - (x0.RxDropped + x0.RxOversize)
	vethDrops := l1.TxDropped - l0.TxDropped
	t.Logf("sent %d; host interface sent %d, dropped %d; AF_XDP dropped %d; switch received %d, malformed %d",
		sent, hostTx, vethDrops, kernelDrops, rx, malformed)
	if sent != rounds*len(frames) {
		t.Errorf("the AF_PACKET socket took %d of %d frames", sent, rounds*len(frames))
	}
	// Every flood frame the kernel did not drop on the way (veth, or the
	// port's socket) is counted malformed. The host's own few frames (an
	// IPv6 link-local MLD report, say) are not, and may arrive meanwhile,
	// or be dropped with the flood at a full ring: the drops may hold up to
	// hostTx − sent of them.
	if n := malformed + kernelDrops + vethDrops; n < uint64(sent) || n > hostTx {
		t.Errorf("h1 sent %d malformed frames (%d in all): the switch counted %d malformed, the kernel dropped %d (veth) + %d (socket)",
			sent, hostTx, malformed, vethDrops, kernelDrops)
	}
	if other := rx - malformed; rx < malformed || other > 10 {
		t.Errorf("the switch received %d frames from h1 during the flood, %d malformed", rx, malformed)
	}
	if malformed < uint64(sent)/2 {
		t.Errorf("only %d of %d malformed frames reached the switch", malformed, sent)
	}

	if got := ping(t, h1, h2.IPv4, 3, 2*time.Second); got != 3 {
		t.Errorf("after the flood, %d of 3 echo replies through the switch", got)
	}
	r.stop()
	if a := r.sw.Account(); !a.Balanced() {
		t.Errorf("packet balance after stop %+v", a)
	}
	for i, a := range r.frames {
		if a.Violations != 0 || a.InKernel() != 0 || a.Tx != 0 || a.Completion != 0 {
			t.Errorf("port %s frames %+v: want no violations and none held by the kernel or in flight (%d unaccounted)",
				r.hosts[i].SwitchIf, a, a.InKernel())
		}
		if a.Free+a.Fill+a.Rx+a.Tx+a.Completion != a.Total {
			t.Errorf("port %s: %d of %d UMEM frames accounted for", r.hosts[i].SwitchIf, a.Free+a.Fill+a.Rx+a.Tx+a.Completion, a.Total)
		}
	}
}

// malformedFrames returns one frame of each malformation, from src to dst.
func malformedFrames(src, dst net.HardwareAddr) [][]byte {
	eth := func(etherType uint16, payload []byte) []byte {
		f := make([]byte, 14, 14+len(payload))
		copy(f[0:], dst)
		copy(f[6:], src)
		binary.BigEndian.PutUint16(f[12:], etherType)
		return append(f, payload...)
	}
	ipv4 := func(verIHL byte, totalLen uint16, proto byte, size int) []byte {
		ip := make([]byte, max(size, 20))
		ip[0] = verIHL
		binary.BigEndian.PutUint16(ip[2:], totalLen)
		ip[8], ip[9] = 64, proto
		copy(ip[12:], []byte{198, 18, 0, 1})
		copy(ip[16:], []byte{198, 18, 0, 2})
		return ip[:size]
	}
	tcpBadOffset := ipv4(0x45, 40, packet.ProtoTCP, 40)
	tcpBadOffset[20+12] = 2 << 4 // data offset 2 words < 5
	return [][]byte{
		eth(packet.EtherTypeIPv4, ipv4(0x43, 28, packet.ProtoUDP, 28)),   // IHL 3 < 5
		eth(packet.EtherTypeIPv4, ipv4(0x4f, 24, packet.ProtoUDP, 24)),   // IHL 15: options past the end
		eth(packet.EtherTypeIPv4, ipv4(0x45, 20, packet.ProtoUDP, 10)),   // IPv4 header cut at 10 bytes
		eth(packet.EtherTypeIPv6, make([]byte, 30)),                      // IPv6 header cut at 30 bytes
		eth(packet.EtherTypeIPv4, ipv4(0x65, 28, packet.ProtoUDP, 28)),   // version 6 under 0x0800
		eth(packet.EtherTypeIPv4, ipv4(0x45, 1000, packet.ProtoUDP, 40)), // total length beyond the frame
		eth(packet.EtherTypeIPv4, tcpBadOffset),                          // TCP data offset 2
	}
}
