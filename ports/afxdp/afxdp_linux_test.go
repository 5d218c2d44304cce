//go:build linux

package afxdp

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/vishvananda/netlink"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sys/unix"
)

func randBytes(tb testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestReceiveExactBytes: raw frames sent from the namespace arrive through
// the XDP program and the RX ring byte for byte, and a UDP datagram sent by
// a normal socket arrives as a well-formed frame carrying its payload.
func TestReceiveExactBytes(t *testing.T) {
	checkGoroutines(t)
	n := newTestNet(t, 1)
	p := openPort(t, n.host, Options{})
	info := p.Info()
	if info.Attach != AttachNative || info.ZeroCopy || !info.NeedWakeup || info.UsableFrame != 1792 {
		t.Fatalf("Info = %+v, want native, copy mode, need-wakeup, usable 1792 (veth has no zero-copy)", info)
	}
	if x, err := queryXDP(n.hostIndex); err != nil || x.mode != attachedDrv || x.id != info.ProgramID {
		t.Fatalf("netlink reports %+v (%v), want program %d in native mode", x, err, info.ProgramID)
	}

	raw := n.peerSocket(t, unix.AF_PACKET, unix.SOCK_RAW, 0)
	var sent [][]byte
	for _, size := range []int{60, 64, 128, 1000, 1514} {
		f := ethFrame(n.hostMAC, n.peerMAC, randBytes(t, size-14))
		sent = append(sent, f)
	}
	n.peerSend(t, raw, sent...)
	got := receiveFrames(t, p, len(sent), 2048, 3*time.Second, false)
	if len(got) != len(sent) {
		t.Fatalf("received %d frames, want %d", len(got), len(sent))
	}
	for i := range sent {
		if !bytes.Equal(got[i], sent[i]) {
			t.Errorf("frame %d: got %d bytes %x…, want %d bytes %x…", i, len(got[i]), got[i][:20], len(sent[i]), sent[i][:20])
		}
	}

	udp := n.peerSocket(t, unix.AF_INET, unix.SOCK_DGRAM, 0)
	payload := randBytes(t, 333)
	dst := &unix.SockaddrInet4{Port: 9999}
	copy(dst.Addr[:], n.hostIP)
	if err := unix.Sendto(udp, payload, 0, dst); err != nil {
		t.Fatal(err)
	}
	got = receiveFrames(t, p, 1, 2048, 3*time.Second, true)
	if len(got) != 1 {
		t.Fatalf("received %d frames for the UDP datagram, want 1", len(got))
	}
	f := got[0]
	if len(f) != 14+20+8+len(payload) || !bytes.Equal(f[0:6], n.hostMAC) || !bytes.Equal(f[6:12], n.peerMAC) ||
		binary.BigEndian.Uint16(f[12:]) != 0x0800 || f[23] != unix.IPPROTO_UDP ||
		!net.IP(f[26:30]).Equal(n.peerIP) || !net.IP(f[30:34]).Equal(n.hostIP) ||
		binary.BigEndian.Uint16(f[36:]) != 9999 || !bytes.Equal(f[42:], payload) {
		t.Fatalf("UDP frame %x does not carry the datagram", f)
	}
	st := p.Stats()
	if st.RxPackets != uint64(len(sent)+1) || st.RxOversize != 0 || st.RxDropped != 0 {
		t.Errorf("Stats = %+v, want %d packets, no drops", st, len(sent)+1)
	}
}

// TestTransmitArrives: frames the Port transmits reach the namespace: raw
// frames byte for byte on an AF_PACKET socket, and a valid IPv4/UDP frame
// on a UDP socket bound to the peer's address.
func TestTransmitArrives(t *testing.T) {
	checkGoroutines(t)
	n := newTestNet(t, 1)
	p := openPort(t, n.host, Options{})
	pkt := n.peerPacketSocket(t)
	udp := n.peerSocket(t, unix.AF_INET, unix.SOCK_DGRAM, 0)
	la := &unix.SockaddrInet4{Port: 7777}
	copy(la.Addr[:], n.peerIP)
	if err := unix.Bind(udp, la); err != nil {
		t.Fatal(err)
	}
	tv := unix.NsecToTimeval(int64(2 * time.Second))
	if err := unix.SetsockoptTimeval(udp, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}

	var want [][]byte
	ds := newDescs(8, 2048)
	for i, size := range []int{60, 100, 512, 1514} {
		f := ethFrame(n.peerMAC, n.hostMAC, randBytes(t, size-14))
		want = append(want, f)
		ds[i].Len = copy(ds[i].Buf, f)
	}
	payload := randBytes(t, 200)
	ds[4].Len = copy(ds[4].Buf, udpFrame(n.peerMAC, n.hostMAC, n.hostIP, n.peerIP, 5555, 7777, payload))
	if k, err := p.Transmit(ds[:5]); k != 5 || err != nil {
		t.Fatalf("Transmit = %d, %v; want 5, nil", k, err)
	}
	buf := make([]byte, 4096)
	for i, w := range want {
		m, _, err := unix.Recvfrom(pkt, buf, 0)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(buf[:m], w) {
			t.Errorf("frame %d: got %x…, want %x…", i, buf[:20], w[:20])
		}
	}
	m, from, err := unix.Recvfrom(udp, buf, 0)
	if err != nil {
		t.Fatalf("UDP datagram: %v", err)
	}
	if sa, ok := from.(*unix.SockaddrInet4); !ok || sa.Port != 5555 || !net.IP(sa.Addr[:]).Equal(n.hostIP) || !bytes.Equal(buf[:m], payload) {
		t.Errorf("UDP: got %d bytes from %+v, want the 200-byte payload from %v:5555", m, from, n.hostIP)
	}
	waitFor(t, "TX completions", func() bool { p.Transmit(nil); return p.Stats().TxCompleted == 5 })
	if st := p.Stats(); st.TxPackets != 5 || st.TxErrors != 0 {
		t.Errorf("Stats = %+v, want 5 sent, no errors", st)
	}
}

func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTransmitBurst: 10,000 frames pushed through Transmit all reach the
// peer, and the TX ring is empty when the last Transmit returns. Copy-mode
// TX moves at most the kick budget per sendto (notes/afxdp.md §2.3), so a
// single kick per call would strand all but the first budget's worth.
func TestTransmitBurst(t *testing.T) {
	checkGoroutines(t)
	n := newTestNet(t, 1)
	p := openPort(t, n.host, Options{})
	if got := p.Info().TxBudget; got != DefaultTxBudget {
		t.Errorf("TxBudget = %d, want %d (XDP_MAX_TX_SKB_BUDGET exists on 6.17+)", got, DefaultTxBudget)
	}
	before := n.peerRxPackets(t)
	const total = 10000
	ds := newDescs(ports.BatchSize, 2048)
	frame := ethFrame(n.peerMAC, n.hostMAC, make([]byte, 50))
	for _, d := range ds {
		d.Len = copy(d.Buf, frame)
	}
	sent, calls := 0, 0
	deadline := time.Now().Add(10 * time.Second)
	for sent < total {
		k, err := p.Transmit(ds[:min(len(ds), total-sent)])
		if err != nil {
			t.Fatalf("Transmit: %v", err)
		}
		sent += k
		calls++
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d frames taken in 10 s", sent, total)
		}
	}
	if a := p.Frames(); a.Tx != 0 {
		t.Errorf("%d frames still on the TX ring after the last Transmit: the kick did not drain it", a.Tx)
	}
	waitFor(t, "10,000 frames at the peer", func() bool { return n.peerRxPackets(t)-before >= total })
	if got := n.peerRxPackets(t) - before; got != total {
		t.Errorf("peer received %d frames, want %d", got, total)
	}
	waitFor(t, "all completions", func() bool { p.Transmit(nil); return p.Stats().TxCompleted == total })
	a := p.Frames()
	if a.Free+a.Fill != a.Total || a.Violations != 0 {
		t.Errorf("after the burst: %+v, want every frame free or on the fill ring", a)
	}
	t.Logf("%d frames in %d Transmit calls", total, calls)
}

