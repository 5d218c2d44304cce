package dataplane

import (
	"net"
	"testing"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/packet/packettest"
)

func TestRuleValidation(t *testing.T) {
	if _, err := newForwarder(Forwarding{Patches: []Patch{{From: 0, To: 9}}}, 4); err == nil {
		t.Error("a patch to port 9 of 4 was accepted")
	}
	if _, err := newForwarder(Forwarding{Patches: []Patch{{From: 1, To: 1}}}, 4); err == nil {
		t.Error("a port patched to itself was accepted")
	}
	if _, err := newForwarder(Forwarding{MACs: []MACRule{{MAC: []byte{1, 2, 3}, Port: 0}}}, 4); err == nil {
		t.Error("a 3-byte MAC was accepted")
	}
}

func TestClassifierPCP(t *testing.T) {
	cl, err := newClassifier(Classifier{UsePCP: true, PCP: map[uint8]int{5: 1}}, 4)
	if err != nil {
		t.Fatal(err)
	}
	tagged := packettest.Desc(t, packettest.UDP4(t, packettest.Options{DSCP: 0, Tags: []packettest.Tag{{PCP: 5, VLAN: 7}}}))
	if q := cl.queue(tagged, 4); q != 1 {
		t.Errorf("PCP 5 → queue %d, want 1", q)
	}
	if _, err := newClassifier(Classifier{DSCP: map[uint8]int{64: 0}}, 4); err == nil {
		t.Error("DSCP 64 accepted")
	}
}

// TestMACRules: a destination MAC rule sends its frames to its port, the
// last rule for a MAC wins, and other MACs match no rule, whether route
// searches the rules as a list (few) or in a map (more than maxMACList).
func TestMACRules(t *testing.T) {
	for _, n := range []int{1, maxMACList, maxMACList + 1, 100} {
		mac := func(i int) packet.MAC { return packet.MAC{0x02, 0, 0, 0, byte(i >> 8), byte(i)} }
		hw := func(i int) net.HardwareAddr { m := mac(i); return m[:] }
		var rules []MACRule
		for i := range n {
			rules = append(rules, MACRule{MAC: hw(i + 1), Port: 1 + i%3})
		}
		rules = append(rules, MACRule{MAC: hw(1), Port: 3}) // overrides the first
		fw, err := newForwarder(Forwarding{MACs: rules, NoLearning: true, FloodRate: -1}, 4)
		if err != nil {
			t.Fatal(err)
		}
		if list := fw.macList != nil; list != (n <= maxMACList) {
			t.Errorf("%d rules: searched as a list = %v, want %v", n, list, n <= maxMACList)
		}
		for i := range n + 1 {
			d := packettest.Desc(t, packettest.UDP4(t, packettest.Options{DstMAC: mac(i + 1)}))
			want := 1 + i%3
			switch {
			case i == 0:
				want = 3
			case i == n:
				want = flood // no rule
			}
			if got := fw.route(d, 0); got != want {
				t.Errorf("%d rules: frame to %v routed to %d, want %d", n, mac(i+1), got, want)
			}
		}
	}
}
