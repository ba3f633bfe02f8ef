package feature_test

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/batonhq/baton/bus/feature"
	"github.com/batonhq/baton/transport"
)

func TestBroadcastMessageToAllAgents(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		core, logs := observer.New(zapcore.DebugLevel)
		agents := []string{"Flight", "Hotel", "Car", "Payment", "Notify"}
		r := newRouting(t, tr, routingConfig{bc: feature.BroadcastSettings{Logger: zap.New(core)}}, append([]string{"Orchestrator"}, agents...)...)
		content := map[string]any{"action": "alert", "alert": "System maintenance in 10 minutes"}
		deliveries, err := r.bc.Broadcast(t.Context(), &transport.Message{From: "Orchestrator", Content: content})
		if err != nil {
			t.Fatal(err)
		}
		if len(deliveries) != 5 {
			t.Fatalf("got %d deliveries, want 5", len(deliveries))
		}
		if got := r.takeAll(t, "Orchestrator"); len(got) != 0 {
			t.Errorf("got %d messages for the sender, want 0", len(got))
		}
		var first *transport.Message
		for _, a := range agents {
			got := r.takeAll(t, a)
			if len(got) != 1 {
				t.Fatalf("%s got %d messages, want 1", a, len(got))
			}
			m := got[0]
			if m.To != a || m.Type != transport.MessageBroadcast || !reflect.DeepEqual(m.Content, content) {
				t.Errorf("%s got %+v, want the broadcast addressed to it", a, m)
			}
			if first == nil {
				first = m
				continue
			}
			same := *m
			same.To, same.MessageID = first.To, first.MessageID
			if !reflect.DeepEqual(&same, first) {
				t.Errorf("got %+v, want it identical to %+v except to_agent and message_id", m, first)
			}
		}
		entries := logs.FilterField(zap.String("category", "broadcast")).All()
		if len(entries) != 1 || entries[0].ContextMap()["recipients"] != int64(5) {
			t.Errorf("got broadcast log %v, want one entry with 5 recipients", entries)
		}
		routingBalanced(t, tr)
		// The routing clock stands still: the latency is exactly zero.
		if s := r.bc.Stats(); s.Broadcasts != 1 || s.Latency.Count != 1 || s.Latency.P50 != 0 {
			t.Errorf("got %d broadcasts, latency %+v; want 1 of 0s", s.Broadcasts, s.Latency)
		}
	})
}

func TestBroadcastWithSelectiveTargeting(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		core, logs := observer.New(zapcore.DebugLevel)
		r := newRouting(t, tr, routingConfig{bc: feature.BroadcastSettings{Logger: zap.New(core)}})
		for agent, typ := range map[string]string{"Orchestrator": "orchestrator", "FlightAgent": "booking", "HotelAgent": "booking",
			"CarAgent": "booking", "PaymentAgent": "payment", "NotificationAgent": "notification"} {
			if err := r.bc.OpenTypedMailbox(agent, typ, 0); err != nil {
				t.Fatal(err)
			}
		}
		deliveries, err := r.bc.BroadcastToTypes(t.Context(), []string{"booking"},
			&transport.Message{From: "Orchestrator", Content: map[string]any{"action": "alert", "alert": "Booking API maintenance"}})
		if err != nil {
			t.Fatal(err)
		}
		var to []string
		for _, d := range deliveries {
			to = append(to, d.To)
		}
		if want := []string{"CarAgent", "FlightAgent", "HotelAgent"}; !reflect.DeepEqual(to, want) {
			t.Errorf("got deliveries to %v, want %v", to, want)
		}
		for agent, want := range map[string]int{"FlightAgent": 1, "HotelAgent": 1, "CarAgent": 1, "PaymentAgent": 0, "NotificationAgent": 0} {
			if got := len(r.takeAll(t, agent)); got != want {
				t.Errorf("%s got %d messages, want %d", agent, got, want)
			}
		}
		if got := logs.FilterField(zap.String("category", "broadcast")).Len(); got != 1 {
			t.Errorf("got %d broadcast log entries, want 1", got)
		}
		if _, err := r.bc.BroadcastToTypes(t.Context(), nil, routingRequest("Orchestrator", "*", "x")); err == nil {
			t.Error("got nil for a broadcast to no type, want a validation error")
		}
	})
}

// TestBroadcast_SendToStarAndFailedCopies sends to "*" through the whole
// stack (the way SendWork broadcasts) and reports the copy that failed:
// an agent whose mailbox is gone from the transport.
func TestBroadcast_SendToStarAndFailedCopies(t *testing.T) {
	b := newBus(t) // Unregister is the bus's: natsbus cannot remove a mailbox
	r := newRouting(t, b, routingConfig{}, "A", "B", "C")
	if err := b.Unregister("C"); err != nil {
		t.Fatal(err)
	}
	err := r.top().SendWork(t.Context(), routingNotice("A", "*", "all"))
	if !errors.Is(err, transport.ErrUnknownAgent) {
		t.Fatalf("got %v, want the copy to C refused as ErrUnknownAgent", err)
	}
	if got := routingActions(r.takeAll(t, "B")); !slices.Equal(got, []string{"all"}) {
		t.Errorf("got %v, want B's copy", got)
	}
	routingBalanced(t, b)
}