// TestOversizeAndFrameAccounting floods the port with frames too large for
// a UMEM frame (dropped by the XDP program), frames too large for the
// caller's buffers (dropped by Receive), runts and random bytes, and
// checks that each drop is counted once and no UMEM frame leaks.
func TestOversizeAndFrameAccounting(t *testing.T) {
	checkGoroutines(t)
	n := newTestNet(t, 1)
	p := openPort(t, n.host, Options{})
	// An operator raises the MTU after Open: 2500-byte frames now reach
	// the hook but cannot fit 2048-byte frames (1792 usable).
	for _, set := range []func() error{
		func() error { l, _ := netlink.LinkByName(n.host); return netlink.LinkSetMTU(l, 3000) },
		func() error {
			h, err := netlink.NewHandleAt(n.ns)
			if err != nil {
				return err
			}
			defer h.Close()
			l, err := h.LinkByName(n.peer)
			if err != nil {
				return err
			}
			return h.LinkSetMTU(l, 3000)
		},
	} {
		if err := set(); err != nil {
			t.Fatalf("raise MTU: %v", err)
		}
	}
	raw := n.peerSocket(t, unix.AF_PACKET, unix.SOCK_RAW, 0)
	const rounds = 5
	const big, medium, small = 40, 40, 40
	ds := newDescs(ports.BatchSize, 256)
	received := 0
	drain := func() {
		for {
			k, err := p.Receive(ds)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds[:k] {
				if d.Len > 256 || d.Len < 14 {
					t.Fatalf("received a %d-byte frame into a 256-byte buffer", d.Len)
				}
			}
			received += k
			if k == 0 {
				if ok, _ := p.Wait(int64(20 * time.Millisecond)); !ok {
					return
				}
			}
		}
	}
	for range rounds {
		var fs [][]byte
		for range big {
			fs = append(fs, ethFrame(n.hostMAC, n.peerMAC, randBytes(t, 2500)))
		}
		for range medium {
			fs = append(fs, ethFrame(n.hostMAC, n.peerMAC, randBytes(t, 600)))
		}
		for i := range small {
			// Garbage after a valid destination MAC: random EtherTypes, runts of 14 bytes.
			f := append(append([]byte(nil), n.hostMAC...), randBytes(t, 8+i%50)...)
			fs = append(fs, f)
		}
		n.peerSend(t, raw, fs...)
		drain()
	}
	st := p.Stats()
	if st.RxOversize != rounds*(big+medium) {
		t.Errorf("RxOversize = %d, want %d (%d over the usable frame, %d over the 256-byte buffers)",
			st.RxOversize, rounds*(big+medium), rounds*big, rounds*medium)
	}
	if received != rounds*small || st.RxPackets != rounds*small {
		t.Errorf("received %d frames, RxPackets %d, want %d", received, st.RxPackets, rounds*small)
	}
	if st.RxDropped != 0 {
		t.Errorf("RxDropped = %d, want 0: the program drops oversize frames before the socket", st.RxDropped)
	}
	a := p.Frames()
	if a.Violations != 0 || a.InKernel() != 0 || a.Rx != 0 || a.Tx != 0 || a.Completion != 0 ||
		a.Free+a.Fill != a.Total || a.Fill != DefaultRingSize {
		t.Errorf("frames %+v: want none lost, the fill ring full (%d) and the rest free", a, DefaultRingSize)
	}
}

