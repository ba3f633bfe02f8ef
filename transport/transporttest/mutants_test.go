package transporttest_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/transport"
	"github.com/batonhq/baton/transport/transporttest"
)

// The knobs: each breaks the wrapped bus in one way.
const (
	// fifo ignores priorities: everything travels at NORMAL.
	fifo = "fifo"
	// ignoresCapacity opens every mailbox at the default capacity.
	ignoresCapacity = "ignores-capacity"
	// ackIgnored drops acks: an acked message stays in flight and is
	// delivered again after the ack wait.
	ackIgnored = "ack-ignored"
	// autoAck acks on take and ignores Ack, Nack and Reject: nothing taken
	// is ever delivered again.
	autoAck = "auto-ack"
	// refusesSilently refuses sends to unknown agents and full mailboxes
	// with the right error, but never accepts nor dead-letters them.
	refusesSilently = "refuses-silently"
	// ignoresTTL sends every message with the default TTL.
	ignoresTTL = "ignores-ttl"
	// ignoresIdempotency hides the idempotency key from the bus (and puts
	// it back on the way out), so duplicates go through.
	ignoresIdempotency = "ignores-idempotency"
	// inFlightUncounted leaves in-flight messages out of the metrics: they
	// no longer add up.
	inFlightUncounted = "in-flight-uncounted"
	// deliveredAtTake counts a message delivered when it is taken, not
	// when it is acked: the metrics add up, but lie.
	deliveredAtTake = "delivered-at-take"
	// refusalsUncounted leaves refused sends out of accepted and
	// dead-lettered: the metrics add up, but disagree with OnDeadLetter.
	refusalsUncounted = "refusals-uncounted"
	// cancelIgnored returns an OnDeadLetter cancel that does nothing.
	cancelIgnored = "cancel-ignored"
	// rejectRedelivers nacks a rejected message instead of dead-lettering it.
	rejectRedelivers = "reject-redelivers"
	// reopenDrains empties a mailbox opened a second time.
	reopenDrains = "reopen-drains"
	// refusalKeepsKey remembers the keys of refused sends and drops
	// later sends with them as duplicates.
	refusalKeepsKey = "refusal-keeps-key"
	// invalidSilent drops invalid messages without a word.
	invalidSilent = "invalid-silent"
	// losesOneIn64 silently acks and drops every 64th message taken.
	losesOneIn64 = "loses-one-in-64"
	// offerDeadLetters offers work as it sends it: a full mailbox
	// dead-letters the offer.
	offerDeadLetters = "offer-dead-letters"
	// offerKeepsKey refuses an offer to a full mailbox without a dead
	// letter, but remembers its key and drops the next offer with it.
	offerKeepsKey = "offer-keeps-key"
)

// mutant is the in-memory bus with one behaviour broken by its knob; with
// no knob it is the bus itself.
type mutant struct {
	*bus.Bus
	knob string

	mu      sync.Mutex
	opened  map[string]bool
	refused map[string]bool
	taken   atomic.Int64
}

var _ transport.Transport = (*mutant)(nil)

// hiddenKey is where ignoresIdempotency keeps the key out of the bus's sight.
const hiddenKey = "hidden_idempotency_key"

func (b *mutant) OpenMailbox(agent string, capacity int) error {
	b.mu.Lock()
	again := b.opened[agent]
	b.opened[agent] = true
	b.mu.Unlock()
	switch {
	case b.knob == ignoresCapacity:
		capacity = 0
	case b.knob == reopenDrains && again:
		ms, err := b.Bus.TakeWork(context.Background(), agent, 0)
		for _, m := range ms {
			_ = b.Bus.Ack(context.Background(), m)
		}
		return err
	}
	return b.Bus.OpenMailbox(agent, capacity)
}

