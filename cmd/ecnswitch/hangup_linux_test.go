package main

import (
	"syscall"
	"testing"
	"time"
)

// TestHangupReloads: a SIGHUP while the switch runs does not stop the
// process (whose default action for SIGHUP is to exit) but asks for one
// reload; hangups that come while one waits are that one.
func TestHangupReloads(t *testing.T) {
	reload, restore := hangups()
	defer restore()
	for range 3 {
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-reload:
	case <-time.After(5 * time.Second):
		t.Fatal("no reload after SIGHUP")
	}
	// Three hangups before the first was taken: at most one more reload.
	time.Sleep(100 * time.Millisecond)
	select {
	case <-reload:
	default:
	}
	select {
	case <-reload:
		t.Fatal("three hangups made more than two reloads")
	default:
	}
}
