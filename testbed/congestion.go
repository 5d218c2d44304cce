package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// The congestion-control sysctls. The available and allowed lists are the
// machine's; tcp_congestion_control is per network namespace.
const (
	ccAvailable = "net/ipv4/tcp_available_congestion_control"
	ccAllowed   = "net/ipv4/tcp_allowed_congestion_control"
	ccDefault   = "net/ipv4/tcp_congestion_control"
)

// allowCongestionControl makes cc fit to be a host namespace's default and
// reports whether it had to add cc to the machine's allowed list.
//
// A namespace other than the initial one may only make its default an
// algorithm the kernel does not restrict (tcp_set_default_congestion_control
// refuses the others with EPERM), and the unrestricted ones are those of
// net.ipv4.tcp_allowed_congestion_control plus the initial namespace's
// default. On a machine whose default is bbr, cubic is restricted, and the
// only way to make it a host's default is to allow it. Allowing it widens
// what unprivileged processes may pick per socket, machine-wide; Down does
// not undo it, as other testbeds may rely on it. (A congestion control
// that is unregistered, as testbed/dctcp's is by its last holder, leaves
// the allowed list with it.)
//
// If cc is not loaded, a throwaway socket asks for it (TCP_CONGESTION,
// which as root loads the module); if the kernel has no such algorithm,
// the error says which it has.
func AllowCongestionControl(cc string) (added bool, err error) {
	avail, err := getSysctl(ccAvailable)
	if err != nil {
		return false, err
	}
	if !slices.Contains(strings.Fields(avail), cc) {
		loadCongestionControl(cc)
		if avail, err = getSysctl(ccAvailable); err != nil {
			return false, err
		}
		if !slices.Contains(strings.Fields(avail), cc) {
			return false, fmt.Errorf("not in this kernel (available: %s)", avail)
		}
	}
	def, err := getSysctl(ccDefault)
	if err != nil {
		return false, err
	}
	allowed, err := getSysctl(ccAllowed)
	if err != nil {
		return false, err
	}
	if cc == def || slices.Contains(strings.Fields(allowed), cc) {
		return false, nil
	}
	if err := setSysctls([]sysctl{{ccAllowed, strings.TrimSpace(allowed + " " + cc)}}); err != nil {
		return false, fmt.Errorf("allow congestion control %s for the hosts' namespaces: %w", cc, err)
	}
	return true, nil
}

// loadCongestionControl asks the kernel for cc on a throwaway TCP socket,
// which loads its module if there is one; errors show in the available list.
func loadCongestionControl(cc string) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return
	}
	unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc)
	unix.Close(fd)
}

// setCongestionControl makes cc the default of the calling thread's network
// namespace. If the kernel refuses because cc is restricted (another
// testbed rewrote the allowed list meanwhile), it allows cc again and
// retries once. Up allows cc before it gets here because each refusal
// costs more than a retry: Linux 6.18 keeps the reference it took on cc
// before refusing, so a refused module can never be unloaded, and a
// refused BPF congestion control (testbed/dctcp) stays in memory after
// it is unregistered.
func setCongestionControl(cc string) error {
	err := setSysctls([]sysctl{{ccDefault, cc}})
	if errors.Is(err, unix.EPERM) {
		if _, aerr := AllowCongestionControl(cc); aerr != nil {
			return errors.Join(err, aerr)
		}
		err = setSysctls([]sysctl{{ccDefault, cc}})
	}
	return err
}

// getSysctl reads one /proc/sys setting in the calling thread's namespace.
func getSysctl(key string) (string, error) {
	b, err := os.ReadFile(filepath.Join("/proc/sys", key))
	if err != nil {
		return "", fmt.Errorf("sysctl %s: %w", key, err)
	}
	return strings.TrimSpace(string(b)), nil
}
