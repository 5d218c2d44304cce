package nsenter

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/vishvananda/netns"

	"github.com/ecnswitch/ecnswitch/internal/testenv"
)

// TestDo enters a namespace of the test's own, sees its own loopback
// only there, and leaves the calling goroutine's thread where it was. A
// namespace that does not exist is an error naming it, and fn's error
// comes back.
func TestDo(t *testing.T) {
	testenv.MustBeRoot(t, "creates a network namespace")
	name := fmt.Sprintf("nsenter-%d", os.Getpid())
	made := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine, in the new namespace
		h, err := netns.NewNamed(name)
		if err == nil {
			h.Close()
		}
		made <- err
	}()
	if err := <-made; err != nil {
		t.Fatalf("create netns %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := netns.DeleteNamed(name); err != nil {
			t.Errorf("delete netns %s: %v", name, err)
		}
	})
	here, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer here.Close()
	there, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer there.Close()

	var inside netns.NsHandle
	if err := Do(name, func() (err error) { inside, err = netns.Get(); return err }); err != nil {
		t.Fatal(err)
	}
	defer inside.Close()
	if !inside.Equal(there) {
		t.Errorf("fn ran in %v, want the namespace %s (%v)", inside, name, there)
	}
	now, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer now.Close()
	if !now.Equal(here) {
		t.Errorf("after Do the caller is in %v, want %v", now, here)
	}

	if err := Do(name+"-missing", func() error { return nil }); err == nil || !strings.Contains(err.Error(), name+"-missing") {
		t.Errorf("a missing namespace: %v, want an error naming it", err)
	}
	want := fmt.Errorf("fn failed")
	if err := Do(name, func() error { return want }); err != want {
		t.Errorf("fn's error: got %v, want %v", err, want)
	}
}
