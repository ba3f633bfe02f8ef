package server

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton/record"
)

// TestServer_StoreLists: the store the server lists instances from pages
// at the store, in both modes; a wrapper around it that hid record.Lister
// would make every list read every instance again.
func TestServer_StoreLists(t *testing.T) {
	for _, nats := range []string{"", NoNATS} {
		t.Run("nats="+nats, func(t *testing.T) {
			dir := t.TempDir()
			flow := "workflow: w\ninitial: A\nagents:\n  a: {}\nstates:\n  A: {agent: a}\n  B: {terminal: true}\nrules:\n  - {id: r, from: a, trigger: t, next: B}\n"
			if err := os.WriteFile(filepath.Join(dir, "w.yaml"), []byte(flow), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg := Config{WorkflowsDir: dir, DataDir: t.TempDir(), NATS: nats}
			if nats == "" {
				cfg.NATSListen = "127.0.0.1:0"
			}
			s, err := New(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, ok := s.store.(record.Lister); !ok {
				t.Fatalf("the server's store %T is not a record.Lister", s.store)
			}
		})
	}
}
