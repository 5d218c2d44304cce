package capture

import (
	"path/filepath"
	"regexp"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

var (
	trimRE        = regexp.MustCompile(`^trim port out queue 0: trimmed \(static_cap\) from 1000 to 106 bytes$`)
	trimSentRE    = regexp.MustCompile(`^egress port out queue 1: sent trimmed; sojourn \d+\.\d{3}us$`)
	trimDroppedRE = regexp.MustCompile(`^drop port out queue 1: dropped \(static_cap\) after trimming$`)
)

// TestTrimCapture: a burst of 20 UDP frames into a queue capped at 3
// leaves 17 to be trimmed onto queue 1, which has room for 2 of them. The
// drops capture holds the 17 trims, as cut, with the refusal's reason
// (comment "trimmed (static_cap) from 1000 to 106 bytes"), and the 15
// headers queue 1 refused ("after trimming"); the egress capture of
// trimmed packets the 2 headers sent, DSCP 46 and a valid UDP checksum;
// the trimmed filter on drops takes both kinds but not the TCP frames
// dropped whole, and ingress may not have it.
func TestTrimCapture(t *testing.T) {
	cfg := dataplane.Config{Pools: []buffer.PoolConfig{{Size: 1 << 20}}}
	cfg.Ports = []dataplane.PortConfig{dataplanetest.PortConfig("in", 1, 100_000_000), dataplanetest.PortConfig("out", 2, 100_000_000)}
	cfg.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 1}}
	out := &cfg.Ports[1]
	out.Scheduler.Queues = []scheduler.QueueConfig{{}, {Strict: true}}
	out.Queues = []buffer.QueueConfig{{Cap: 3000}, {Cap: 2*106 + 10}}
	out.Trim = &dataplane.Trim{Queue: 1, DSCP: 46}
	r := dataplanetest.New(t, cfg, memport.Link{})
	dir := t.TempDir()
	m := New(r.Switch, r.Clock, Options{Dir: dir, Wall: fixedWall})
	specs := map[string]Spec{
		"drops.pcapng":   {Port: "out", Direction: Drops, Path: "drops.pcapng"},
		"dtrim.pcapng":   {Port: "out", Direction: Drops, Filter: Trimmed, Path: "dtrim.pcapng"},
		"trimmed.pcapng": {Port: "out", Filter: Trimmed, Path: "trimmed.pcapng"},
		"egress.pcapng":  {Port: "out", Path: "egress.pcapng"},
	}
	ids := map[string]int{}
	for name, s := range specs {
		id, err := m.Start(s)
		if err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		ids[name] = id
	}
	if _, err := m.Start(Spec{Port: "out", Direction: Ingress, Filter: Trimmed, Path: "x.pcapng"}); err == nil {
		t.Error("an ingress capture of trimmed packets started")
	}
	for i := range 20 {
		r.Send(0, packettest.UDP4(t, packettest.Options{Size: 1000, SrcPort: uint16(i), SrcMAC: dataplanetest.MAC(0), DstMAC: dataplanetest.MAC(1)}))
	}
	for i := range 5 { // TCP is not trimmed: dropped whole
		r.Send(0, packettest.TCP4(t, packettest.Options{Size: 1000, SrcPort: uint16(i), SrcMAC: dataplanetest.MAC(0), DstMAC: dataplanetest.MAC(1)}))
	}
	r.Drain(10_000)
	read := map[string][]pkt{}
	for name, id := range ids {
		if _, err := m.Stop(id); err != nil {
			t.Fatal(err)
		}
		read[name] = readPcapng(t, filepath.Join(dir, name), DefaultSnapLen)
	}
	count := func(ps []pkt, re *regexp.Regexp) int {
		n := 0
		for _, p := range ps {
			if re.MatchString(p.comment) {
				n++
			}
		}
		return n
	}
	for name, all := range map[string]int{"drops.pcapng": 37, "dtrim.pcapng": 32} {
		ps := read[name]
		if len(ps) != all || count(ps, trimRE) != 17 || count(ps, trimDroppedRE) != 15 {
			t.Errorf("%s: %d packets, %d trims, %d trimmed drops; want %d, 17, 15", name, len(ps), count(ps, trimRE), count(ps, trimDroppedRE), all)
			for _, p := range ps[:min(3, len(ps))] {
				t.Logf("%q", p.comment)
			}
		}
	}
	sent := read["trimmed.pcapng"]
	if len(sent) != 2 || count(sent, trimSentRE) != 2 || len(read["egress.pcapng"]) != 5 {
		t.Fatalf("egress: %d trimmed (%d comments as meant) of %d; want 2 of 5", len(sent), count(sent, trimSentRE), len(read["egress.pcapng"]))
	}
	for _, p := range sent {
		g := gopacket.NewPacket(p.data, layers.LayerTypeEthernet, gopacket.Default)
		ip, _ := g.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		u, _ := g.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if ip == nil || u == nil || len(p.data) != 106 || ip.TOS>>2 != 46 {
			t.Fatalf("a trimmed packet sent: %v", g)
		}
		_ = u.SetNetworkLayerForChecksum(ip)
		if _, v := u.VerifyChecksum(); !v.Valid {
			t.Errorf("a trimmed packet's UDP checksum %#04x, want %#04x", v.Actual, v.Correct)
		}
	}
}
