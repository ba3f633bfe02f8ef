package natsstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/batonhq/baton/internal/jsretry"
)

// metaShards is the metadata key of the first steps stream that records how
// many shards the prefix has: every store of the prefix must hash ids to
// the same streams, whatever its own Config says.
const metaShards = "baton.shards"

// metaPartitions is the metadata key of the steps streams that records
// how many partitions the engines of the prefix lease, once one of them
// opened it with partitions: a store opened without them would commit
// without leases beside engines that hold them, so it is refused.
const metaPartitions = "baton.partitions"

func (s *Store) stepsName(shard int) string { return s.cfg.Prefix + "_steps_" + strconv.Itoa(shard) }

func (s *Store) stepsConfig(shard, shards int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        s.stepsName(shard),
		Description: "baton: one message per committed step (snapshot, history entries, outbox)",
		Subjects:    []string{s.stepPrefix + strconv.Itoa(shard) + ".>", s.markerPrefix(shard) + "*"},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		Storage:     jetstream.FileStorage,
		Replicas:    s.cfg.Replicas,
		Duplicates:  s.cfg.DuplicateWindow,
		DenyDelete:  true, // steps are never deleted one by one: Prune purges whole instances
		// On a single server, reads of a step go straight to the stream
		// (direct gets), not through the JetStream API. Replicated, a
		// direct get may be answered by a replica that lags: reads then
		// stay with the leader.
		AllowDirect: s.cfg.Replicas == 1,
		Metadata:    map[string]string{metaShards: strconv.Itoa(shards), metaPartitions: strconv.Itoa(len(s.parts))},
	}
}

// openSteps opens the steps streams: as many as the prefix already has, or
// Config.Shards for a new prefix.
func (s *Store) openSteps(ctx context.Context) error {
	shards, err := s.knownShards(ctx)
	if err != nil {
		return err
	}
	if leased := s.knownPartitions; leased > 0 && len(s.parts) != leased {
		return &ConfigError{Field: "Partitions", Reason: fmt.Sprintf("is %d, but the engines sharing prefix %q lease %d partitions: open the store with Partitions %d", len(s.parts), s.cfg.Prefix, leased, leased)}
	}
	if shards == 0 {
		shards = s.cfg.Shards
		_, err := jsretry.Do(ctx, jsretry.Per(s.cfg.Timeout), func(ctx context.Context) (jetstream.Stream, error) {
			return s.js.CreateStream(ctx, s.stepsConfig(0, shards))
		})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			// Another store created the prefix at the same moment: its
			// number of shards wins.
			shards, err = s.knownShards(ctx)
		}
		if err != nil {
			return &RequestError{Op: "open stream " + s.stepsName(0), Err: err}
		}
	}
	if shards != s.cfg.Shards {
		s.log.Info("natsstore: the prefix keeps the number of shards it was created with",
			zap.String("prefix", s.cfg.Prefix), zap.Int("shards", shards), zap.Int("configured", s.cfg.Shards))
	}
	return s.loadSteps(ctx, shards, func(ctx context.Context, k int) (jetstream.Stream, error) {
		return s.js.CreateOrUpdateStream(ctx, s.stepsConfig(k, shards))
	})
}

// lookupSteps opens the steps streams of an existing prefix as they are,
// creating and updating nothing: a *NoStoreError when the prefix has none.
func (s *Store) lookupSteps(ctx context.Context) error {
	shards, err := s.knownShards(ctx)
	if err != nil {
		return err
	}
	if shards == 0 {
		return &NoStoreError{Prefix: s.cfg.Prefix, Missing: "stream " + s.stepsName(0)}
	}
	err = s.loadSteps(ctx, shards, func(ctx context.Context, k int) (jetstream.Stream, error) {
		return s.js.Stream(ctx, s.stepsName(k))
	})
	var re *RequestError
	if errors.Is(err, jetstream.ErrStreamNotFound) && errors.As(err, &re) {
		return &NoStoreError{Prefix: s.cfg.Prefix, Missing: strings.TrimPrefix(re.Op, "open ")}
	}
	return err
}

// loadSteps fills s.steps with the streams of the prefix's shards, each
// from open.
func (s *Store) loadSteps(ctx context.Context, shards int, open func(context.Context, int) (jetstream.Stream, error)) error {
	s.steps = make([]jetstream.Stream, shards)
	for k := range shards {
		st, err := jsretry.Do(ctx, jsretry.Per(s.cfg.Timeout), func(ctx context.Context) (jetstream.Stream, error) {
			return open(ctx, k)
		})
		if err != nil {
			return &RequestError{Op: "open stream " + s.stepsName(k), Err: err}
		}
		s.steps[k] = st
	}
	return nil
}

// knownShards reads the number of shards of an existing prefix, 0 for a
// new one.
func (s *Store) knownShards(ctx context.Context) (int, error) {
	st, err := jsretry.Do(ctx, jsretry.Per(s.cfg.Timeout), func(ctx context.Context) (jetstream.Stream, error) {
		return s.js.Stream(ctx, s.stepsName(0))
	})
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, &RequestError{Op: "open stream " + s.stepsName(0), Err: err}
	}
	// A prefix created before partitions were recorded has none recorded.
	s.knownPartitions, _ = strconv.Atoi(st.CachedInfo().Config.Metadata[metaPartitions])
	v := st.CachedInfo().Config.Metadata[metaShards]
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxShards {
		return 0, &CorruptError{Subject: "stream " + s.stepsName(0) + " metadata " + metaShards, Err: fmt.Errorf("%q is not a number of shards", v)}
	}
	return n, nil
}
