package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHangupIgnored: a SIGHUP while the switch runs is logged, naming
// what to do instead, and does not stop the process (whose default action
// for SIGHUP is to exit).
func TestHangupIgnored(t *testing.T) {
	var logs syncBuffer
	log, _ := newLogger("info", &logs)
	restore := ignoreHangups(log)
	defer restore()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs.String(), "SIGHUP ignored"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no SIGHUP warning in the log:\n%s", logs.String())
		}
	}
	if !strings.Contains(logs.String(), "restart") {
		t.Errorf("the warning does not say what to do: %s", logs.String())
	}
}
