//go:build linux

package afxdp

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/packet"
)

// TestRxStampsOnVeth: with RxStamp on, a veth gets the device-bound
// program. Its kfunc answers 0 (veth has no hardware stamps), so every
// frame arrives with no stamp and is counted so, and the Port transmits
// through its socket, as a device-bound program needs: no live frames
// even for a batch far above LiveMin. The metadata is really written:
// the bytes in front of every frame are set to all-ones beforehand, and
// what the socket reads there is the program's 0.
func TestRxStampsOnVeth(t *testing.T) {
	checkGoroutines(t)
	n := newTestNet(t, 1)
	p := openPort(t, n.host, Options{RxStamp: RxStampOn, Transmit: TxAuto})
	info := p.Info()
	if !info.RxMetadata || info.PHC != -1 || info.Transmit != TxSocket || info.Attach != AttachNative {
		t.Fatalf("Info = %+v: want the device-bound program, no PHC, transmit forced to the socket, native attach", info)
	}
	if !slices.Contains(info.RxMetadataFeatures, "timestamp") {
		t.Fatalf("veth reports RX metadata %v, want timestamp among them (its kfunc exists)", info.RxMetadataFeatures)
	}
	if p.RxClock() != "" {
		t.Fatalf("RxClock = %q on a veth, want \"\"", p.RxClock())
	}
	mem := p.umem.mem
	for a := 0; a+p.umem.frameSize <= len(mem); a += p.umem.frameSize {
		binary.NativeEndian.PutUint64(mem[a+Headroom-rxMetaLen:], ^uint64(0))
	}

	raw := n.peerSocket(t, unix.AF_PACKET, unix.SOCK_RAW, 0)
	const frames = 40
	var sent [][]byte
	for range frames {
		sent = append(sent, ethFrame(n.hostMAC, n.peerMAC, randBytes(t, 100)))
	}
	n.peerSend(t, raw, sent...)

	// Below the conversion: what the program put in front of each frame.
	ds := newDescs(64, 2048)
	got := 0
	deadline := time.Now().Add(3 * time.Second)
	for got < frames && time.Now().Before(deadline) {
		k, err := p.socks[0].receive(ds)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds[:k] {
			if f := d.Frame(); len(f) >= 14 && binary.BigEndian.Uint16(f[12:]) == testEtherType {
				if d.RxTime != 0 {
					t.Fatalf("frame %d: stamp %#x in its metadata, want 0 (veth: no stamp)", got, d.RxTime)
				}
				got++
			}
		}
		if k == 0 {
			p.Wait(int64(time.Millisecond))
		}
	}
	if got != frames {
		t.Fatalf("received %d frames, want %d", got, frames)
	}

	// Through Receive: no stamp, counted as none.
	n.peerSend(t, raw, sent...)
	for _, f := range receiveFrames(t, p, frames, 2048, 3*time.Second, false) {
		_ = f
	}
	st := p.RxStamps()
	if st.Hardware != 0 || st.None < frames || st.NoRoom != 0 {
		t.Fatalf("RxStamps = %+v: want no hardware stamps and at least %d frames without", st, frames)
	}

	// Transmit a batch far above LiveMin: it must leave through the socket.
	pkt := n.peerPacketSocket(t)
	_ = pkt
	tx := newDescs(64, 2048)
	for i, d := range tx {
		d.Len = copy(d.Buf, ethFrame(n.peerMAC, n.hostMAC, randBytes(t, 60+i)))
	}
	sentTx := 0
	for sentTx < len(tx) && time.Now().Before(deadline.Add(3*time.Second)) {
		k, err := p.Transmit(tx[sentTx:])
		if err != nil {
			t.Fatal(err)
		}
		sentTx += k
	}
	if p.LiveFrames() != 0 || sentTx != len(tx) {
		t.Fatalf("sent %d frames, %d of them live; want %d, none live", sentTx, p.LiveFrames(), len(tx))
	}
}

// TestRxStampsAutoOnVeth: by default a veth (no PHC) keeps the plain
// program and its live-frames transmit.
func TestRxStampsAutoOnVeth(t *testing.T) {
	checkGoroutines(t)
	n := newTestNet(t, 1)
	p := openPort(t, n.host, Options{})
	if info := p.Info(); info.RxMetadata || info.PHC != -1 {
		t.Fatalf("Info = %+v: want the plain program on a veth", info)
	}
	if st := p.RxStamps(); st != (RxStampStats{}) {
		t.Fatalf("RxStamps = %+v without the stamping program", st)
	}
}

// TestRawRxStampsNeedAPHC: with RxStampRaw, stamps stay as the device
// gave them, but only against a PHC that names their clock: a device
// without one (veth) gives stamps of no clock, and Receive zeroes them
// and counts them as none rather than hand a sink numbers it would take
// for a PHC's.
func TestRawRxStampsNeedAPHC(t *testing.T) {
	r := &rxStamps{raw: true}
	ds := []*packet.Desc{{RxTime: 1_000_000}, {RxTime: 0}}
	r.convert(ds)
	if ds[0].RxTime != 0 || ds[1].RxTime != 0 || r.stamped.Load() != 0 || r.unstamp.Load() != 2 {
		t.Errorf("RxTime %d, %d; stamped %d, none %d: want both zeroed and counted as none",
			ds[0].RxTime, ds[1].RxTime, r.stamped.Load(), r.unstamp.Load())
	}
}
