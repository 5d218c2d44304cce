//go:build linux

package afxdp

import (
	"encoding/binary"
	"errors"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/timestamp"
)

// XSK TX metadata (Documentation/networking/xsk-tx-metadata.rst, Linux
// 6.8+): with tx_metadata_len registered on the UMEM, a TX descriptor
// flagged XDP_TX_METADATA has union xsk_tx_metadata in the 24 bytes in
// front of its frame. The request's flags ask for a completion stamp
// (XDP_TXMD_FLAGS_TIMESTAMP); when the address comes back on the
// completion ring the kernel has written the stamp into the same place,
// at offset 8. A driver with xsk_tx_metadata_ops stamps in hardware; in
// copy mode (veth) the stamp is the kernel's CLOCK_TAI in the skb
// destructor, a software stamp of when the device let go of the frame.
const (
	xskTxMetaLen  = 24 // sizeof(union xsk_tx_metadata)
	xskTxStampOff = 8  // completion.tx_timestamp
	taiResync     = time.Second
)

// txStamps pairs each stamped frame's completion stamp with when
// Transmit put it on the TX ring: the device's transmit latency.
type txStamps struct {
	clock  *timestamp.Monotonic
	at     []int64 // by UMEM frame index: CLOCK_MONOTONIC when put on the TX ring
	now    int64   // CLOCK_MONOTONIC of the current Transmit
	taiOff int64   // CLOCK_TAI − CLOCK_MONOTONIC
	resync int64   // when to measure taiOff again

	stamped, missing atomic.Uint64
	latSum, latMax   atomic.Int64 // ns
}

func newTxStamps(frames int) *txStamps {
	return &txStamps{clock: timestamp.NewMonotonic(), at: make([]int64, frames)}
}

// begin reads the time once for a Transmit call.
func (t *txStamps) begin() {
	t.now = t.clock.Now() + t.clock.Origin()
	if t.now >= t.resync {
		if off, _, err := timestamp.OffsetTo(unix.CLOCK_TAI); err == nil {
			t.taiOff = off
		}
		t.resync = t.now + int64(taiResync)
	}
}

// request asks for frame fi's completion stamp: the metadata in front of
// its data at addr, and the time it goes on the ring.
func (t *txStamps) request(mem []byte, addr uint64, fi int) {
	m := mem[addr-xskTxMetaLen : addr]
	binary.NativeEndian.PutUint64(m, unix.XDP_TXMD_FLAGS_TIMESTAMP)
	binary.NativeEndian.PutUint64(m[xskTxStampOff:], 0)
	t.at[fi] = t.now
}

// complete reads frame fi's completion stamp at addr.
func (t *txStamps) complete(mem []byte, addr uint64, fi int) {
	ts := int64(binary.NativeEndian.Uint64(mem[addr-xskTxMetaLen+xskTxStampOff:]))
	if ts == 0 || t.at[fi] == 0 {
		t.missing.Add(1)
		return
	}
	lat := ts - t.taiOff - t.at[fi]
	t.at[fi] = 0
	t.stamped.Add(1)
	t.latSum.Add(lat)
	for {
		m := t.latMax.Load()
		if lat <= m || t.latMax.CompareAndSwap(m, lat) {
			break
		}
	}
}

// TxStamps returns the Port's completion-stamp counters; all zero
// without Options.TxStamps.
func (p *Port) TxStamps() TxStampStats {
	t := p.txStamps
	if t == nil {
		return TxStampStats{}
	}
	st := TxStampStats{Stamped: t.stamped.Load(), Missing: t.missing.Load(), MaxLatency: time.Duration(t.latMax.Load())}
	if st.Stamped > 0 {
		st.MeanLatency = time.Duration(t.latSum.Load() / int64(st.Stamped))
	}
	return st
}

// TxCompletions returns TxStamps' count and latencies in ns
// (ports.TxStamper).
func (p *Port) TxCompletions() (stamped uint64, meanNS, maxNS int64) {
	st := p.TxStamps()
	return st.Stamped, int64(st.MeanLatency), int64(st.MaxLatency)
}

// registerWithTxMeta registers the UMEM with tx_metadata_len, with the
// XDP_UMEM_TX_METADATA_LEN flag (Linux 6.11+) and then without (6.8–6.10),
// and reports whether it took; without, it registers plainly.
func registerWithTxMeta(fd int, mem []byte, frameSize int) (bool, error) {
	for _, flags := range []uint32{unix.XDP_UMEM_TX_METADATA_LEN, 0} {
		err := registerUMEMMeta(fd, mem, frameSize, flags, xskTxMetaLen)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, unix.EINVAL) {
			return false, err
		}
	}
	return false, registerUMEM(fd, mem, frameSize)
}

// setupTxStamps turns completion stamps on for the Port's sockets when
// Options.TxStamps asked and the UMEM took TX metadata, and then
// transmits through the sockets.
func (p *Port) setupTxStamps(o *Options) {
	if !o.TxStamps {
		return
	}
	p.umem.mu.Lock()
	ok := p.umem.txMeta
	p.umem.mu.Unlock()
	if !ok {
		p.log.Warn("no TX completion stamps: the UMEM was registered without XSK TX metadata " +
			"(a kernel before 6.8, or another Port registered the shared UMEM first without TxStamps)")
		return
	}
	p.txStamps = newTxStamps(len(p.umem.state))
	for _, s := range p.socks {
		s.txst = p.txStamps
	}
	if o.Transmit != TxSocket {
		p.log.Info("transmitting through the socket: TX completion stamps need the socket's completion ring; live frames are off")
		o.Transmit = TxSocket
	}
}
