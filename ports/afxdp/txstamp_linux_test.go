//go:build linux

package afxdp

import (
	"testing"
	"time"
)

// TestTxStampsOnVeth: with TxStamps, every frame a veth Port transmits
// comes back on the completion ring with the kernel's stamp (copy mode:
// CLOCK_TAI in the skb destructor), which, put on CLOCK_MONOTONIC, falls
// after the frame went on the TX ring and within a second of it; and the
// Port transmits through its socket, never as live frames.
func TestTxStampsOnVeth(t *testing.T) {
	checkGoroutines(t)
	n := newTestNet(t, 1)
	p := openPort(t, n.host, Options{TxStamps: true})
	if info := p.Info(); !info.TxMetadata || info.Transmit != TxSocket {
		t.Fatalf("Info = %+v: want TX metadata and the socket", info)
	}
	const frames = 200
	tx := newDescs(64, 2048)
	sent := 0
	deadline := time.Now().Add(5 * time.Second)
	for sent < frames && time.Now().Before(deadline) {
		k := min(len(tx), frames-sent)
		for i, d := range tx[:k] {
			d.Len = copy(d.Buf, ethFrame(n.peerMAC, n.hostMAC, randBytes(t, 100+i)))
		}
		m, err := p.Transmit(tx[:k])
		if err != nil {
			t.Fatal(err)
		}
		sent += m
	}
	var st TxStampStats
	for time.Now().Before(deadline) {
		if _, err := p.Transmit(nil); err != nil {
			t.Fatal(err)
		}
		if st = p.TxStamps(); st.Stamped+st.Missing >= frames {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if sent != frames || st.Stamped != frames || st.Missing != 0 {
		t.Fatalf("sent %d, stamps %+v: want every one of %d frames stamped", sent, st, frames)
	}
	if st.MeanLatency <= 0 || st.MaxLatency < st.MeanLatency || st.MaxLatency > time.Second {
		t.Fatalf("latency mean %v, max %v: want 0 < mean ≤ max < 1 s", st.MeanLatency, st.MaxLatency)
	}
	if p.LiveFrames() != 0 {
		t.Fatalf("%d live frames with TxStamps", p.LiveFrames())
	}
	t.Logf("completion stamps: %+v", st)
}
