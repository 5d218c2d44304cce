//go:build linux

package afxdp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/packet"
)

// setPeerGRO turns GRO on or off on the peer end, which on veth decides
// whether the host end can take redirected frames (ndo_xdp_xmit).
func (n *testNet) setPeerGRO(tb testing.TB, on bool) {
	tb.Helper()
	inNS(tb, n.ns, func() error { return setGRO(n.peer, on) })
}

// newUMEM returns a UMEM closed in tb.Cleanup, after the Ports on it
// (cleanups run last-registered first, so open Ports after this).
func newUMEM(tb testing.TB, frames int) *UMEM {
	tb.Helper()
	u, err := NewUMEM(frames, DefaultFrameSize)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := u.Close(); err != nil {
			tb.Error(err)
		}
	})
	return u
}

// umemDescs returns descriptors holding n frames of u, as the dataplane's
// arena does.
func umemDescs(tb testing.TB, u *UMEM, n int) []*packet.Desc {
	tb.Helper()
	bufs, err := u.Frames(n)
	if err != nil {
		tb.Fatal(err)
	}
	ds := make([]*packet.Desc, n)
	for i := range ds {
		ds[i] = &packet.Desc{Buf: bufs[i]}
	}
	return ds
}

// recvAll reads want frames from an AF_PACKET socket, in order.
func recvAll(tb testing.TB, fd int, want [][]byte) {
	tb.Helper()
	buf := make([]byte, 4096)
	for i, w := range want {
		m, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			tb.Fatalf("frame %d of %d: %v", i, len(want), err)
		}
		if !bytes.Equal(buf[:m], w) {
			tb.Fatalf("frame %d: got %d bytes %x…, want %d bytes %x…", i, m, buf[:min(m, 24)], len(w), w[:24])
		}
	}
}

// TestLiveTransmitArrives: with the peer able to take redirected frames,
// Transmit sends batches as XDP live frames, byte for byte and in order,
// whether a frame lies in the Port's UMEM (sent from where it is) or in a
// buffer of the caller's (copied into a scratch frame first); the caller
// keeps its UMEM frames.
func TestLiveTransmitArrives(t *testing.T) {
	checkGoroutines(t)
	n := newTestNet(t, 1)
	n.setPeerGRO(t, true)
	u := newUMEM(t, DefaultFrames+txqLen+64)
	p := openPort(t, n.host, Options{UMEM: u, Transmit: TxXDP})
	if got := p.Info().Transmit; got != TxXDP {
		t.Fatalf("Info().Transmit = %v, want xdp", got)
	}
	pkt := n.peerPacketSocket(t)

	own := umemDescs(t, u, 32)
	heap := newDescs(32, 2048)
	var want [][]byte
	var batch []*packet.Desc
	const total = 2000
	for i := 0; i < total; i++ {
		d := own[i%32]
		if i%3 == 0 {
			d = heap[i%32]
		}
		size := 60 + int(binary.LittleEndian.Uint16(randBytes(t, 2)))%(1514-60+1)
		f := ethFrame(n.peerMAC, n.hostMAC, randBytes(t, size-14))
		d.Len = copy(d.Buf, f)
		want = append(want, f)
		batch = append(batch, d)
		if len(batch) == 32 || i == total-1 {
			before := make([][]byte, len(batch))
			for j, d := range batch {
				before[j] = d.Buf
			}
			if k, err := p.Transmit(batch); err != nil || k != len(batch) {
				t.Fatalf("Transmit(%d frames) = %d, %v", len(batch), k, err)
			}
			for j, d := range batch {
				if &d.Buf[0] != &before[j][0] {
					t.Fatalf("live Transmit swapped descriptor %d's frame; the caller keeps it", j)
				}
			}
			batch = batch[:0]
			// Receive as we go: the peer's socket buffer is large, but not endless.
			recvAll(t, pkt, want)
			want = want[:0]
		}
	}
	st := p.Stats()
	if st.TxPackets != total || st.TxCompleted+st.TxErrors != total || st.TxErrors != 0 {
		t.Errorf("Stats = %+v, want %d sent and completed, no errors", st, total)
	}
	if got, wantCopied := p.live.copied.Load(), uint64((total+2)/3); got != wantCopied {
		t.Errorf("%d frames copied into scratch frames, want %d (the heap ones only)", got, wantCopied)
	}
	if a := p.Frames(); a.Violations != 0 {
		t.Errorf("frame account %+v: violations", a)
	}
}

