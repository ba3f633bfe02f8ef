package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/batonhq/baton/internal/jsretry"
	"github.com/batonhq/baton/record"
)

// The listing index is a stream with one message per instance, written
// before the instance's first step: its stream sequence is the instance's
// place in the order of first commits, which List walks newest first. The
// subject holds the workflow and the instance as tokens, so that a list of
// one workflow reads that workflow's messages only, and Prune purges an
// instance's message by its subject.

// metaIndexed is the metadata key of the index stream set once every
// instance the prefix held when the stream was created has its message:
// a stream without it is filled (again) as a store opens.
const metaIndexed = "baton.indexed"

// indexRecord is an instance's message in the index.
type indexRecord struct {
	Format   int       `json:"format"`
	ID       string    `json:"id"`
	Workflow string    `json:"workflow"`
	Created  time.Time `json:"created"`
}

func (s *Store) indexName() string { return s.cfg.Prefix + "_index" }

func (s *Store) indexPrefix() string { return s.cfg.Prefix + ".index." }

// indexSubject is the subject of an instance's index message.
func (s *Store) indexSubject(workflow, id string) string {
	return s.indexPrefix() + workflowToken(workflow) + "." + token(id)
}

// workflowToken is a workflow's subject token: "_", which no encoded name
// is, for an instance without one.
func workflowToken(workflow string) string {
	if workflow == "" {
		return "_"
	}
	return token(workflow)
}

// indexFilter is the subject filter of the index messages of workflow, or
// of every workflow when it is empty.
func (s *Store) indexFilter(workflow string) string {
	if workflow == "" {
		return s.indexPrefix() + ">"
	}
	return s.indexPrefix() + workflowToken(workflow) + ".*"
}

func (s *Store) indexConfig(indexed bool) jetstream.StreamConfig {
	cfg := jetstream.StreamConfig{
		Name:              s.indexName(),
		Description:       "baton: one message per instance, in the order of first commits, for listing",
		Subjects:          []string{s.indexPrefix() + ">"},
		Retention:         jetstream.LimitsPolicy,
		Discard:           jetstream.DiscardOld,
		MaxMsgsPerSubject: 1,
		Storage:           jetstream.FileStorage,
		Replicas:          s.cfg.Replicas,
		Duplicates:        s.cfg.DuplicateWindow,
		DenyDelete:        true, // Prune purges an instance's message by subject
	}
	if indexed {
		cfg.Metadata = map[string]string{metaIndexed: "1"}
	}
	return cfg
}

// openIndex opens the index stream, creating it, and fills it with the
// instances of a prefix written before it existed, under fill: that may
// take longer than opening.
func (s *Store) openIndex(ctx, fill context.Context) error {
	st, err := jsretry.Do(ctx, jsretry.Per(s.cfg.Timeout), func(ctx context.Context) (jetstream.Stream, error) {
		return s.js.Stream(ctx, s.indexName())
	})
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		// Created without the mark: it is set once the prefix's instances
		// are in. A store opening the prefix at the same moment creates
		// it first, and both fill it (each instance's message is written
		// once).
		st, err = jsretry.Do(ctx, jsretry.Per(s.cfg.Timeout), func(ctx context.Context) (jetstream.Stream, error) {
			return s.js.CreateStream(ctx, s.indexConfig(false))
		})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			st, err = jsretry.Do(ctx, jsretry.Per(s.cfg.Timeout), func(ctx context.Context) (jetstream.Stream, error) {
				return s.js.Stream(ctx, s.indexName())
			})
		}
	}
	if err != nil {
		return &RequestError{Op: "open stream " + s.indexName(), Err: err}
	}
	indexed := st.CachedInfo().Config.Metadata[metaIndexed] == "1"
	s.index = st
	if !indexed {
		if err := s.backfill(fill); err != nil {
			return err
		}
	}
	// Updating an indexed stream only ever keeps its mark: the settings
	// (replicas) follow the configuration, as the other streams'. The
	// filling may have used up ctx's time.
	uctx, cancel := context.WithTimeout(fill, 3*s.cfg.Timeout)
	defer cancel()
	s.index, err = jsretry.Do(uctx, jsretry.Per(s.cfg.Timeout), func(ctx context.Context) (jetstream.Stream, error) {
		return s.js.UpdateStream(ctx, s.indexConfig(true))
	})
	if err != nil {
		return &RequestError{Op: "open stream " + s.indexName(), Err: err}
	}
	return nil
}

// lookupIndex opens the index stream of a read-only store, if the prefix
// has a complete one; without it, List reads every instance.
func (s *Store) lookupIndex(ctx context.Context) error {
	st, err := jsretry.Do(ctx, jsretry.Per(s.cfg.Timeout), func(ctx context.Context) (jetstream.Stream, error) {
		return s.js.Stream(ctx, s.indexName())
	})
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return nil
	case err != nil:
		return &RequestError{Op: "open stream " + s.indexName(), Err: err}
	case st.CachedInfo().Config.Metadata[metaIndexed] == "1":
		s.index = st
	}
	return nil
}

// backfill gives every instance of the prefix its index message, oldest
// first by created time (then id): the order of first commits before the
// index existed is not known.
func (s *Store) backfill(ctx context.Context) error {
	lasts, err := s.lastSteps(ctx)
	if err != nil {
		return err
	}
	snaps := make([]record.Snapshot, len(lasts))
	for k, l := range lasts {
		snaps[k] = l.rec.Snapshot
	}
	slices.SortFunc(snaps, func(a, b record.Snapshot) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	for _, snap := range snaps {
		if err := s.addIndex(ctx, snap); err != nil {
			return err
		}
	}
	if len(snaps) > 0 {
		s.log.Info("natsstore: indexed the instances of a prefix written before the listing index", zap.String("prefix", s.cfg.Prefix), zap.Int("instances", len(snaps)))
	}
	return nil
}

// addIndex writes the index message of a new instance, unless it has one:
// a commit made again, or two engines starting one id, index it once.
func (s *Store) addIndex(ctx context.Context, snap record.Snapshot) error {
	data, err := json.Marshal(indexRecord{Format: format, ID: snap.ID, Workflow: snap.Workflow, Created: snap.Created})
	if err != nil {
		return &EncodeError{Instance: snap.ID, Field: "index", Err: err}
	}
	var perr error
	for attempt := 1; attempt <= s.cfg.Attempts; attempt++ {
		actx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		_, perr = s.publishAcked(actx, &nats.Msg{Subject: s.indexSubject(snap.Workflow, snap.ID), Data: data}, "", s.indexName(), 0)
		cancel()
		// The index is written before a new instance's first step: a
		// refusal for want of storage here is the store's too.
		s.noteWrite(perr)
		if perr == nil || isWrongLastSeq(perr) {
			return nil
		}
		if ctx.Err() != nil || !retryable(perr) {
			break
		}
	}
	return &RequestError{Op: "index", Instance: snap.ID, Err: perr}
}

// dropIndex purges an instance's index message.
func (s *Store) dropIndex(ctx context.Context, snap record.Snapshot) error {
	if s.index == nil {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if err := s.index.Purge(rctx, jetstream.WithPurgeSubject(s.indexSubject(snap.Workflow, snap.ID))); err != nil {
		return &RequestError{Op: "prune", Instance: snap.ID, Err: err}
	}
	return nil
}
