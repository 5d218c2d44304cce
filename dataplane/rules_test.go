package dataplane

import (
	"testing"

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
