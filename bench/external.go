package bench

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/loadgen"
	"github.com/ecnswitch/ecnswitch/ports/afxdp"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// DeviceExternal is a device that is not ours, wired between two
// interfaces of this machine (SwitchOptions.External): a hardware switch,
// a Linux bridge or OVS on another server, a router.
const DeviceExternal Device = "external"

// Stamp clocks of External.TxClock and RxClock.
const (
	// StampMonotonic stamps on this host's CLOCK_MONOTONIC: in software
	// at send, and at receive in software or, where the sink's NIC has
	// them, as hardware stamps put onto CLOCK_MONOTONIC through its PHC.
	StampMonotonic = "monotonic"
	// StampPHC stamps on the interface's PTP hardware clock: TX stamps
	// read from the generator's NIC's PHC at send (AF_XDP generator),
	// RX stamps by the sink's NIC in hardware, left on its PHC (AF_XDP
	// sink). The two PHCs must be one clock, or kept in step by phc2sys
	// (or PTP between two servers): the run checks their offset.
	StampPHC = "phc"
)

// DefaultSinkIP and DefaultGenIP are the frames' addresses on an external
// device: RFC 2544's benchmarking range, 198.18.0.0/15.
var (
	DefaultGenIP  = netip.MustParseAddr("198.18.0.1")
	DefaultSinkIP = netip.MustParseAddr("198.18.0.2")
)

// External is a device under test that is not ours, wired between two
// interfaces of this machine: the generator sends on GenIface, the
// device forwards the frames to SinkIface, the sink counts them there.
// RunSwitch measures it as it does its own devices, with no testbed and
// no ecnswitch started, and changes nothing on either interface: it
// attaches its XDP programs and AF_XDP sockets, and removes them when it
// returns, also on error or cancellation.
//
// The device must forward the generator's frames to SinkIface. An L2
// switch does once it has learned SinkIface's MAC (the frames' default
// destination) on that port; until then it floods them as unknown
// unicast, out of every port of their VLAN. So that it learns, the run
// sends one frame from SinkIface before every trial (see NoLearn). A
// router needs Addresses.DstMAC set to its own MAC on GenIface's side,
// and DstIP routed to SinkIface's side, with a neighbour entry for it.
type External struct {
	// GenIface and SinkIface are the interfaces the device is wired
	// between. RunSwitch refuses them when missing, the same, down or
	// without carrier, or looking like the host's management interface
	// unless Force (CheckInterfaces).
	GenIface, SinkIface string
	// Netns is the network namespace both interfaces are in; "" the
	// caller's.
	Netns string
	// Addresses are the frames'. Zero fields default to: SrcMAC
	// GenIface's MAC, DstMAC SinkIface's, SrcIP DefaultGenIP, DstIP
	// DefaultSinkIP, and loadgen's UDP ports.
	Addresses loadgen.Addresses
	// NoLearn sends no learning frame. By default, before each trial,
	// when the frames go to SinkIface's own MAC, one frame leaves
	// SinkIface from that MAC to SrcMAC (EtherType 0x88B5, IEEE 802's
	// local experimental type, which hosts ignore), so that a learning
	// switch forwards the trial's frames to the sink's port instead of
	// flooding them.
	NoLearn bool
	// TxClock and RxClock are the clocks of the TX and RX stamps,
	// StampMonotonic (the default) or StampPHC.
	TxClock, RxClock string
	// ClockLimit is the largest offset between two PHCs of TxClock and
	// RxClock with which one-way latency is still reported; default
	// loadgen.DefaultClockLimit. The run measures the offset before the
	// first trial and after every trial.
	ClockLimit time.Duration
	// Force uses interfaces that look like the host's management
	// interface.
	Force bool
}

func (e *External) validate(o *SwitchOptions) error {
	switch {
	case e.GenIface == "" || e.SinkIface == "":
		return errors.New("external: both the generator's and the sink's interface are required")
	case e.ClockLimit < 0:
		return fmt.Errorf("external: clock limit %v: want ≥ 0", e.ClockLimit)
	}
	for _, c := range []*string{&e.TxClock, &e.RxClock} {
		switch *c {
		case "":
			*c = StampMonotonic
		case StampMonotonic, StampPHC:
		default:
			return fmt.Errorf("external: stamp clock %q: want %s or %s", *c, StampMonotonic, StampPHC)
		}
	}
	if e.TxClock == StampPHC && o.Generator == GeneratorXDP {
		return errors.New("external: TX stamps on the PHC need the AF_XDP generator: live frames are stamped in XDP, on CLOCK_MONOTONIC")
	}
	if e.RxClock == StampPHC && o.Sink == loadgen.SinkXDP {
		return errors.New("external: RX stamps on the PHC need the AF_XDP sink: the XDP sink stamps on CLOCK_MONOTONIC")
	}
	if len(o.Devices) > 0 && (len(o.Devices) != 1 || o.Devices[0] != DeviceExternal) {
		return fmt.Errorf("devices: %v: an external device is measured alone", o.Devices)
	}
	o.Devices = []Device{DeviceExternal}
	return nil
}

// ExternalReport is what the report records of an external device.
type ExternalReport struct {
	Netns     string    `json:"netns,omitempty"`
	GenIface  Interface `json:"gen_iface"`
	SinkIface Interface `json:"sink_iface"`
	SrcMAC    string    `json:"src_mac"`
	DstMAC    string    `json:"dst_mac"`
	SrcIP     string    `json:"src_ip"`
	DstIP     string    `json:"dst_ip"`
	// Learn says a learning frame left the sink's interface before
	// every trial.
	Learn bool `json:"learn"`
	// Forced says the run used interfaces that looked like the host's
	// management interface (their Management says why).
	Forced bool `json:"forced,omitempty"`
}