func (b *mutant) SendWork(ctx context.Context, m *transport.Message) error {
	switch b.knob {
	case fifo:
		m.Priority = transport.PriorityNormal
	case ignoresTTL:
		m.TTL = 0
	case ignoresIdempotency:
		m.Metadata = maps.Clone(m.Metadata)
		m.Metadata[hiddenKey] = m.Metadata[transport.MetadataIdempotencyKey]
		delete(m.Metadata, transport.MetadataIdempotencyKey)
	case refusesSilently:
		b.mu.Lock()
		known := b.opened[m.To]
		b.mu.Unlock()
		if !known {
			return &transport.UnknownAgentError{Agent: m.To}
		}
		for _, a := range b.Metrics().Agents {
			if a.Agent == m.To && a.Depth >= a.Capacity {
				return &transport.QueueFullError{Agent: a.Agent, Capacity: a.Capacity}
			}
		}
	}
	key := m.Key()
	if b.knob == refusalKeepsKey {
		b.mu.Lock()
		held := b.refused[key]
		b.mu.Unlock()
		if held {
			return nil
		}
	}
	err := b.Bus.SendWork(ctx, m)
	switch {
	case b.knob == invalidSilent && errors.Is(err, transport.ErrValidation):
		return nil
	case b.knob == refusalKeepsKey && err != nil:
		b.mu.Lock()
		b.refused[key] = true
		b.mu.Unlock()
	}
	return err
}

func (b *mutant) OfferWork(ctx context.Context, m *transport.Message) error {
	switch b.knob {
	case offerDeadLetters:
		return b.SendWork(ctx, m)
	case offerKeepsKey:
		key := m.Key()
		b.mu.Lock()
		held := b.refused[key]
		b.mu.Unlock()
		if held {
			return nil
		}
		err := b.Bus.OfferWork(ctx, m)
		if err != nil {
			b.mu.Lock()
			b.refused[key] = true
			b.mu.Unlock()
		}
		return err
	}
	return b.Bus.OfferWork(ctx, m)
}

func (b *mutant) TakeWork(ctx context.Context, agent string, max int) ([]*transport.Message, error) {
	ms, err := b.Bus.TakeWork(ctx, agent, max)
	switch b.knob {
	case autoAck:
		for _, m := range ms {
			_ = b.Bus.Ack(ctx, m)
		}
	case ignoresIdempotency:
		for _, m := range ms {
			unhide(m)
		}
	case losesOneIn64:
		ms = slices.DeleteFunc(ms, func(m *transport.Message) bool {
			if b.taken.Add(1)%64 != 0 {
				return false
			}
			_ = b.Bus.Ack(ctx, m)
			return true
		})
	}
	return ms, err
}

// unhide puts back the key ignoresIdempotency hid from the bus.
func unhide(m *transport.Message) {
	if k, ok := m.Metadata[hiddenKey]; ok {
		m.Metadata[transport.MetadataIdempotencyKey] = k
		delete(m.Metadata, hiddenKey)
	}
}

func (b *mutant) Ack(ctx context.Context, m *transport.Message) error {
	if b.knob == ackIgnored || b.knob == autoAck {
		return nil
	}
	return b.Bus.Ack(ctx, m)
}

func (b *mutant) Nack(ctx context.Context, m *transport.Message) error {
	if b.knob == autoAck {
		return nil
	}
	return b.Bus.Nack(ctx, m)
}

func (b *mutant) Reject(ctx context.Context, m *transport.Message, reason string) error {
	switch b.knob {
	case autoAck:
		return nil
	case rejectRedelivers:
		return b.Bus.Nack(ctx, m)
	}
	return b.Bus.Reject(ctx, m, reason)
}

func (b *mutant) OnDeadLetter(f func(transport.DeadLetter)) (cancel func()) {
	if b.knob == ignoresIdempotency {
		g := f
		f = func(d transport.DeadLetter) {
			unhide(d.Message)
			g(d)
		}
	}
	cancel = b.Bus.OnDeadLetter(f)
	if b.knob == cancelIgnored {
		return func() {}
	}
	return cancel
}

func (b *mutant) Metrics() transport.Snapshot {
	s := b.Bus.Metrics()
	switch b.knob {
	case inFlightUncounted:
		s.InFlight = 0
	case deliveredAtTake:
		s.Delivered += uint64(s.InFlight)
		s.InFlight = 0
	case refusalsUncounted:
		refused := s.DeadLettersByReason[transport.ReasonReceiverNotFound] + s.DeadLettersByReason[transport.ReasonQueueOverflow]
		s.Accepted -= refused
		s.DeadLettered -= refused
		s.DeadLettersByReason[transport.ReasonReceiverNotFound] = 0
		s.DeadLettersByReason[transport.ReasonQueueOverflow] = 0
	}
	return s
}

