package afxdp

import (
	"strings"
	"testing"
)

func TestOptionsDefaults(t *testing.T) {
	o := Options{}.withDefaults()
	if o.Frames != 4096 || o.FrameSize != 2048 || o.FillRingSize != 2048 || o.CompletionRingSize != 2048 ||
		o.RxRingSize != 2048 || o.TxRingSize != 2048 || o.TxBudget != 256 || o.Logger == nil ||
		o.Attach != AttachAuto || o.ZeroCopy != ZeroCopyAuto {
		t.Fatalf("defaults = %+v", o)
	}
	if err := (Options{}).Validate(); err != nil {
		t.Fatalf("zero Options: %v", err)
	}
	// A small TX ring pulls the default budget down with it.
	if o := (Options{TxRingSize: 64, CompletionRingSize: 64}).withDefaults(); o.TxBudget != 64 {
		t.Errorf("TxBudget with a 64-slot TX ring = %d, want 64", o.TxBudget)
	}
	if UsableFrame(2048) != 1792 || UsableFrame(4096) != 3840 {
		t.Errorf("UsableFrame = %d, %d; want 1792, 3840 (frame − XDP_PACKET_HEADROOM)", UsableFrame(2048), UsableFrame(4096))
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string // substring of the error naming knob, value and range
	}{
		{"frame size", Options{FrameSize: 3000}, "FrameSize = 3000: must be 2048 or 4096"},
		{"rx stamp mode", Options{RxStamp: 7}, "RxStamp = 7: must be RxStampAuto, RxStampOff or RxStampOn"},
		{"rx stamp generic", Options{RxStamp: RxStampOn, Attach: AttachGeneric}, "RxStamp = on with Attach = generic"},
		{"rx stamp live frames", Options{RxStamp: RxStampOn, Transmit: TxXDP}, "RxStamp = on with Transmit = xdp"},
		{"raw rx stamps without stamps", Options{RxStamp: RxStampOff, RxStampRaw: true}, "RxStampRaw with RxStamp = off"},
		{"tx stamps live frames", Options{TxStamps: true, Transmit: TxXDP}, "TxStamps with Transmit = xdp"},
		{"frame size 8192", Options{FrameSize: 8192}, "FrameSize = 8192"},
		{"fill not pow2", Options{FillRingSize: 1000}, "FillRingSize = 1000: must be a power of two in [64, 65536]"},
		{"rx too small", Options{RxRingSize: 32}, "RxRingSize = 32"},
		{"tx too big", Options{TxRingSize: 1 << 17}, "TxRingSize = 131072"},
		{"completion below tx", Options{CompletionRingSize: 1024}, "CompletionRingSize = 1024: must be at least TxRingSize (2048)"},
		{"frames not pow2", Options{Frames: 5000}, "Frames = 5000: must be a power of two in [128, 262144]"},
		{"frames too few", Options{Frames: 2048}, "Frames = 2048: must be at least FillRingSize + TxRingSize = 4096"},
		{"budget low", Options{TxBudget: 16}, "TxBudget = 16: must be in [32, TxRingSize = 2048]"},
		{"budget high", Options{TxBudget: 4096}, "TxBudget = 4096"},
		{"attach", Options{Attach: 7}, "Attach = 7"},
		{"zerocopy", Options{ZeroCopy: 9}, "ZeroCopy = 9"},
		{"zerocopy generic", Options{ZeroCopy: ZeroCopyOn, Attach: AttachGeneric}, "attached natively"},
		{"negative queue", Options{Queues: []int{0, -1}}, "Queues[1] = -1"},
		{"duplicate queue", Options{Queues: []int{2, 3, 2}}, "Queues[2] = 2: listed twice"},
	} {
		err := tc.o.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	for _, o := range []Options{
		{FrameSize: 4096},
		{Frames: 128, FillRingSize: 64, RxRingSize: 64, TxRingSize: 64, CompletionRingSize: 64},
		{Queues: []int{0, 3}, TxBudget: 2048},
		{ZeroCopy: ZeroCopyOn, Attach: AttachNative},
	} {
		if err := o.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", o, err)
		}
	}
}

func TestFrameAccountInKernel(t *testing.T) {
	a := FrameAccount{Total: 100, Free: 40, Fill: 30, Rx: 10, Tx: 5, Completion: 5}
	if a.InKernel() != 10 {
		t.Errorf("InKernel = %d, want 10", a.InKernel())
	}
}

// At rest the kernel holds only what a driver keeps for receiving, and,
// while the link is down, the frames on the TX rings.
func TestFrameAccountAtRest(t *testing.T) {
	for _, c := range []struct {
		name string
		a    FrameAccount
		want bool
	}{
		{"copy mode, idle", FrameAccount{Total: 100, Free: 50, Fill: 50}, true},
		{"zero-copy, the driver holds the fill frames", FrameAccount{Total: 100, Free: 50, Driver: 50}, true},
		{"a frame between the rings that is not the driver's", FrameAccount{Total: 100, Free: 49, Driver: 50}, false},
		{"frames on the TX ring", FrameAccount{Total: 100, Free: 40, Fill: 50, Tx: 10}, false},
		{"completions not reaped", FrameAccount{Total: 100, Free: 40, Fill: 50, Completion: 10}, false},
		{"frames on the TX ring of a downed link", FrameAccount{Total: 100, Free: 40, Fill: 50, Tx: 10, LinkDown: true}, true},
		{"frames taken from the TX ring, not completed", FrameAccount{Total: 100, Free: 40, Fill: 50}, false},
	} {
		if got := c.a.AtRest(); got != c.want {
			t.Errorf("%s: %+v AtRest = %v, want %v", c.name, c.a, got, c.want)
		}
	}
}
