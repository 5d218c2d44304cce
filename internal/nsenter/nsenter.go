// Package nsenter runs a function inside a named network namespace, on a
// thread that never serves another goroutine while it is switched. The
// testbed and the load generator both enter their hosts' namespaces
// through it.
package nsenter

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/vishvananda/netns"
)

// Do runs fn on a locked OS thread switched into the named network
// namespace (as `ip netns` names it, in /run/netns) and switches back
// before unlocking. If switching back
// fails, the thread stays locked and exits with its goroutine, so it can
// never carry another goroutine in the wrong namespace. Sockets and
// netlink handles fn creates belong to the namespace and keep working
// after Do returns; goroutines fn starts do not run in it.
func Do(name string, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		back, err := run(name, fn)
		if back {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}

// run does the switching for Do and reports whether the thread is back
// in its original namespace.
func run(name string, fn func() error) (back bool, err error) {
	orig, err := netns.Get()
	if err != nil {
		return true, fmt.Errorf("get current netns: %w", err)
	}
	defer orig.Close()
	target, err := netns.GetFromName(name)
	if err != nil {
		return true, fmt.Errorf("open netns %s: %w", name, err)
	}
	defer target.Close()
	if err := netns.Set(target); err != nil {
		return true, fmt.Errorf("enter netns %s: %w", name, err)
	}
	err = fn()
	if serr := netns.Set(orig); serr != nil {
		return false, errors.Join(err, fmt.Errorf("leave netns %s: %w", name, serr))
	}
	return true, err
}
