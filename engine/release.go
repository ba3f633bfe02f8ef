package engine

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/batonhq/baton/record"
)

// ErrNotOwner means an instance belongs to another engine sharing the store
// (several engines on one NATS cluster, each owning a share of the
// instances): this engine neither commits nor sends anything for it. A
// store refuses a commit with an error matching it; Start returns it inside
// a *CommitError for an id another engine owns.
var ErrNotOwner = record.ErrNotOwner

// ResumeWhere is Resume limited to the instances whose id keep accepts: an
// engine sharing a store with others resumes the instances it owns (the
// partitions it has just taken over), and leaves the others to their
// owners. A nil keep resumes every instance, as Resume does.
func (e *Engine) ResumeWhere(ctx context.Context, keep func(id string) bool) (ResumeReport, error) {
	return e.resumeWhere(ctx, keep)
}

// ResumeListed is ResumeWhere on a list of the store's instances the
// caller has read (Store.Instances): several engines sharing a store,
// one per workflow version, resume from one read of it. With keep, each
// instance listed is read again from the store before it is resumed, so
// a list a moment old does no harm; one missing from the list is not
// resumed.
func (e *Engine) ResumeListed(ctx context.Context, snaps []record.Snapshot, keep func(id string) bool) (ResumeReport, error) {
	if ctx == nil {
		return ResumeReport{}, errors.New("engine: nil context")
	}
	return e.resumeFrom(ctx, snaps, keep)
}

// Release drops from the engine every instance in memory whose id match
// accepts, without committing or sending anything for it: its timers stop,
// its Go handlers' contexts are cancelled, their outcomes and any report of
// it are refused, and a Wait on it returns with an error matching
// ErrNotOwner. The store keeps each where its last commit left it, for the
// engine that owns it now to resume. An engine sharing a store calls it for
// the partitions it gave up or lost. It returns the ids released.
func (e *Engine) Release(match func(id string) bool) []string {
	var ids []string
	e.instances.Range(func(id string, i *instance) bool {
		if match != nil && !match(id) {
			return true
		}
		i.mu.Lock()
		i.releaseLocked(fmt.Errorf("engine: instance %s released: %w", id, ErrNotOwner))
		i.mu.Unlock()
		ids = append(ids, id)
		return true
	})
	return ids
}

// releaseLocked takes the instance out of the engine: nothing of it is
// committed or sent any more. The caller holds mu.
func (i *instance) releaseLocked(err error) {
	if i.commitErr == nil {
		i.commitErr = err
	}
	i.stopTimersLocked()
	if i.run != nil {
		i.run.stop()
	}
	i.out.dropItems()
	i.events = i.events[:0]
	i.notices = nil
	i.discard()
	if i.err == nil {
		i.err = err
	}
	i.closeDone()
	i.closing = false
	i.forgotten = true
	i.e.instances.CompareAndDelete(i.id, i)
}

// notOwned reports whether a commit was refused because another engine
// owns the instance now: the instance leaves this engine quietly, it has
// not failed.
func (i *instance) notOwned(err error) bool {
	if !errors.Is(err, ErrNotOwner) {
		return false
	}
	i.e.log.Info("engine: instance owned by another engine now; released", zap.String("instance", i.id), zap.Int("step", i.step), zap.Error(err))
	i.releaseLocked(&CommitError{InstanceID: i.id, Step: i.step, Err: err})
	return true
}