// TestKernelDropsInStats: frames the kernel drops because nobody
// received them (the RX ring full: 64 slots, the fill ring holding more)
// show in Stats, so that what the peer sent is RxPackets + RxDropped.
func TestKernelDropsInStats(t *testing.T) {
	checkGoroutines(t)
	n := newTestNet(t, 1)
	const ring, sent = MinRingSize, 3 * MinRingSize
	p := openPort(t, n.host, Options{RxRingSize: ring, FillRingSize: 4 * ring})
	raw := n.peerSocket(t, unix.AF_PACKET, unix.SOCK_RAW, 0)
	var fs [][]byte
	for range sent {
		fs = append(fs, ethFrame(n.hostMAC, n.peerMAC, randBytes(t, 100)))
	}
	n.peerSend(t, raw, fs...)
	waitFor(t, "the kernel to deliver or drop every frame", func() bool {
		st := p.Stats()
		return st.RxDropped >= sent-ring
	})
	got := len(receiveFrames(t, p, ring, 2048, time.Second, true))
	st := p.Stats()
	t.Logf("sent %d: received %d, stats %+v", sent, got, st)
	if st.RxPackets+st.RxDropped != sent || st.RxRingFull != st.RxDropped || st.RxRingFull < sent-ring {
		t.Errorf("sent %d: RxPackets %d + RxDropped %d (RxRingFull %d); want them to add up, all drops at the full RX ring",
			sent, st.RxPackets, st.RxDropped, st.RxRingFull)
	}
	if st.Violations != 0 || st.RxFillEmpty != 0 {
		t.Errorf("violations %d, fill ring found empty %d times; want 0: the fill ring had frames", st.Violations, st.RxFillEmpty)
	}
}

// TestCloseDetachesAndReopens: Close leaves no XDP program behind, makes
// further calls fail with ports.ErrClosed, and a new Port on the same
// interface opens right away (bind retries EBUSY while the old sockets'
// teardown finishes) and works.
func TestCloseDetachesAndReopens(t *testing.T) {
	checkGoroutines(t)
	n := newTestNet(t, 1)
	raw := n.peerSocket(t, unix.AF_PACKET, unix.SOCK_RAW, 0)
	for round := range 3 {
		p, err := Open(n.host, Options{})
		if err != nil {
			t.Fatalf("round %d: Open: %v", round, err)
		}
		f := ethFrame(n.hostMAC, n.peerMAC, []byte(fmt.Sprintf("round %d", round)))
		n.peerSend(t, raw, f)
		if got := receiveFrames(t, p, 1, 2048, 3*time.Second, false); len(got) != 1 || !bytes.Equal(got[0], append(f, make([]byte, 0)...)) {
			t.Fatalf("round %d: received %d frames", round, len(got))
		}
		if err := p.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", round, err)
		}
		if x, err := queryXDP(n.hostIndex); err != nil || x.mode != attachedNone {
			t.Fatalf("round %d: after Close netlink reports %+v (%v), want no program", round, x, err)
		}
		if err := p.Close(); !errors.Is(err, ports.ErrClosed) {
			t.Errorf("second Close = %v, want ErrClosed", err)
		}
		if _, err := p.Receive(newDescs(1, 64)); !errors.Is(err, ports.ErrClosed) {
			t.Errorf("Receive after Close = %v, want ErrClosed", err)
		}
		if _, err := p.Transmit(newDescs(1, 64)); !errors.Is(err, ports.ErrClosed) {
			t.Errorf("Transmit after Close = %v, want ErrClosed", err)
		}
	}
}

// foreignProgram loads an XDP_PASS program that is not ecnswitch's.
func foreignProgram(t *testing.T) *ebpf.Program {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "foreign_pass", Type: ebpf.XDP, License: "MIT",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, xdpPass), asm.Return()},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Close() })
	return prog
}