// Label is the device's row in the report: "external device (A → B)".
func (x *ExternalReport) Label() string {
	return fmt.Sprintf("external device (%s → %s)", x.GenIface.Name, x.SinkIface.Name)
}

// external sets the rig up for o.External: checks the interfaces, fills
// in the addresses and opens the stamp clocks. The caller calls r.closeClocks.
func (r *rig) external() error {
	e := r.o.External
	gen, sink, err := CheckInterfaces(e.Netns, e.GenIface, e.SinkIface, e.Force)
	if err != nil {
		return err
	}
	a := e.Addresses
	if a.SrcMAC == nil {
		a.SrcMAC = gen.MAC
	}
	if a.DstMAC == nil {
		a.DstMAC = sink.MAC
	}
	if !a.SrcIP.IsValid() {
		a.SrcIP = DefaultGenIP
	}
	if !a.DstIP.IsValid() {
		a.DstIP = DefaultSinkIP
	}
	r.addrs = a
	r.gen0 = end{netns: e.Netns, iface: gen.Name}
	r.sink0 = end{netns: e.Netns, iface: sink.Name}
	r.learn = !e.NoLearn && bytes.Equal(a.DstMAC, sink.MAC)
	r.rep.External = &ExternalReport{
		Netns: e.Netns, GenIface: gen, SinkIface: sink, SrcMAC: a.SrcMAC.String(), DstMAC: a.DstMAC.String(),
		SrcIP: a.SrcIP.String(), DstIP: a.DstIP.String(), Learn: r.learn,
		Forced: e.Force && (len(gen.Management) > 0 || len(sink.Management) > 0),
	}
	if e.TxClock == StampPHC {
		if r.txClock, err = r.openPHC(gen.Name, "TX"); err != nil {
			return err
		}
	}
	if e.RxClock == StampPHC {
		if r.rxClock, err = r.openPHC(sink.Name, "RX"); err != nil {
			return err
		}
	}
	return nil
}

// openPHC opens the PHC of ifname as a stamp clock of side ("TX", "RX").
func (r *rig) openPHC(ifname, side string) (*loadgen.PHCClock, error) {
	phc, err := InterfacePHC(r.o.External.Netns, ifname)
	if err != nil {
		return nil, fmt.Errorf("bench: switch: %s stamps on the PHC: %w", side, err)
	}
	r.phcs = append(r.phcs, phc)
	return loadgen.NewPHCClock(phc), nil
}

// InterfacePHC opens the PTP hardware clock of ifname, in netns ("" the
// caller's), or says that it has none.
func InterfacePHC(netns, ifname string) (*timestamp.PHC, error) {
	idx := -1
	if err := inNetns(netns, func() error { idx = afxdp.PHCIndex(ifname); return nil }); err != nil {
		return nil, err
	}
	if idx < 0 {
		return nil, fmt.Errorf("%s has no PTP hardware clock (ethtool -T %s): its stamps can only be on CLOCK_MONOTONIC", ifname, ifname)
	}
	phc, err := timestamp.OpenPHC(idx)
	if err != nil {
		return nil, fmt.Errorf("%s's PHC: %w", ifname, err)
	}
	return phc, nil
}

// closeClocks closes the PHCs external opened.
func (r *rig) closeClocks() error {
	var errs []error
	for _, p := range r.phcs {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}

// EtherTypeLearn is the EtherType of the learning frame: IEEE 802's
// local experimental EtherType 1, which no host protocol takes.
const EtherTypeLearn = 0x88b5

// learnPayload opens the learning frame's payload, so that a capture on
// the device says what it is.
const learnPayload = "ecnswitch bench: the sink is here"

// learnFrame returns the learning frame from src to dst, 60 bytes.
func learnFrame(src, dst net.HardwareAddr) []byte {
	f := make([]byte, 60)
	copy(f[0:6], dst)
	copy(f[6:12], src)
	f[12], f[13] = EtherTypeLearn>>8, EtherTypeLearn&0xff
	copy(f[14:], learnPayload)
	return f
}

// sendLearn sends the learning frame out of the sink's interface.
func (r *rig) sendLearn() error {
	if err := SendLearn(r.sink0.netns, r.sink0.iface, r.addrs.SrcMAC); err != nil {
		return fmt.Errorf("bench: switch: %w", err)
	}
	return nil
}

// SendLearn sends one learning frame out of the sink's interface iface
// (in netns, "" the caller's), from its own MAC to dst (the generator's),
// so that a learning switch between them forwards frames to that MAC out
// of the port the sink is on, instead of flooding them: EtherType
// EtherTypeLearn, which no host protocol takes (the generator's
// interface counts it in rx_dropped). It changes nothing on iface.
func SendLearn(netns, iface string, dst net.HardwareAddr) error {
	err := inNetns(netns, func() error {
		ifi, err := net.InterfaceByName(iface)
		if err != nil {
			return err
		}
		if len(ifi.HardwareAddr) != 6 || len(dst) != 6 {
			return fmt.Errorf("want 6-byte MACs, have %v → %v", ifi.HardwareAddr, dst)
		}
		// Protocol 0: the socket only sends; it receives nothing.
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		sa := &unix.SockaddrLinklayer{Ifindex: ifi.Index, Halen: 6}
		copy(sa.Addr[:], dst)
		return unix.Sendto(fd, learnFrame(ifi.HardwareAddr, dst), 0, sa)
	})
	if err != nil {
		return fmt.Errorf("learning frame out of %s: %w", iface, err)
	}
	return nil
}
