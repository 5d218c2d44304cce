package afxdp

import (
	"os"
	"slices"
	"testing"
)

// The kernel here (CI: 6.18) has AF_XDP sockets, live frames and XSK TX
// metadata; the probes say so without touching an interface.
func TestKernelProbes(t *testing.T) {
	requireRoot(t)
	for name, probe := range map[string]func() error{
		"ProbeSockets": ProbeSockets, "ProbeLiveFrames": ProbeLiveFrames, "ProbeTxMetadata": ProbeTxMetadata,
	} {
		if err := probe(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err == nil {
		if err := ProbeKfunc(RxTimestampKfunc); err != nil {
			t.Errorf("ProbeKfunc(%s): %v", RxTimestampKfunc, err)
		}
	}
	if err := ProbeKfunc("ecnsw_no_such_kfunc"); err == nil {
		t.Error("ProbeKfunc found a kfunc that does not exist")
	}
}

// A veth has native XDP, takes redirects and implements the RX metadata
// kfuncs (with the skb's software stamp), but has no zero-copy and no
// hardware clock; its NAPI runs in softirq until someone turns threaded
// NAPI on.
func TestDeviceProbes(t *testing.T) {
	n := newTestNet(t, 1)
	f, err := ProbeDevice(n.host)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(f.XDP, "basic") || !slices.Contains(f.XDP, "redirect") || slices.Contains(f.XDP, "xsk-zerocopy") {
		t.Errorf("veth xdp-features %v: want basic and redirect, no xsk-zerocopy", f.XDP)
	}
	if !slices.Contains(f.RxMetadata, "timestamp") {
		t.Errorf("veth rx metadata %v, want timestamp among them", f.RxMetadata)
	}
	if i := PHCIndex(n.host); i != -1 {
		t.Errorf("veth PHC index %d, want -1", i)
	}
	if pids, err := NAPIThreads(n.host); err != nil || len(pids) != 0 {
		t.Errorf("veth NAPI threads %v, %v; want none", pids, err)
	}
	if _, err := ProbeDevice("ecnswnosuch0"); err == nil {
		t.Error("ProbeDevice of a missing interface: no error")
	}
}
