// Package jsretry tries a JetStream API request again when it went
// unanswered. A cluster electing a leader, or busy with another client's
// creation of the same stream, may leave one request without an answer
// while the next is answered at once: an open that waited for a single
// answer would spend its whole deadline on the one that never comes.
package jsretry

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// pause is the wait before a try that follows a quick refusal (no
// responders, JetStream not ready), so that the tries do not spin.
const pause = 50 * time.Millisecond

// Do calls f with a context that ends after per, again while the request
// goes unanswered or JetStream is not ready, until ctx ends. Any other
// error, or success, returns at once.
func Do[T any](ctx context.Context, per time.Duration, f func(context.Context) (T, error)) (T, error) {
	for {
		tctx, cancel := context.WithTimeout(ctx, per)
		v, err := f(tctx)
		cancel()
		if err == nil || ctx.Err() != nil || !Unanswered(err) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(pause):
		}
	}
}

// Unanswered reports whether err means a JetStream request got no answer,
// or one saying JetStream cannot serve it yet: trying again may succeed.
func Unanswered(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		(errors.As(err, &apiErr) && apiErr.Code == 503)
}

// Per is the time one try gets when an operation has timeout for its
// request: a third of it, at least a second. A stream's creation on a
// cluster can take a second or two; a request left unanswered is then
// tried again twice before the operation's deadline.
func Per(timeout time.Duration) time.Duration { return max(timeout/3, time.Second) }
