// Package testbedtest makes testbeds for tests: unique names, a subnet no
// concurrent test uses, and removal in tb.Cleanup.
package testbedtest

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/ecnswitch/ecnswitch/internal/testenv"
	"github.com/ecnswitch/ecnswitch/testbed"
)

// Option adjusts the Options New passes to testbed.Up.
type Option func(*testbed.Options)

// New brings up a testbed of hosts hosts for the test and registers its
// removal with tb.Cleanup. It skips the test when not run as root (testbeds
// need CAP_NET_ADMIN and CAP_SYS_ADMIN) and fails it on any other error.
//
// Every call gets a random ID and its own /24 of 198.18.0.0/15, claimed with
// a lock file in the state directory for the life of the test, and checked
// against the addresses of the caller's namespace and against the subnets
// of the testbeds recorded there, so concurrent tests (also of different
// packages) never overlap. Options given by opts apply first; a Subnet they
// set is used as given, without a claim.
func New(tb testing.TB, hosts int, opts ...Option) *testbed.Testbed {
	tb.Helper()
	SkipIfNotRoot(tb)
	o := testbed.Options{Hosts: hosts}
	id, err := testbed.RandomID()
	if err != nil {
		tb.Fatal(err)
	}
	o.ID = id
	for _, opt := range opts {
		opt(&o)
	}
	if !o.Subnet.IsValid() {
		o.Subnet = Subnet(tb, o.StateDir)
	}
	t, err := testbed.Up(o)
	if err != nil {
		tb.Fatalf("testbed up: %v", err)
	}
	tb.Cleanup(func() {
		if err := t.Down(); err != nil {
			tb.Errorf("testbed down: %v", err)
		}
	})
	return t
}

// Subnet claims a /24 of 198.18.0.0/15 for the test, as New does, and
// releases it in tb.Cleanup. stateDir is where testbeds record their state
// ("" for testbed.DefaultStateDir); claims live there too. Tests that call
// testbed.Up themselves use it for a subnet no concurrent test uses.
func Subnet(tb testing.TB, stateDir string) netip.Prefix {
	tb.Helper()
	if stateDir == "" {
		stateDir = testbed.DefaultStateDir
	}
	p, release, err := claimSubnet(stateDir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(release)
	return p
}

// SkipIfNotRoot skips the test unless it runs as root, which testbeds need
// (CAP_NET_ADMIN for links, CAP_SYS_ADMIN for namespaces). On CI
// (CI=true) it fails instead: see internal/testenv.
func SkipIfNotRoot(tb testing.TB) {
	tb.Helper()
	testenv.MustBeRoot(tb, "a testbed makes network namespaces and veth pairs")
}

// claimSubnet picks a random /24 of 198.18.0.0/15 that no address of the
// caller's namespace and no testbed recorded in dir overlaps, and claims it
// with an exclusively created lock file, removed by release.
func claimSubnet(dir string) (netip.Prefix, func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return netip.Prefix{}, nil, fmt.Errorf("testbedtest: state dir: %w", err)
	}
	for range 64 {
		var b [2]byte
		if _, err := rand.Read(b[:]); err != nil {
			return netip.Prefix{}, nil, fmt.Errorf("testbedtest: %w", err)
		}
		x := binary.BigEndian.Uint16(b[:]) % 512 // 512 /24s in a /15
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18 + byte(x>>8), byte(x), 0}), 24)
		if inUse(p, dir) {
			continue
		}
		lock := filepath.Join(dir, "testbedtest-"+p.Addr().String()+"-24.lock")
		f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return netip.Prefix{}, nil, fmt.Errorf("testbedtest: claim %s: %w", p, err)
		}
		f.Close()
		return p, func() { os.Remove(lock) }, nil
	}
	return netip.Prefix{}, nil, errors.New("testbedtest: no free /24 in 198.18.0.0/15 after 64 tries")
}

// inUse reports whether p overlaps an address of the caller's namespace or
// the subnet of a testbed recorded in dir.
func inUse(p netip.Prefix, dir string) bool {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && p.Contains(ip.Unmap()) {
				return true
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "testbed-*.json"))
	for _, f := range files {
		t, err := testbed.Load(f, nil)
		if err == nil && t.Subnet().Overlaps(p) {
			return true
		}
	}
	return false
}
