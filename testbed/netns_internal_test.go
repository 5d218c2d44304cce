package testbed

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ecnswitch/ecnswitch/internal/testenv"
)

// TestDeleteNetnsChecksCookie: a namespace deleted and created again under
// the same name can get the old nsfs inode back (the kernel reuses freed
// inode numbers; TestDownAfterExternalRemoval failed that way now and
// then), never the old cookie. deleteNetns must leave a namespace whose
// inode matches the record but whose cookie does not, and remove the one
// both match.
func TestDeleteNetnsChecksCookie(t *testing.T) {
	testenv.MustBeRoot(t, "network namespaces")
	name := fmt.Sprintf("ecnsw-ck%d", os.Getpid())
	id, err := createNetns(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteNetns(name, id) })
	if id.ino == 0 || id.cookie == 0 {
		t.Fatalf("identity %+v: want an inode and a cookie", id)
	}
	impostor := netnsID{ino: id.ino, cookie: id.cookie + 1} // same inode, another namespace
	if err := deleteNetns(name, impostor); err == nil || !strings.Contains(err.Error(), "left alone") {
		t.Fatalf("deleteNetns with a matching inode and another cookie = %v, want it left alone", err)
	}
	if _, err := netnsInode(name); err != nil {
		t.Fatalf("the namespace is gone after a refused delete: %v", err)
	}
	if err := deleteNetns(name, id); err != nil {
		t.Fatal(err)
	}
	if _, err := netnsInode(name); err == nil {
		t.Fatal("the namespace survived deleteNetns with its own identity")
	}
}
