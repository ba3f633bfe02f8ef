package server

import (
	"context"
	"fmt"

	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
)

// gatedStore is the store on the embedded NATS server: a commit while the
// server's JetStream cannot write (a stream failed to write on a full
// disk, and refuses every write until the server restarts JetStream) is
// refused at once instead of waiting for answers that never come (the
// store's timeout, three times, at each of the engine's three attempts).
// The engine treats it as any refused commit: a start answers 503 and
// leaves no instance; a later step is tried again after a growing pause.
type gatedStore struct {
	*natsstore.Store
	healthy func() error
}

// Commit commits rec, unless JetStream cannot write.
func (g *gatedStore) Commit(ctx context.Context, rec record.Step) error {
	if err := g.healthy(); err != nil {
		return fmt.Errorf("server: commit instance %q: %w", rec.Snapshot.ID, err)
	}
	return g.Store.Commit(ctx, rec)
}