const knobEnv = "TRANSPORTTEST_MUTANT"

// TestMutantBus runs the suite against the bus wrapped as a mutant, broken
// by the knob in $TRANSPORTTEST_MUTANT. Without a knob it must pass, so that
// each mutant fails because of its knob alone.
func TestMutantBus(t *testing.T) {
	knob := os.Getenv(knobEnv)
	transporttest.Run(t, func(t *testing.T) transporttest.Harness {
		b, h := openBus(t)
		h.Transport = &mutant{Bus: b, knob: knob, opened: map[string]bool{}, refused: map[string]bool{}}
		return h
	})
}

// TestSuiteCatchesMutants runs the suite against each mutant, in a child
// process, and checks that the subtest guarding each break fails.
func TestSuiteCatchesMutants(t *testing.T) {
	if os.Getenv(knobEnv) != "" {
		return // in the child process only TestMutantBus, with a broken knob, is of interest
	}
	tests := []struct{ knob, subtest string }{
		{fifo, "PriorityThenSendOrder"},
		{ignoresCapacity, "CapacityRefusesAndDeadLetters"},
		{ignoresCapacity, "AccountingAddsUp"},
		{ackIgnored, "AckSettles"},
		{ackIgnored, "ConcurrentSendAndTake"},
		{autoAck, "AckSettles"},
		{autoAck, "NackRedelivers"},
		{autoAck, "RedeliveryAfterAckWait"},
		{autoAck, "RejectDeadLetters"},
		{refusesSilently, "UnknownAgentDeadLettered"},
		{refusesSilently, "CapacityRefusesAndDeadLetters"},
		{refusesSilently, "AccountingAddsUp"},
		{ignoresTTL, "ExpiredNeverDelivered"},
		{ignoresTTL, "AccountingAddsUp"},
		{ignoresIdempotency, "IdempotencyKeyDedupes"},
		{ignoresIdempotency, "AccountingAddsUp"},
		{inFlightUncounted, "AccountingAddsUp"},
		{inFlightUncounted, "AckSettles"},
		{deliveredAtTake, "AccountingAddsUp"},
		{deliveredAtTake, "AckSettles"},
		{refusalsUncounted, "AccountingAddsUp"},
		{refusalsUncounted, "UnknownAgentDeadLettered"},
		{cancelIgnored, "OnDeadLetterCancel"},
		{rejectRedelivers, "RejectDeadLetters"},
		{rejectRedelivers, "AccountingAddsUp"},
		{reopenDrains, "OpenMailboxTwiceKeepsQueue"},
		{refusalKeepsKey, "UnknownAgentDeadLettered"},
		{refusalKeepsKey, "CapacityRefusesAndDeadLetters"},
		{invalidSilent, "InvalidMessageRefused"},
		{losesOneIn64, "ConcurrentSendAndTake"},
		{offerDeadLetters, "OfferToAFullMailboxRefusedNotDeadLettered"},
		{offerKeepsKey, "OfferToAFullMailboxRefusedNotDeadLettered"},
	}
	for _, tt := range tests {
		t.Run(tt.knob+"/"+tt.subtest, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestMutantBus$/^"+tt.subtest+"$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), knobEnv+"="+tt.knob)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("suite passed the bus with knob %q; want %s to fail:\n%s", tt.knob, tt.subtest, out)
			}
			if want := "--- FAIL: TestMutantBus/" + tt.subtest; !strings.Contains(string(out), want) {
				t.Fatalf("got output without %q:\n%s", want, out)
			}
		})
	}
	t.Run("EverySubtestCatchesOne", func(t *testing.T) {
		for _, name := range transporttest.SubtestNames() {
			if !slices.ContainsFunc(tests, func(tt struct{ knob, subtest string }) bool { return tt.subtest == name }) {
				t.Errorf("got no mutant that %s catches, want at least one", name)
			}
		}
	})
}
