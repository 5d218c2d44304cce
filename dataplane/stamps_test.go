package dataplane_test

import (
	"testing"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// stampPort receives frames stamped in hardware, as an AF_XDP port with
// a PHC does: RxTime on CLOCK_MONOTONIC, 0 where the device gave none.
type stampPort struct {
	clock  string
	frame  []byte
	stamps []int64 // one frame per stamp, delivered on the first Receive
}

var (
	_ ports.Port      = (*stampPort)(nil)
	_ ports.RxStamper = (*stampPort)(nil)
	_ ports.TxStamper = (*stampPort)(nil)
)

// TxCompletions reports three stamped completions, 1 µs on average.
func (p *stampPort) TxCompletions() (uint64, int64, int64) { return 3, 1000, 2000 }

func (p *stampPort) Name() string    { return "nic" }
func (p *stampPort) RxClock() string { return p.clock }
func (p *stampPort) Close() error    { return nil }
func (p *stampPort) Transmit(ds []*packet.Desc) (int, error) {
	return len(ds), nil
}
func (p *stampPort) Receive(ds []*packet.Desc) (int, error) {
	n := min(len(ds), len(p.stamps))
	for i, d := range ds[:n] {
		d.Len = copy(d.Buf, p.frame)
		d.RxTime = p.stamps[i]
	}
	p.stamps = p.stamps[n:]
	return n, nil
}

// originClock is a virtual switch clock whose zero is CLOCK_MONOTONIC
// origin, as timestamp.Monotonic's is.
type originClock struct {
	*timestamp.Virtual
	origin int64
}

func (c originClock) Origin() int64 { return c.origin }

// TestHardwareRxStamps: a device's hardware stamps, on CLOCK_MONOTONIC,
// become the packets' ingress stamps on the switch's clock — the tap sees
// stamp − origin — except where the device gave none (0) or one in the
// switch's future: those the worker stamps with its own now. Stats count
// both and name the device's clock.
func TestHardwareRxStamps(t *testing.T) {
	const origin = 5_000_000_000 // CLOCK_MONOTONIC at the switch clock's zero
	frame := dataplanetest.Frame(t, 0, 1, packettest.Options{Size: 200})
	for _, c := range []struct {
		name       string
		clock      timestamp.Clock
		devClock   string
		want       []int64
		wantSource string
		wantDevice uint64
	}{
		{
			name: "phc", clock: originClock{timestamp.NewVirtual(10_000), origin}, devClock: "phc0",
			want:       []int64{9_000, 10_000, 10_000, 9_500}, // 0 and the future get now (10 µs)
			wantSource: "phc0", wantDevice: 2,
		},
		{
			name: "no origin", clock: timestamp.NewVirtual(10_000), devClock: "phc0",
			want:       []int64{10_000, 10_000, 10_000, 10_000},
			wantSource: "worker",
		},
		{
			name: "no device clock", clock: originClock{timestamp.NewVirtual(10_000), origin}, devClock: "",
			want:       []int64{10_000, 10_000, 10_000, 10_000},
			wantSource: "worker",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			dev := &stampPort{clock: c.devClock, frame: frame,
				stamps: []int64{origin + 9_000, 0, origin + 20_000, origin + 9_500}}
			cfg := dataplanetest.Config(2, 1, 1_000_000_000, 1<<20)
			cfg.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 1}}
			sw, err := dataplane.New(cfg, []ports.Port{dev, &dataplanetest.Sink{}}, c.clock, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer sw.Close()
			var rec recorder
			if err := sw.AddTap(0, &rec); err != nil {
				t.Fatal(err)
			}
			sw.Poll()
			var got []int64
			for _, e := range rec.evs {
				if e.Kind == dataplane.EventIngress {
					got = append(got, e.Time)
				}
			}
			if len(got) != len(c.want) {
				t.Fatalf("ingress stamps %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("ingress stamps %v, want %v", got, c.want)
				}
			}
			st := sw.Stats()
			rs := st.Ports[0].RxStamps
			if rs.Source != c.wantSource || rs.Device != c.wantDevice || rs.Worker != 4-c.wantDevice {
				t.Fatalf("RxStamps = %+v, want source %s, %d by the device, %d by the worker", rs, c.wantSource, c.wantDevice, 4-c.wantDevice)
			}
			if ts := st.Ports[0].TxStamps; ts == nil || *ts != (dataplane.TxStampStats{Stamped: 3, MeanNS: 1000, MaxNS: 2000}) {
				t.Fatalf("TxStamps = %+v, want the device's 3 completions", ts)
			}
			if st.Ports[1].TxStamps != nil {
				t.Fatalf("a sink without completion stamps reports %+v", st.Ports[1].TxStamps)
			}
		})
	}
}

// A memory link stamps on the switch's clock: its stamps are kept, and
// the stats say the link gave them.
func TestLinkRxStamps(t *testing.T) {
	cfg := dataplanetest.Config(2, 1, 1_000_000_000, 1<<20)
	r := dataplanetest.New(t, cfg, memport.Link{Rate: 1_000_000_000})
	f := dataplanetest.Frame(t, 0, 1, packettest.Options{Size: 500})
	r.Send(0, f, f)
	r.Drain(1000)
	st := r.Switch.Stats()
	if rs := st.Ports[0].RxStamps; rs.Source != "link" || rs.Device != 2 || rs.Worker != 0 {
		t.Fatalf("RxStamps = %+v, want 2 from the link", rs)
	}
	if st.Clock != "virtual" {
		t.Fatalf("Stats.Clock = %q, want virtual", st.Clock)
	}
}