// TestForeignProgramNeedsForce: another program's XDP program stays put
// unless Options.Force, in both attach modes.
func TestForeignProgramNeedsForce(t *testing.T) {
	checkGoroutines(t)
	n := newTestNet(t, 1)
	prog := foreignProgram(t)
	info, _ := prog.Info()
	fid, _ := info.ID()
	l, _ := netlink.LinkByName(n.host)
	for _, mode := range []uint32{attachedDrv, attachedSKB} {
		if err := netlink.LinkSetXdpFdWithFlags(l, prog.FD(), modeFlags(mode)); err != nil {
			t.Fatal(err)
		}
		_, err := Open(n.host, Options{})
		if !errors.Is(err, ErrForeignProgram) {
			t.Fatalf("%s: Open = %v, want ErrForeignProgram", modeName(mode), err)
		}
		if x, _ := queryXDP(n.hostIndex); x.id != uint32(fid) || x.mode != mode {
			t.Fatalf("%s: foreign program replaced: netlink reports %+v", modeName(mode), x)
		}
		p, err := Open(n.host, Options{Force: true})
		if err != nil {
			t.Fatalf("%s: Open with Force: %v", modeName(mode), err)
		}
		if x, _ := queryXDP(n.hostIndex); x.id != p.Info().ProgramID || x.mode != attachedDrv {
			t.Fatalf("%s: after a forced Open netlink reports %+v, want ours natively", modeName(mode), x)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if x, _ := queryXDP(n.hostIndex); x.mode != attachedNone {
			t.Fatalf("%s: after Close netlink reports %+v", modeName(mode), x)
		}
	}
}

// TestLeftoverRemoved: an ecnswitch program whose owner is gone (a crash
// leaves the netlink attach behind) is removed by Open, in either mode;
// one whose owner is alive is not (ErrInUse).
func TestLeftoverRemoved(t *testing.T) {
	checkGoroutines(t)
	n := newTestNet(t, 1)
	l, _ := netlink.LinkByName(n.host)
	u, err := NewUMEM(MinFrames, 2048)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	for _, mode := range []uint32{attachedDrv, attachedSKB} {
		left, err := newProgram(1792, 1, u.frames, 0x7ffffff0, 1, nil) // no such process
		if err != nil {
			t.Fatal(err)
		}
		if err := netlink.LinkSetXdpFdWithFlags(l, left.prog.FD(), modeFlags(mode)); err != nil {
			t.Fatal(err)
		}
		leftID := left.id
		left.close() // the attach keeps the program alive, as after a crash
		p, err := Open(n.host, Options{})
		if err != nil {
			t.Fatalf("%s leftover: Open: %v", modeName(mode), err)
		}
		if x, _ := queryXDP(n.hostIndex); x.id == leftID || x.id != p.Info().ProgramID {
			t.Fatalf("%s leftover %d: netlink reports %+v, want ours (%d)", modeName(mode), leftID, x, p.Info().ProgramID)
		}
		if _, err := Open(n.host, Options{}); !errors.Is(err, ErrInUse) {
			t.Fatalf("second Open while the first is live = %v, want ErrInUse", err)
		}
		if x, _ := queryXDP(n.hostIndex); x.id != p.Info().ProgramID {
			t.Fatalf("a refused Open disturbed the live program: %+v", x)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGenericMode: AttachGeneric attaches in SKB mode (verified through
// netlink), receives and transmits.
func TestGenericMode(t *testing.T) {
	checkGoroutines(t)
	n := newTestNet(t, 1)
	p := openPort(t, n.host, Options{Attach: AttachGeneric, FrameSize: 4096, Frames: 8192})
	if i := p.Info(); i.Attach != AttachGeneric || i.ZeroCopy || i.UsableFrame != 3840 {
		t.Fatalf("Info = %+v, want generic, copy mode, 3840 usable", i)
	}
	if x, _ := queryXDP(n.hostIndex); x.mode != attachedSKB {
		t.Fatalf("netlink reports %s, want generic", modeName(x.mode))
	}
	raw := n.peerSocket(t, unix.AF_PACKET, unix.SOCK_RAW, 0)
	f := ethFrame(n.hostMAC, n.peerMAC, randBytes(t, 1400))
	n.peerSend(t, raw, f)
	if got := receiveFrames(t, p, 1, 4096, 3*time.Second, false); len(got) != 1 || !bytes.Equal(got[0], f) {
		t.Fatalf("generic mode: received %d frames, want the one sent", len(got))
	}
	pkt := n.peerPacketSocket(t)
	ds := newDescs(1, 2048)
	ds[0].Len = copy(ds[0].Buf, ethFrame(n.peerMAC, n.hostMAC, randBytes(t, 100)))
	if k, err := p.Transmit(ds); k != 1 || err != nil {
		t.Fatalf("Transmit = %d, %v", k, err)
	}
	buf := make([]byte, 2048)
	if m, _, err := unix.Recvfrom(pkt, buf, 0); err != nil || !bytes.Equal(buf[:m], ds[0].Frame()) {
		t.Fatalf("peer got %d bytes (%v), want the frame", m, err)
	}
}

// TestMultiQueue: by default a socket opens on every RX queue, Receive
// takes from all of them, and frames of many flows all arrive.
func TestMultiQueue(t *testing.T) {
	checkGoroutines(t)
	n := newTestNet(t, 2)
	p := openPort(t, n.host, Options{Frames: 2048, FillRingSize: 1024, TxRingSize: 512, CompletionRingSize: 512, TxHash: true})
	if q := p.Info().Queues; len(q) != 2 || q[0] != 0 || q[1] != 1 {
		t.Fatalf("Queues = %v, want [0 1]", q)
	}
	const flows, per = 16, 8
	for i := range flows {
		fd := n.peerSocket(t, unix.AF_INET, unix.SOCK_DGRAM, 0) // each socket gets its own random TX hash
		dst := &unix.SockaddrInet4{Port: 10000 + i}
		copy(dst.Addr[:], n.hostIP)
		for j := range per {
			if err := unix.Sendto(fd, []byte{byte(i), byte(j)}, 0, dst); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := receiveFrames(t, p, flows*per, 2048, 3*time.Second, true)
	if len(got) != flows*per {
		t.Fatalf("received %d frames, want %d", len(got), flows*per)
	}
	qs, err := p.QueueStats()
	if err != nil {
		t.Fatal(err)
	}
	if qs[0].RxPackets == 0 || qs[1].RxPackets == 0 || qs[0].RxPackets+qs[1].RxPackets != flows*per {
		t.Errorf("per-queue RX %d + %d, want both queues used and %d in all (p ≈ 2⁻¹⁵ that 16 flows share one queue)",
			qs[0].RxPackets, qs[1].RxPackets, flows*per)
	}

	// TxHash spreads frames over both sockets by Desc.FlowHash: two frames
	// whose (MAC pair) hash is even, two odd, told apart by source MAC.
	ds := newDescs(4, 2048)
	var parity [2]int
	for i, k := 0, 0; k < len(ds); i++ {
		src := append(net.HardwareAddr{0x02, 0, 0, 0, 0x7e}, byte(i))
		d := ds[k]
		d.Len = copy(d.Buf, ethFrame(n.peerMAC, src, make([]byte, 50)))
		if h := d.FlowHash() % 2; parity[h] < 2 {
			parity[h]++
			k++
		}
	}
	if k, err := p.Transmit(ds); k != 4 || err != nil {
		t.Fatalf("Transmit = %d, %v", k, err)
	}
	qs, _ = p.QueueStats()
	if qs[0].TxPackets != 2 || qs[1].TxPackets != 2 {
		t.Errorf("per-queue TX %d, %d; want 2, 2 for two even and two odd hashes", qs[0].TxPackets, qs[1].TxPackets)
	}
}

// TestLinkDownIsAnError: with the link administratively down, Transmit
// returns an error wrapping ENETDOWN instead of panicking. The frames of
// the call that found it down stay on the TX ring; later calls take
// nothing (the caller drops and counts them), so a downed link holds at
// most one call's frames, and Pending is false, so that a worker does not
// wake up to kick a link that cannot move. The held frames count as at
// rest. Once the link is up, the next Transmit sends the held frames
// ahead of its own.
func TestLinkDownIsAnError(t *testing.T) {
	checkGoroutines(t)
	n := newTestNet(t, 1)
	p := openPort(t, n.host, Options{})
	l, _ := netlink.LinkByName(n.host)
	if err := netlink.LinkSetDown(l); err != nil {
		t.Fatal(err)
	}
	ds := newDescs(1, 2048)
	ds[0].Len = copy(ds[0].Buf, ethFrame(n.peerMAC, n.hostMAC, make([]byte, 50)))
	k1, err1 := p.Transmit(ds)
	more := newDescs(64, 2048)
	for _, d := range more {
		d.Len = copy(d.Buf, ethFrame(n.peerMAC, n.hostMAC, []byte("sent while the link was down")))
	}
	k2, err2 := p.Transmit(more)
	var se *SyscallError
	if k1 != 1 || !errors.Is(err1, unix.ENETDOWN) || !errors.As(err1, &se) || se.Op != "sendto" {
		t.Fatalf("Transmit on a downed link = %d, %v; want the frame taken and a sendto error wrapping ENETDOWN", k1, err1)
	}
	if k2 != 0 || err2 != err1 {
		t.Errorf("Transmit again while down = %d, %v (%p vs %p); want nothing taken and the same error value, so retries do not allocate",
			k2, err2, err2, err1)
	}
	if p.Pending() {
		t.Error("Pending while the link is down: a worker would wake to kick a link that cannot move")
	}
	if a := p.Settle(time.Hour); a.Tx != 1 || !a.LinkDown || !a.AtRest() {
		t.Errorf("frames while down: %+v; want the one held frame on the TX ring, the link down, at rest", a)
	}
	if err := netlink.LinkSetUp(l); err != nil {
		t.Fatal(err)
	}
	waitUp(t, n.host)
	pkt := n.peerPacketSocket(t)
	queued := append([]byte(nil), ds[0].Frame()...)
	ds[0].Len = copy(ds[0].Buf, ethFrame(n.peerMAC, n.hostMAC, []byte("after the link came back")))
	if k, err := p.Transmit(ds); k != 1 || err != nil {
		t.Fatalf("Transmit after link up = %d, %v", k, err)
	}
	buf := make([]byte, 2048)
	for i, want := range [][]byte{queued, ds[0].Frame()} {
		m, _, err := unix.Recvfrom(pkt, buf, 0)
		if err != nil || !bytes.Equal(buf[:m], want) {
			t.Fatalf("peer frame %d: got %q (%v), want %q", i, buf[:max(m, 0)], err, want)
		}
	}
	if a := p.Settle(5 * time.Second); a.Tx != 0 || a.LinkDown || !a.AtRest() {
		t.Errorf("frames after the link returned: %+v; want none held, at rest", a)
	}
}

// TestOpenErrors: errors name the cause and the cure.
func TestOpenErrors(t *testing.T) {
	requireRoot(t)
	_, err := Open("exd-missing0", Options{})
	t.Log(err)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("not found")) {
		t.Errorf("missing interface: %v", err)
	}
	n := newTestNet(t, 1)
	l, _ := netlink.LinkByName(n.host)
	if err := netlink.LinkSetMTU(l, 1800); err != nil {
		t.Fatal(err)
	}
	_, err = Open(n.host, Options{})
	t.Log(err)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("lower the MTU to at most 1774")) ||
		!bytes.Contains([]byte(err.Error()), []byte("FrameSize 4096")) {
		t.Errorf("MTU 1800 with 2048-byte frames: %v", err)
	}
	p, err := Open(n.host, Options{FrameSize: 4096, Frames: 8192})
	if err != nil {
		t.Fatalf("MTU 1800 with 4096-byte frames: %v", err)
	}
	p.Close()
	if err := netlink.LinkSetMTU(l, 1500); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(n.host, Options{Queues: []int{1}}); err == nil || !bytes.Contains([]byte(err.Error()), []byte("Queues[0] = 1")) {
		t.Errorf("queue beyond the interface's: %v", err)
	}
	_, err = Open(n.host, Options{ZeroCopy: ZeroCopyOn})
	t.Log(err)
	if !errors.Is(err, ErrNotSupported) {
		t.Errorf("zero-copy on veth: %v, want ErrNotSupported", err)
	}
	if x, _ := queryXDP(n.hostIndex); x.mode != attachedNone {
		t.Errorf("a failed Open left program %d attached", x.id)
	}
	if err := setGRO(n.host, true); err != nil {
		t.Fatal(err)
	}
	_, err = Open(n.host, Options{Attach: AttachGeneric, FrameSize: 4096, Frames: 8192})
	t.Log(err)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("gro off")) {
		t.Errorf("generic mode with GRO on: %v", err)
	}
	if x, _ := queryXDP(n.hostIndex); x.mode != attachedNone {
		t.Errorf("a failed Open left program %d attached", x.id)
	}
}

func setGRO(ifname string, on bool) error {
	v := uint32(0)
	if on {
		v = 1
	}
	return withIoctlSocket(func(fd int) error { _, err := ethtoolValue(fd, ifname, unix.ETHTOOL_SGRO, v); return err })
}

// TestHotPathAllocs: Receive, Transmit and Wait allocate nothing, on the
// socket path with frames of the caller's and on the live-frames path with
// frames of a shared UMEM (exchanged on receive).
func TestHotPathAllocs(t *testing.T) {
	for _, live := range []bool{false, true} {
		n := newTestNet(t, 1)
		o := Options{}
		ds, rx := newDescs(ports.BatchSize, 2048), newDescs(ports.BatchSize, 2048)
		if live {
			n.setPeerGRO(t, true)
			u := newUMEM(t, DefaultFrames+txqLen+2*ports.BatchSize)
			o = Options{UMEM: u, Transmit: TxXDP}
			ds, rx = umemDescs(t, u, ports.BatchSize), umemDescs(t, u, ports.BatchSize)
		}
		p := openPort(t, n.host, o)
		for _, d := range ds {
			d.Len = copy(d.Buf, ethFrame(n.peerMAC, n.hostMAC, make([]byte, 50)))
		}
		if p.watch != nil {
			// AllocsPerRun counts every goroutine's allocations, and the
			// capability watcher's netlink queries allocate.
			close(p.watch)
			p.watched.Wait()
			p.watch = nil
		}
		allocs := testing.AllocsPerRun(200, func() {
			if _, err := p.Transmit(ds); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Receive(rx); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Wait(0); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("live=%v: %.1f allocations per Transmit+Receive+Wait, want 0", live, allocs)
		}
	}
}

// TestInterfaceRemoved: when the device goes away under an open Port,
// Transmit returns an error wrapping ENXIO (the socket is unbound) rather
// than panicking, and Close still releases everything.
func TestInterfaceRemoved(t *testing.T) {
	checkGoroutines(t)
	n := newTestNet(t, 1)
	p, err := Open(n.host, Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := netlink.LinkByName(n.host)
	if err := netlink.LinkDel(l); err != nil {
		t.Fatal(err)
	}
	ds := newDescs(1, 2048)
	ds[0].Len = copy(ds[0].Buf, ethFrame(n.peerMAC, n.hostMAC, make([]byte, 50)))
	var err1 error
	waitFor(t, "the unbind to reach the socket", func() bool { _, err1 = p.Transmit(ds); return err1 != nil })
	t.Log(err1)
	if !errors.Is(err1, unix.ENXIO) && !errors.Is(err1, unix.ENETDOWN) {
		t.Errorf("Transmit on a removed device = %v, want ENXIO or ENETDOWN", err1)
	}
	if _, err := p.Receive(newDescs(4, 2048)); err != nil {
		t.Errorf("Receive on a removed device = %v, want nothing and no error", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close after the device went away: %v", err)
	}
}

// TestPermissionError: without root (the child re-runs this test as
// nobody, which drops every capability) Open fails with a permission error
// that names the capabilities to grant.
func TestPermissionError(t *testing.T) {
	if ifname := os.Getenv("AFXDP_TEST_UNPRIVILEGED"); ifname != "" {
		if err := syscall.Setuid(65534); err != nil {
			fmt.Println("setuid:", err)
			os.Exit(2)
		}
		_, err := Open(ifname, Options{})
		fmt.Printf("permission=%v\n%v\n", errors.Is(err, os.ErrPermission), err)
		os.Exit(0)
	}
	n := newTestNet(t, 1)
	cmd := exec.Command(os.Args[0], "-test.run=^TestPermissionError$", "-test.count=1")
	cmd.Env = append(os.Environ(), "AFXDP_TEST_UNPRIVILEGED="+n.host)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	if !bytes.Contains(out, []byte("permission=true")) || !bytes.Contains(out, []byte("CAP_BPF")) ||
		!bytes.Contains(out, []byte("run as root")) {
		t.Errorf("unprivileged Open: %s; want a permission error naming the capabilities", out)
	}
	if x, _ := queryXDP(n.hostIndex); x.mode != attachedNone {
		t.Errorf("unprivileged Open left program %d attached", x.id)
	}
}

// TestKilledLeavesNothingAttached: the program is attached through a BPF
// link, so a process killed with SIGKILL (no Close, no deferred call)
// leaves nothing on the interface: the kernel detaches it as the link's
// descriptor closes. The child opens a Port and waits to be killed.
func TestKilledLeavesNothingAttached(t *testing.T) {
	if ifname := os.Getenv("AFXDP_TEST_KILLED"); ifname != "" {
		p, err := Open(ifname, Options{})
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(2)
		}
		fmt.Printf("attached %d\n", p.Info().ProgramID)
		select {} // until SIGKILL
	}
	n := newTestNet(t, 1)
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledLeavesNothingAttached$", "-test.count=1")
	cmd.Env = append(os.Environ(), "AFXDP_TEST_KILLED="+n.host)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	var id uint32
	if _, serr := fmt.Sscanf(line, "attached %d", &id); err != nil || serr != nil {
		t.Fatalf("child: %q (%v)", line, err)
	}
	if x, _ := queryXDP(n.hostIndex); x.id != id {
		t.Fatalf("netlink reports %+v, want the child's program %d", x, id)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed = true
	waitFor(t, "the kernel to detach the killed process's program", func() bool {
		x, err := queryXDP(n.hostIndex)
		return err == nil && x.mode == attachedNone
	})
	// And the next switch opens at once, with nothing to clear.
	openPort(t, n.host, Options{})
}

// TestGenericFallbackWarns: where native attach fails (a veth whose peer's
// MTU does not fit a page), AttachAuto falls back to generic mode and says
// so as a warning naming the fix, not quietly.
func TestGenericFallbackWarns(t *testing.T) {
	checkGoroutines(t)
	n := newTestNet(t, 1)
	h, err := netlink.NewHandleAt(n.ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	peer, err := h.LinkByName(n.peer)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.LinkSetMTU(peer, 9000); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.InfoLevel)
	p := openPort(t, n.host, Options{Logger: zap.New(core)})
	if a := p.Info().Attach; a != AttachGeneric {
		t.Fatalf("attach %v with the peer's MTU at 9000; want the generic fallback", a)
	}
	w := logs.FilterLevelExact(zap.WarnLevel).FilterMessageSnippet("generic mode").All()
	if len(w) != 1 || !strings.Contains(w[0].Message, "attach: generic") {
		t.Errorf("warnings %+v: want one about the generic fallback, naming the fix", logs.FilterLevelExact(zap.WarnLevel).All())
	}
}

// TestPeerOffloadsWarn: a veth whose peer (in another namespace) has TSO
// or GSO on gets a warning at Open naming the peer and the command that
// turns them off; with them off, none. In generic mode: a native program
// makes veth turn the peer's segmentation offloads off itself.
func TestPeerOffloadsWarn(t *testing.T) {
	checkGoroutines(t)
	n := newTestNet(t, 1)
	for _, on := range []bool{false, true} {
		if on {
			inNS(t, n.ns, func() error {
				return withIoctlSocket(func(fd int) error {
					// TSO needs scatter-gather and TX checksum offload.
					for _, cmd := range []uint32{unix.ETHTOOL_STXCSUM, unix.ETHTOOL_SSG, unix.ETHTOOL_STSO} {
						if _, err := ethtoolValue(fd, n.peer, cmd, 1); err != nil {
							return err
						}
					}
					if v, err := ethtoolValue(fd, n.peer, unix.ETHTOOL_GTSO, 0); err != nil || v == 0 {
						return fmt.Errorf("TSO still off on %s (%v)", n.peer, err)
					}
					return nil
				})
			})
		}
		core, logs := observer.New(zap.InfoLevel)
		p := openPort(t, n.host, Options{Attach: AttachGeneric, Logger: zap.New(core)})
		w := logs.FilterLevelExact(zap.WarnLevel).FilterMessageSnippet("TSO or GSO").All()
		want := "ip netns exec " + n.nsName + " ethtool -K " + n.peer + " tso off gso off"
		switch {
		case !on && len(w) != 0:
			t.Errorf("the peer's offloads are off, yet: %s", w[0].Message)
		case on && (len(w) != 1 || !strings.Contains(w[0].Message, want)):
			t.Errorf("TSO on on the peer: warnings %+v, want one naming %q", logs.FilterLevelExact(zap.WarnLevel).All(), want)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMemlock: without CAP_IPC_LOCK the UMEM counts against
// RLIMIT_MEMLOCK. With the soft limit at 64 KiB and a higher hard limit,
// Open raises the soft limit itself and succeeds; with both at 64 KiB it
// fails with an error naming the cure. The child runs under setpriv with
// CAP_IPC_LOCK out of its bounding set.
func TestMemlock(t *testing.T) {
	if ifname := os.Getenv("AFXDP_TEST_MEMLOCK"); ifname != "" {
		var r unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &r); err != nil {
			fmt.Println("getrlimit:", err)
			os.Exit(2)
		}
		r.Cur = 64 << 10
		if os.Getenv("AFXDP_TEST_MEMLOCK_HARD") != "" {
			r.Max = r.Cur
		}
		if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &r); err != nil {
			fmt.Println("setrlimit:", err)
			os.Exit(2)
		}
		// 256 frames of 2048 bytes: 512 KiB, above 64 KiB, below any usual hard limit.
		p, err := Open(ifname, Options{Frames: 256, FillRingSize: 128, TxRingSize: 128, CompletionRingSize: 128, RxRingSize: 128})
		if err == nil {
			fmt.Println("opened")
			p.Close()
		} else {
			fmt.Println(err)
		}
		os.Exit(0)
	}
	requireRoot(t)
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("needs setpriv (util-linux) to drop CAP_IPC_LOCK in a child")
	}
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &r); err != nil {
		t.Fatal(err)
	}
	if r.Max != unix.RLIM_INFINITY && r.Max < 1<<20 {
		t.Skipf("hard RLIMIT_MEMLOCK %d is below the 512 KiB UMEM this test opens", r.Max)
	}
	n := newTestNet(t, 1)
	for _, tc := range []struct {
		name, hard, want string
	}{
		{"soft 64 KiB", "", "opened"},
		{"hard 64 KiB", "1", "exceeds RLIMIT_MEMLOCK (65536 bytes); raise it (ulimit -l unlimited"},
	} {
		cmd := exec.Command(setpriv, "--bounding-set=-ipc_lock", "--inh-caps=-ipc_lock", "--",
			os.Args[0], "-test.run=^TestMemlock$", "-test.count=1")
		cmd.Env = append(os.Environ(), "AFXDP_TEST_MEMLOCK="+n.host, "AFXDP_TEST_MEMLOCK_HARD="+tc.hard)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: child: %v\n%s", tc.name, err, out)
		}
		t.Logf("%s: %s", tc.name, out)
		if !bytes.Contains(out, []byte(tc.want)) {
			t.Errorf("%s: %s; want %q", tc.name, out, tc.want)
		}
		if x, _ := queryXDP(n.hostIndex); x.mode != attachedNone {
			t.Errorf("%s: program %d left attached", tc.name, x.id)
		}
	}
}

// TestWait: Wait sleeps for its timeout when nothing arrives, returns at
// once when a frame is waiting, and wakes from ppoll when one arrives
// while it sleeps.
func TestWait(t *testing.T) {
	checkGoroutines(t)
	n := newTestNet(t, 1)
	p := openPort(t, n.host, Options{})
	raw := n.peerSocket(t, unix.AF_PACKET, unix.SOCK_RAW, 0)
	start := time.Now()
	if ok, err := p.Wait(int64(50 * time.Millisecond)); ok || err != nil {
		t.Fatalf("idle Wait = %v, %v; want false, nil", ok, err)
	}
	if el := time.Since(start); el < 45*time.Millisecond {
		t.Errorf("idle Wait(50 ms) returned after %v", el)
	}
	f := ethFrame(n.hostMAC, n.peerMAC, []byte("waiting"))
	n.peerSend(t, raw, f)
	if ok, err := p.Wait(int64(time.Second)); !ok || err != nil {
		t.Fatalf("Wait with a frame waiting = %v, %v; want true, nil", ok, err)
	}
	receiveFrames(t, p, 1, 2048, time.Second, false)

	done := make(chan error)
	go func() {
		time.Sleep(30 * time.Millisecond)
		done <- unix.Sendto(raw, f, 0, &unix.SockaddrLinklayer{Ifindex: n.peerIndex, Halen: 6})
	}()
	start = time.Now()
	ok, err := p.Wait(int64(2 * time.Second))
	el := time.Since(start)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !ok || err != nil || el > time.Second {
		t.Fatalf("Wait across an arrival = %v, %v after %v; want true within ~30 ms", ok, err, el)
	}
	if got := receiveFrames(t, p, 1, 2048, time.Second, false); len(got) != 1 || !bytes.Equal(got[0], f) {
		t.Fatalf("after Wait: received %d frames", len(got))
	}
}
