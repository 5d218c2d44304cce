package afxdp

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The controller resolves itself to its fixed ID, and the netdev family
// (Linux 6.3+) reports the loopback device, which redirects nothing.
func TestGenlFamily(t *testing.T) {
	id, err := genlFamily("nlctrl")
	if err != nil {
		t.Fatal(err)
	}
	if id != unix.GENL_ID_CTRL {
		t.Fatalf("nlctrl has ID %d, want %d", id, unix.GENL_ID_CTRL)
	}
	if _, err := genlFamily("no-such-family"); err == nil {
		t.Fatal("an unknown family resolved")
	}
	f, err := deviceFeatures(1)
	if err != nil {
		t.Fatal(err)
	}
	if f.xdp&xdpActNdoXmit != 0 {
		t.Fatalf("loopback claims ndo-xmit: xdp-features %#x", f.xdp)
	}
}

func TestFeatureNames(t *testing.T) {
	got := featureNames(0b1011, rxMetadataNames)
	if len(got) != 3 || got[0] != "timestamp" || got[1] != "hash" || got[2] != "bit3" {
		t.Fatalf("featureNames(0b1011) = %v, want timestamp, hash, bit3", got)
	}
	if featureNames(0, xskFeatureNames) != nil {
		t.Fatal("no bits gave names")
	}
}