// TestTransmitPathFollowsPeer: with TxAuto a Port transmits through its
// socket while the veth peer cannot take redirected frames, switches to
// live frames once it can (GRO on at the peer), and back; TxXDP refuses to
// open without the capability and says how to get it.
func TestTransmitPathFollowsPeer(t *testing.T) {
	checkGoroutines(t)
	n := newTestNet(t, 1)
	if _, err := Open(n.host, Options{Transmit: TxXDP}); !errors.Is(err, ErrNotSupported) ||
		!strings.Contains(err.Error(), "gro on") {
		t.Fatalf("Open with TxXDP and a peer without GRO = %v, want ErrNotSupported naming GRO", err)
	}
	p := openPort(t, n.host, Options{})
	if got := p.Info().Transmit; got != TxSocket {
		t.Fatalf("Info().Transmit = %v, want socket while the peer has no GRO", got)
	}
	pkt := n.peerPacketSocket(t)
	send := func(path TxPath) {
		t.Helper()
		ds := newDescs(DefaultLiveMin, 2048)
		var want [][]byte
		for _, d := range ds {
			f := ethFrame(n.peerMAC, n.hostMAC, randBytes(t, 100))
			d.Len = copy(d.Buf, f)
			want = append(want, f)
		}
		live := p.live.frames.Load()
		if k, err := p.Transmit(ds); k != len(ds) || err != nil {
			t.Fatalf("Transmit = %d, %v", k, err)
		}
		recvAll(t, pkt, want)
		if sentLive := p.live.frames.Load() - live; (path == TxXDP) != (sentLive == uint64(len(ds))) {
			t.Fatalf("path %v: %d of %d frames went out as live frames", path, sentLive, len(ds))
		}
	}
	send(TxSocket)
	n.setPeerGRO(t, true)
	waitFor(t, "the switch to live frames", func() bool { return p.txPath() == TxXDP })
	send(TxXDP)
	n.setPeerThreadedNAPI(t, true)
	waitFor(t, "the socket while the peer's NAPI is a thread", func() bool { return p.txPath() == TxSocket })
	send(TxSocket)
	n.setPeerThreadedNAPI(t, false)
	waitFor(t, "live frames again with the peer's NAPI in softirq", func() bool { return p.txPath() == TxXDP })
	send(TxXDP)
	n.setPeerGRO(t, false)
	waitFor(t, "the switch back to the socket", func() bool { return p.txPath() == TxSocket })
	send(TxSocket)
}

// setPeerThreadedNAPI has the peer's NAPI polled by kernel threads (on) or
// in softirq (off), through its sysfs attribute in the peer's namespace.
func (n *testNet) setPeerThreadedNAPI(tb testing.TB, on bool) {
	tb.Helper()
	v := map[bool]string{false: "0", true: "1"}[on]
	cmd := exec.Command("ip", "netns", "exec", n.nsName, "sh", "-c", "echo "+v+" > /sys/class/net/"+n.peer+"/threaded")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("%v: %v: %s", cmd, err, out)
	}
}

