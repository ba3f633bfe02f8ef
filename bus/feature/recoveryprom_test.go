package feature_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/batonhq/baton/bus/feature"
	"github.com/batonhq/baton/transport"
)

func TestRecoveryCollector_ReportsRetriesAndDeadLetterProcessing(t *testing.T) {
	tr := newBus(t)
	d, _ := newDLQ(t, tr, feature.DeadLetterPolicy{Backoff: time.Hour})
	r, clk := newRetry(t, tr, 100*time.Millisecond)
	openBox(t, tr, "B", 1)
	fillBox(t, tr, "B", 1)
	done := sendAsync(t.Context(), r, recWork("A", "B", "late"))
	advanceTo(t, clk, 100*time.Millisecond) // the one retry: still full, given up
	if err := <-done; !errors.Is(err, transport.ErrQueueFull) {
		t.Fatalf("got %v, want ErrQueueFull after the schedule", err)
	}
	held := d.Held()
	if len(held) != 1 {
		t.Fatalf("got %d dead letters held for processing, want the given-up send", len(held))
	}
	process(t, d) // its backoff is not over: a pass that does nothing
	if err := d.Discard(held[0].Message.MessageID); err != nil {
		t.Fatal(err)
	}
	c := feature.NewRecoveryCollector(feature.Recovery{Retry: r, DeadLetters: d}, "")
	want := `
# HELP baton_bus_dead_letter_alerts_total Alerts raised because dead letters arrived too fast.
# TYPE baton_bus_dead_letter_alerts_total counter
baton_bus_dead_letter_alerts_total 0
# HELP baton_bus_dead_letter_passes_total Dead-letter processing passes.
# TYPE baton_bus_dead_letter_passes_total counter
baton_bus_dead_letter_passes_total 1
# HELP baton_bus_dead_letters_awaiting_processing Dead letters held for processing.
# TYPE baton_bus_dead_letters_awaiting_processing gauge
baton_bus_dead_letters_awaiting_processing 0
# HELP baton_bus_dead_letters_processed_total Dead letters processing acted on, by action.
# TYPE baton_bus_dead_letters_processed_total counter
baton_bus_dead_letters_processed_total{action="discarded"} 1
baton_bus_dead_letters_processed_total{action="requeued"} 0
baton_bus_dead_letters_processed_total{action="retried"} 0
baton_bus_dead_letters_processed_total{action="stale"} 0
# HELP baton_bus_send_retries_given_up_total Retried sends dead-lettered after waiting.
# TYPE baton_bus_send_retries_given_up_total counter
baton_bus_send_retries_given_up_total 1
# HELP baton_bus_send_retries_total Send attempts made after a first one met a full mailbox.
# TYPE baton_bus_send_retries_total counter
baton_bus_send_retries_total 1
# HELP baton_bus_sends_retrying Sends waiting for their next attempt.
# TYPE baton_bus_sends_retrying gauge
baton_bus_sends_retrying 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("got lint problems %v (%v), want none", problems, err)
	}
	if n := testutil.CollectAndCount(feature.NewRecoveryCollector(feature.Recovery{}, "")); n != 0 {
		t.Errorf("got %d series without retries or dead-letter processing, want none", n)
	}
}
