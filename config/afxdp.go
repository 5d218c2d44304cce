package config

import (
	"fmt"
	"slices"

	"github.com/ecnswitch/ecnswitch/ports/afxdp"
)

// maxRxQueue bounds the RX queue numbers a port may list; the kernel
// checks them against the interface's queue count when a port opens.
const maxRxQueue = 1 << 16

// afxdp checks port i's AF_XDP options: the file's afxdp section, merged
// with port_defaults and the port's own.
func (c *checker) afxdp(i int, y *afxdpYAML, frameSize int) afxdp.Options {
	k := func(sub string) string { return c.portKey(i, "afxdp."+sub) }
	var o afxdp.Options
	switch c.oneOf(k("mode"), y.Mode, "auto", "auto", "native", "generic") {
	case "native":
		o.Attach = afxdp.AttachNative
	case "generic":
		o.Attach = afxdp.AttachGeneric
	}
	switch c.oneOf(k("zerocopy"), y.ZeroCopy, "auto", "auto", "on", "off") {
	case "on":
		o.ZeroCopy = afxdp.ZeroCopyOn
	case "off":
		o.ZeroCopy = afxdp.ZeroCopyOff
	}
	if o.ZeroCopy == afxdp.ZeroCopyOn && o.Attach == afxdp.AttachGeneric {
		c.errf(k("zerocopy"), "\"on\" with mode generic; zero-copy needs the program attached natively (mode native or auto)")
	}
	seen := map[int]bool{}
	for j, q := range y.Queues {
		key := fmt.Sprintf("%s[%d]", k("queues"), j)
		if q < 0 || q > maxRxQueue {
			c.errf(key, "%d outside [0, %d] (and below the interface's RX queue count)", q, maxRxQueue)
		} else if seen[q] {
			c.errf(key, "queue %d listed twice", q)
		}
		seen[q] = true
	}
	o.Queues = slices.Clone(y.Queues)
	o.FrameSize = afxdp.DefaultFrameSize
	if y.FrameSize != nil {
		if *y.FrameSize != afxdp.DefaultFrameSize && *y.FrameSize != afxdp.MaxFrameSize {
			c.errf(k("frame_size"), "%d is not %d or %d", *y.FrameSize, afxdp.DefaultFrameSize, afxdp.MaxFrameSize)
		} else {
			o.FrameSize = *y.FrameSize
		}
	}
	if u := afxdp.UsableFrame(o.FrameSize); frameSize < u {
		c.errf(k("frame_size"), "%d gives %d-byte frames (frame_size − %d headroom), more than the switch's frame_size %d holds; raise frame_size to at least %d",
			o.FrameSize, u, afxdp.Headroom, frameSize, u)
	}
	o.FillRingSize = c.pow2In(k("fill_ring"), y.FillRing, afxdp.DefaultRingSize, afxdp.MinRingSize, afxdp.MaxRingSize)
	o.CompletionRingSize = c.pow2In(k("completion_ring"), y.CompletionRing, afxdp.DefaultRingSize, afxdp.MinRingSize, afxdp.MaxRingSize)
	o.RxRingSize = c.pow2In(k("rx_ring"), y.RxRing, afxdp.DefaultRingSize, afxdp.MinRingSize, afxdp.MaxRingSize)
	o.TxRingSize = c.pow2In(k("tx_ring"), y.TxRing, afxdp.DefaultRingSize, afxdp.MinRingSize, afxdp.MaxRingSize)
	// A relation between two keys is reported at the one written, so that
	// raising tx_ring alone points at tx_ring, not at a default.
	if o.CompletionRingSize < o.TxRingSize {
		if y.CompletionRing == nil {
			c.errf(k("tx_ring"), "%d above completion_ring %d (the default); raise completion_ring to at least tx_ring, or TX stalls on a full completion ring", o.TxRingSize, o.CompletionRingSize)
		} else {
			c.errf(k("completion_ring"), "%d below tx_ring %d; want completion_ring ≥ tx_ring, or TX stalls on a full completion ring", o.CompletionRingSize, o.TxRingSize)
		}
	}
	o.Frames = c.pow2In(k("frames"), y.Frames, afxdp.DefaultFrames, afxdp.MinFrames, afxdp.MaxFrames)
	if need := o.FillRingSize + o.TxRingSize; o.Frames < need {
		key := k("frames")
		if y.Frames == nil {
			key = k("tx_ring")
			if y.FillRing != nil {
				key = k("fill_ring")
			}
		}
		c.errf(key, "fill_ring + tx_ring = %d exceed frames %d; want at least that many UMEM frames (raise frames)", need, o.Frames)
	}
	o.TxBudget = min(afxdp.DefaultTxBudget, o.TxRingSize)
	if y.TxBudget != nil {
		if b := *y.TxBudget; b < afxdp.MinTxBudget || b > o.TxRingSize {
			c.errf(k("tx_budget"), "%d outside [%d, %d] (tx_ring)", b, afxdp.MinTxBudget, o.TxRingSize)
		} else {
			o.TxBudget = b
		}
	}
	switch c.oneOf(k("transmit"), y.Transmit, "auto", "auto", "socket", "xdp") {
	case "socket":
		o.Transmit = afxdp.TxSocket
	case "xdp":
		o.Transmit = afxdp.TxXDP
	}
	o.LiveMin = c.intIn(k("live_min"), y.LiveMin, afxdp.DefaultLiveMin, 1, afxdp.MaxLiveMin)
	switch c.oneOf(k("rx_timestamp"), y.RxTimestamp, "auto", "auto", "on", "off") {
	case "on":
		o.RxStamp = afxdp.RxStampOn
		if o.Attach == afxdp.AttachGeneric {
			c.errf(k("rx_timestamp"), "\"on\" with mode generic; the device-bound program that reads hardware stamps attaches natively (mode native or auto)")
		}
		if o.Transmit == afxdp.TxXDP {
			c.errf(k("rx_timestamp"), "\"on\" with transmit xdp; BPF_PROG_RUN cannot run the device-bound program hardware stamps need (transmit auto or socket)")
		}
	case "off":
		o.RxStamp = afxdp.RxStampOff
	}
	if c.oneOf(k("tx_timestamp"), y.TxTimestamp, "off", "off", "on") == "on" {
		o.TxStamps = true
		if o.Transmit == afxdp.TxXDP {
			c.errf(k("tx_timestamp"), "\"on\" with transmit xdp; live frames have no completion to stamp (transmit auto or socket)")
		}
	}
	o.TxHash, o.Force = y.TxHash, y.Force
	return o
}
