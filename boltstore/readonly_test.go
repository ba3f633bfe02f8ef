package boltstore_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton/boltstore"
)

// TestOpenReadOnly_MissingFileIsAnError opens a path that does not exist:
// an error, and no file created.
func TestOpenReadOnly_MissingFileIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "typo.db")
	s, err := boltstore.OpenReadOnly(path)
	var oe *boltstore.OpenError
	if !errors.As(err, &oe) || !errors.Is(err, fs.ErrNotExist) {
		if s != nil {
			_ = s.Close()
		}
		t.Fatalf("got %v, want an *OpenError matching fs.ErrNotExist", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("got %v for the path after the open, want it still missing", err)
	}
}

// TestOpenReadOnly_WritesNothing reads a store opened read-only, refuses its
// writes, and leaves the file byte for byte as it was.
func TestOpenReadOnly_WritesNothing(t *testing.T) {
	path := storeFile(t, 2, 2)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := boltstore.OpenReadOnly(path)
	if err != nil {
		t.Fatalf("got %v, want the store open", err)
	}
	other, err := boltstore.OpenReadOnly(path)
	if err != nil {
		t.Fatalf("got %v opening a second reader, want it to share the file", err)
	}
	_ = other.Close()
	all, err := s.Instances(t.Context())
	if err != nil || len(all) != 2 {
		t.Errorf("got %d instances, %v, want 2", len(all), err)
	}
	if _, err := s.History(t.Context(), "inst-000"); err != nil {
		t.Errorf("got %v reading a history, want nil", err)
	}
	if err := s.Commit(t.Context(), withOutbox("inst-000", 3)); !errors.Is(err, boltstore.ErrReadOnly) {
		t.Errorf("got %v committing, want ErrReadOnly", err)
	}
	if err := s.AddDeadLetter(t.Context(), deadLetter(2)); !errors.Is(err, boltstore.ErrReadOnly) {
		t.Errorf("got %v adding a dead letter, want ErrReadOnly", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("got a file of %d bytes that changed, want it as it was (%d bytes)", len(after), len(before))
	}
}

// TestOpenReadOnly_NotAStore refuses an empty file and a file of
// another kind without writing to them.
func TestOpenReadOnly_NotAStore(t *testing.T) {
	for name, content := range map[string][]byte{"empty": nil, "text": []byte("not a database")} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.db")
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := boltstore.OpenReadOnly(path)
			if err == nil {
				_ = s.Close()
				t.Fatal("got nil, want an error")
			}
			requireTyped(t, err)
			if got, _ := os.ReadFile(path); !bytes.Equal(got, content) {
				t.Errorf("got the file changed to %d bytes, want it untouched", len(got))
			}
		})
	}
}
