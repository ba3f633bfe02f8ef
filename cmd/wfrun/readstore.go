package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/batonhq/baton/boltstore"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
)

// readStore is what inspect and completion read of a store: a bbolt file
// or a NATS JetStream store, both opened read-only.
type readStore interface {
	Instances(ctx context.Context) ([]record.Snapshot, error)
	Instance(ctx context.Context, id string) (record.Snapshot, error)
	History(ctx context.Context, id string) ([]record.Entry, error)
	Outbox(ctx context.Context, id string) ([]record.Outgoing, error)
	DeadLetters(ctx context.Context) ([]record.DeadLetter, error)
	Close() error
}

var (
	_ readStore = (*boltstore.Store)(nil)
	_ readStore = (*natsStore)(nil)
)

// natsTimeout bounds inspect's connection to a NATS server and each of its
// requests.
const natsTimeout = 5 * time.Second

// storeFlags names the store to read: a bbolt file (--store) or the store
// of a prefix on a NATS server (--nats, --prefix).
type storeFlags struct {
	file   string
	nats   string
	prefix string
}

func (f *storeFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.file, "store", "", "the store file (bbolt) to read")
	fl.StringVar(&f.nats, "nats", "", "read the store on this NATS server instead (a URL such as nats://127.0.0.1:4222; several comma-separated)")
	fl.StringVar(&f.prefix, "prefix", natsstore.DefaultPrefix, "with --nats, the prefix of the store's streams and bucket")
}

// check refuses anything but exactly one of --store and --nats.
func (f *storeFlags) check(cmd *cobra.Command) error {
	switch {
	case f.file == "" && f.nats == "":
		return errors.New("inspect needs --store FILE or --nats URL")
	case f.file != "" && f.nats != "":
		return errors.New("inspect reads one store: --store FILE or --nats URL, not both")
	case f.file != "" && cmd.Flags().Changed("prefix"):
		return errors.New("--prefix applies to --nats, not to --store")
	}
	return nil
}

// open opens the store read-only; timeout bounds a NATS connection and each
// of its requests.
func (f *storeFlags) open(ctx context.Context, timeout time.Duration) (readStore, error) {
	if f.file != "" {
		return boltstore.OpenReadOnly(f.file)
	}
	return openNATS(ctx, f.nats, f.prefix, timeout)
}

// natsStore is a read-only natsstore.Store with the connection it owns.
type natsStore struct {
	*natsstore.Store
	nc *nats.Conn
}

// Close closes the store, then its connection.
func (s *natsStore) Close() error {
	err := s.Store.Close()
	s.nc.Close()
	return err
}

// openNATS connects to the server at url and opens the store of prefix on
// it read-only.
func openNATS(ctx context.Context, url, prefix string, timeout time.Duration) (*natsStore, error) {
	nc, err := nats.Connect(url, nats.Name("wfrun inspect"), nats.Timeout(timeout), nats.NoReconnect())
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", url, err)
	}
	st, err := natsstore.OpenReadOnly(ctx, nc, natsstore.Config{Prefix: prefix, Timeout: timeout})
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &natsStore{Store: st, nc: nc}, nil
}
