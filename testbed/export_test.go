package testbed

import (
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/ecnswitch/ecnswitch/internal/nsenter"
)

// Subnet6Of exposes subnet6 to the external tests.
func Subnet6Of(p netip.Prefix) netip.Prefix { return subnet6(p) }

// Features reads ifname's features in the named namespace ("" for the
// caller's) through ETHTOOL_GFEATURES: the tests' fallback oracle when the
// ethtool binary is missing.
func Features(netnsName, ifname string) (map[string]bool, error) {
	out := map[string]bool{}
	read := func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		fs, err := readFeatures(fd, ifname)
		if err != nil {
			return err
		}
		for i, n := range fs.names {
			out[n] = fs.active[i]
		}
		return nil
	}
	if netnsName == "" {
		return out, read()
	}
	return out, nsenter.Do(netnsName, read)
}