// TestSharedUMEMForwards: two Ports on one UMEM forward frames from one
// veth to another the way the dataplane does — Receive into descriptors
// holding UMEM frames, Transmit the same descriptors — with no copy in
// user space on either path (socket or live frames), every frame intact,
// and every socket's reserve whole afterwards.
func TestSharedUMEMForwards(t *testing.T) {
	for _, live := range []bool{false, true} {
		name := "socket"
		if live {
			name = "live"
		}
		t.Run(name, func(t *testing.T) {
			checkGoroutines(t)
			a, b := newTestNet(t, 1), newTestNet(t, 1)
			b.setPeerGRO(t, live)
			u := newUMEM(t, 2*DefaultFrames+2*txqLen+64)
			pa := openPort(t, a.host, Options{UMEM: u})
			pb := openPort(t, b.host, Options{UMEM: u})
			if !pb.Info().SharedUMEM || pb.socks[0].shared != true {
				t.Fatalf("second Port did not share the UMEM: %+v", pb.Info())
			}
			if want := map[bool]TxPath{false: TxSocket, true: TxXDP}[live]; pb.Info().Transmit != want {
				t.Fatalf("transmit path %v, want %v", pb.Info().Transmit, want)
			}
			in := a.peerPacketSocket(t)
			out := b.peerPacketSocket(t)
			ds := umemDescs(t, u, 64)

			const total = 3000
			var want [][]byte
			for i := 0; i < total; i++ {
				f := ethFrame(b.peerMAC, b.hostMAC, randBytes(t, 46+i%1400))
				want = append(want, f)
			}
			sent, got := 0, 0
			deadline := time.Now().Add(10 * time.Second)
			for got < total && time.Now().Before(deadline) {
				for ; sent < total && sent-got < 128; sent++ {
					a.peerSend(t, in, want[sent])
				}
				k, err := pa.Receive(ds)
				if err != nil {
					t.Fatal(err)
				}
				for done := 0; done < k; {
					m, err := pb.Transmit(ds[done:k])
					if err != nil {
						t.Fatal(err)
					}
					done += m
				}
				got += k
				if k == 0 {
					pa.Wait(int64(time.Millisecond))
				}
			}
			if got != total {
				t.Fatalf("forwarded %d of %d frames", got, total)
			}
			recvAll(t, out, want)

			if q, _ := pa.QueueStats(); q[0].RxCopied != 0 {
				t.Errorf("%d received frames were copied, want all exchanged", q[0].RxCopied)
			}
			if q, _ := pb.QueueStats(); q[0].TxCopied != 0 || pb.live.copied.Load() != 0 {
				t.Errorf("%d + %d transmitted frames were copied, want none", q[0].TxCopied, pb.live.copied.Load())
			}
			waitFor(t, "completions", func() bool { pb.Transmit(nil); return pb.Frames().Tx+pb.Frames().Completion == 0 })
			for _, p := range []*Port{pa, pb} {
				if f := p.Frames(); f.Free+f.Fill+f.Rx+f.Tx+f.Completion != f.Total || f.Violations != 0 {
					t.Errorf("%s frame account %+v: want every frame of the reserve back, no violations", p.Name(), f)
				}
			}
			held := map[uint64]bool{}
			for _, d := range ds {
				c, ok := u.chunk(d.Buf)
				if !ok || u.state[c>>u.shift] != frameFree || held[c] {
					t.Fatalf("descriptor frame %#x: in UMEM %v, state %d, held twice %v", c, ok, u.state[c>>u.shift], held[c])
				}
				held[c] = true
			}
		})
	}
}

// TestLiveTransmitFromAnotherNamespace: live frames name the device by its
// index in the calling thread's namespace, so a Transmit from a thread in
// another namespace (a load generator that opened its port inside a host's
// namespace, say) must take the socket — and every frame must arrive.
func TestLiveTransmitFromAnotherNamespace(t *testing.T) {
	checkGoroutines(t)
	n := newTestNet(t, 1)
	n.setPeerGRO(t, true)
	p := openPort(t, n.host, Options{Transmit: TxXDP})
	pkt := n.peerPacketSocket(t)
	ds := newDescs(DefaultLiveMin, 2048)
	var want [][]byte
	for _, d := range ds {
		f := ethFrame(n.peerMAC, n.hostMAC, randBytes(t, 200))
		d.Len = copy(d.Buf, f)
		want = append(want, f)
	}
	inNS(t, n.ns, func() error { // the peer's namespace, where the Port's ifindex names another device or none
		k, err := p.Transmit(ds)
		if k != len(ds) || err != nil {
			t.Errorf("Transmit = %d, %v", k, err)
		}
		return nil
	})
	recvAll(t, pkt, want)
	if p.live.frames.Load() != 0 || p.live.wrongNS.Load() != 1 {
		t.Errorf("%d live frames, %d batches diverted: want the batch through the socket", p.live.frames.Load(), p.live.wrongNS.Load())
	}
}

