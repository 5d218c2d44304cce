package testbed

import (
	"fmt"
	"os"
	"path/filepath"
)

// sysctl is one /proc/sys setting, keyed by its path under /proc/sys
// ("net/ipv4/tcp_ecn"), so interface names with dots need no escaping.
type sysctl struct {
	key, value string
}

// setSysctls writes each setting in the network namespace of the calling
// thread: /proc/sys/net resolves against the thread's namespace when opened.
func setSysctls(ss []sysctl) error {
	for _, s := range ss {
		p := filepath.Join("/proc/sys", s.key)
		if err := os.WriteFile(p, []byte(s.value), 0); err != nil {
			return fmt.Errorf("sysctl %s=%s: %w", s.key, s.value, err)
		}
	}
	return nil
}
