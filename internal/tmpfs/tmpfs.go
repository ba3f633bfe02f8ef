// Package tmpfs gives tests a small file system of their own, to fill up:
// a tmpfs mounted on a temporary directory for the test's duration. It
// needs root (or CAP_SYS_ADMIN) and a system that lets the process mount:
// elsewhere the test is skipped with the reason logged.
package tmpfs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// Mount mounts a tmpfs of size bytes on a new directory and returns it;
// it is unmounted when the test ends. Without root, or when the mount is
// refused (a container without the capability), it skips the test.
func Mount(t testing.TB, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs to fill needs root: not root")
	}
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.FormatInt(size, 10), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("mounting a small tmpfs to fill was refused: %v: %s", err, out)
	}
	// Registered after TempDir's removal, so run before it.
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// Fill writes a file named name in dir until the file system is full,
// and returns its path: removing it frees the space.
func Fill(t testing.TB, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("fill %s: %v", dir, err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for range 1 << 16 { // 4 GiB at most: far more than a test's tmpfs
		if _, err := f.Write(buf); err != nil {
			return path
		}
	}
	t.Fatalf("fill %s: 4 GiB written and not full", dir)
	return path
}