// TestLiveBurstAccounted: a long burst of live frames, sent as fast as
// Transmit takes them, is either received by the peer or counted as
// refused by the device (veth's xdp_xmit_errors when its peer's ring is
// full): Stats().TxErrors, never lost unseen.
func TestLiveBurstAccounted(t *testing.T) {
	checkGoroutines(t)
	n := newTestNet(t, 1)
	n.setPeerGRO(t, true)
	p := openPort(t, n.host, Options{Transmit: TxXDP})
	before := n.peerRxPackets(t)
	ds := newDescs(MaxLiveMin, 2048)
	for _, d := range ds {
		d.Len = copy(d.Buf, ethFrame(n.peerMAC, n.hostMAC, make([]byte, 50)))
	}
	const total = 200 * MaxLiveMin
	for sent := 0; sent < total; {
		k, err := p.Transmit(ds[:min(len(ds), total-sent)])
		if err != nil {
			t.Fatal(err)
		}
		sent += k
	}
	st := p.Stats()
	waitFor(t, "the peer to count what it received", func() bool { return n.peerRxPackets(t)-before+p.Stats().TxErrors >= total })
	got, refused := n.peerRxPackets(t)-before, p.Stats().TxErrors
	t.Logf("%d frames: %d received, %d refused by the device", total, got, refused)
	if got+refused != total || st.TxPackets != total || p.LiveFrames() != total || st.LiveFrames != total {
		t.Errorf("%d sent (%d live): peer received %d, device refused %d; want the two to add up", st.TxPackets, p.LiveFrames(), got, refused)
	}
}

// TestLiveRefusalsFallBackToSocket: when the device refuses live frames
// (here a veth peer whose NAPI is a thread pinned to the sender's CPU, so
// its ring drains only when the sender yields), the Port counts them as
// TX errors and takes the socket, which pushes back instead of dropping,
// until the back-off ends: every frame is received or counted as dropped
// by the device (the socket path drops too, in veth's transmit, when the
// ring is full), no frame goes live between the first refusal and the end
// of the back-off, and live frames resume after it.
//
// When the peer's ring first overflows depends on the scheduler, so the
// burst runs until it has (bounded); the back-off runs on the live
// path's clock, which the test holds still and then moves past the end.
func TestLiveRefusalsFallBackToSocket(t *testing.T) {
	checkGoroutines(t)
	n := newTestNet(t, 1)
	n.setPeerGRO(t, true)
	if out, err := exec.Command("ip", "netns", "exec", n.nsName, "sh", "-c",
		"echo 1 > /sys/class/net/"+n.peer+"/threaded").CombinedOutput(); err != nil {
		t.Fatalf("threaded NAPI on the peer: %v: %s", err, out)
	}
	var napiPID string
	for _, line := range strings.Split(run(t, "ps", "-eo", "pid=,comm="), "\n") {
		if f := strings.Fields(line); len(f) == 2 && strings.HasPrefix(f[1], "napi/"+n.peer) {
			napiPID = f[0]
		}
	}
	if napiPID == "" {
		t.Fatal("no napi/" + n.peer + " thread")
	}
	run(t, "taskset", "-pc", "0", napiPID)
	p := openPort(t, n.host, Options{Transmit: TxXDP})
	if p.live.ref == nil {
		t.Fatal("veth keeps xdp_xmit_errors, yet the Port found no refusal counter")
	}
	clock := time.Unix(1_000_000, 0) // the live path's time; only the sender's goroutine moves it
	p.live.now = func() time.Time { return clock }
	before := n.peerRxPackets(t)
	ds := newDescs(MaxLiveMin, 2048)
	for _, d := range ds {
		d.Len = copy(d.Buf, ethFrame(n.peerMAC, n.hostMAC, make([]byte, 50)))
	}
	const (
		maxBurst = 4000 * MaxLiveMin // frames to wait for the first refusal
		backoff  = 100 * MaxLiveMin  // frames sent during the back-off
	)
	var (
		sent             int
		liveAtFallback   uint64    // live frames sent when the Port first fell back
		liveBeforeResume uint64    // and when the back-off ended
		refusedAt        time.Time // the first refusal, on the live path's clock
		offUntil         time.Time // and the end of its back-off
	)
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		var set unix.CPUSet
		set.Set(0)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			done <- err
			return
		}
		send := func(ds []*packet.Desc) error {
			k, err := p.Transmit(ds)
			sent += k
			return err
		}
		for sent < maxBurst && p.live.fallbacks.Load() == 0 {
			if err := send(ds); err != nil {
				done <- err
				return
			}
		}
		if p.live.fallbacks.Load() == 0 {
			done <- nil
			return
		}
		liveAtFallback, refusedAt, offUntil = p.LiveFrames(), p.live.lastRefus, p.live.offUntil
		clock = offUntil.Add(-time.Nanosecond) // the last instant of the back-off
		for end := sent + backoff; sent < end; {
			if err := send(ds[:min(len(ds), end-sent)]); err != nil {
				done <- err
				return
			}
		}
		for p.Pending() {
			p.Transmit(nil)
		}
		liveBeforeResume = p.LiveFrames()
		clock = offUntil.Add(time.Nanosecond)
		for k := 0; k < len(ds); {
			m, err := p.Transmit(ds[k:])
			if err != nil {
				done <- err
				return
			}
			k += m
			sent += m
		}
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if p.live.fallbacks.Load() == 0 {
		t.Fatalf("no refusal in %d frames (dropped %d): the setup did not overflow the peer's ring", sent, p.Stats().TxErrors)
	}
	waitFor(t, "the peer to count what it received", func() bool { return n.peerRxPackets(t)-before+p.Stats().TxErrors >= uint64(sent) })
	got, refused := n.peerRxPackets(t)-before, p.Stats().TxErrors
	t.Logf("%d frames: %d live (%d before the fallback), %d through the socket; %d received, %d dropped by the device, %d fallbacks",
		sent, p.LiveFrames(), liveAtFallback, sent-int(p.LiveFrames()), got, refused, p.live.fallbacks.Load())
	if got+refused != uint64(sent) {
		t.Errorf("received %d + dropped %d != sent %d: frames lost unseen", got, refused, sent)
	}
	if st := p.Stats(); st.LiveFallbacks != p.live.fallbacks.Load() || st.LiveFrames != p.LiveFrames() {
		t.Errorf("Stats: %d live frames, %d fallbacks; want %d and %d", st.LiveFrames, st.LiveFallbacks, p.LiveFrames(), p.live.fallbacks.Load())
	}
	if d := offUntil.Sub(refusedAt); d != minBackoff {
		t.Errorf("first back-off %v, want %v", d, minBackoff)
	}
	if liveBeforeResume != liveAtFallback {
		t.Errorf("%d frames sent live during the back-off: the Port kept sending live frames into a device that refuses them",
			liveBeforeResume-liveAtFallback)
	}
	if p.LiveFrames() == liveBeforeResume {
		t.Errorf("no live frame after the back-off ended: live frames did not resume")
	}
}

