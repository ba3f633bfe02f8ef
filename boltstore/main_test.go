package boltstore_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/batonhq/baton/boltstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// open opens a store in a new file of the test's temporary directory and
// closes it when the test ends.
func open(t *testing.T, opts ...boltstore.Option) (*boltstore.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "baton.db")
	s, err := boltstore.Open(path, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s, path
}
