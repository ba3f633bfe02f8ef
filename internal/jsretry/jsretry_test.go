package jsretry

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestDo_TriesAgainWhileUnanswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tries := 0
		v, err := Do(t.Context(), time.Second, func(ctx context.Context) (int, error) {
			tries++
			switch tries {
			case 1:
				<-ctx.Done() // the request nobody answers
				return 0, ctx.Err()
			case 2:
				return 0, fmt.Errorf("create: %w", nats.ErrNoResponders)
			case 3:
				return 0, &jetstream.APIError{Code: 503, Description: "JetStream system temporarily unavailable"}
			}
			return 7, nil
		})
		if err != nil || v != 7 || tries != 4 {
			t.Fatalf("got %d, %v after %d tries, want 7 after 4", v, err, tries)
		}
	})
}

func TestDo_OtherErrorsReturnAtOnce(t *testing.T) {
	refused := &jetstream.APIError{Code: 400, Description: "stream name already in use with a different configuration"}
	tries := 0
	_, err := Do(t.Context(), time.Second, func(context.Context) (int, error) {
		tries++
		return 0, refused
	})
	if !errors.Is(err, refused) || tries != 1 {
		t.Fatalf("got %v after %d tries, want the refusal after 1", err, tries)
	}
}

func TestDo_StopsWhenTheContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		tries := 0
		_, err := Do(ctx, time.Second, func(ctx context.Context) (int, error) {
			tries++
			<-ctx.Done()
			return 0, ctx.Err()
		})
		if !errors.Is(err, context.DeadlineExceeded) || tries < 2 || tries > 3 {
			t.Fatalf("got %v after %d tries, want the deadline after 2 or 3", err, tries)
		}
	})
}

func TestPer_IsAThirdAtLeastASecond(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{
		30 * time.Second: 10 * time.Second, 5 * time.Second: 5 * time.Second / 3,
		2 * time.Second: time.Second, 0: time.Second,
	} {
		if got := Per(in); got != want {
			t.Errorf("Per(%v) = %v, want %v", in, got, want)
		}
	}
}