// run runs a command and returns its trimmed output, failing tb on error.
func run(tb testing.TB, name string, args ...string) string {
	tb.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		tb.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestAutoLiveOnlyOnVeth: TxAuto prepares live frames on a veth, and on
// another device whose driver could take them (a tap: tun has
// ndo_xdp_xmit) keeps to the socket, since there the frames are freed
// after the call returns; TxXDP still asks for them there.
func TestAutoLiveOnlyOnVeth(t *testing.T) {
	checkGoroutines(t)
	n := newTestNet(t, 1)
	n.setPeerGRO(t, true)
	if p := openPort(t, n.host, Options{}); p.live == nil {
		t.Fatal("TxAuto on a veth: no live frames")
	}

	tap := "exd" + randHex(t, 3) + "t"
	if err := netlink.LinkAdd(&netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Name: tap}, Mode: netlink.TUNTAP_MODE_TAP}); err != nil {
		t.Fatalf("add tap %s: %v", tap, err)
	}
	l, err := netlink.LinkByName(tap)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = netlink.LinkDel(l) })
	if err := netlink.LinkSetUp(l); err != nil {
		t.Fatal(err)
	}
	p := openPort(t, tap, Options{})
	if p.live != nil || p.Info().Transmit != TxSocket {
		t.Fatalf("TxAuto on a tap: live frames prepared (%v), transmit %v; want the socket alone", p.live != nil, p.Info().Transmit)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Open(tap, Options{Transmit: TxXDP})
	if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "link is down") {
		t.Fatalf("TxXDP on a tap without carrier: %v; want it refused for the link", err)
	}
}
