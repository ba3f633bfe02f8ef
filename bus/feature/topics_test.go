package feature_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/bus/feature"
	"github.com/batonhq/baton/transport"
)

func TestTopic_PublishSubscribeFIFO(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		r := newRouting(t, tr, routingConfig{}, "Pub", "A", "B", "C")
		for _, a := range []string{"A", "B", "Pub"} {
			if err := r.topics.Subscribe(a, "orders"); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.topics.Subscribe("A", "orders"); err != nil {
			t.Errorf("got %v subscribing twice, want nil", err)
		}
		if got := r.topics.Subscribers("orders"); !slices.Equal(got, []string{"A", "B", "Pub"}) {
			t.Errorf("got subscribers %v, want [A B Pub]", got)
		}
		for i := range 3 {
			deliveries, err := r.topics.Publish(t.Context(), "orders", routingRequest("Pub", "", fmt.Sprintf("order-%d", i)))
			if err != nil || len(deliveries) != 2 {
				t.Fatalf("got %v %v, want 2 deliveries (the publisher is skipped)", deliveries, err)
			}
		}
		r.mustSend(t, routingRequest("Pub", "topic:orders", "order-3"))
		for _, a := range []string{"A", "B"} {
			got := r.takeAll(t, a)
			if want := []string{"order-0", "order-1", "order-2", "order-3"}; !slices.Equal(routingActions(got), want) {
				t.Errorf("%s got %v, want %v", a, routingActions(got), want)
			}
			for _, m := range got {
				if m.To != a || m.TopicOf() != "orders" {
					t.Errorf("%s got to %q topic %q, want itself and orders", a, m.To, m.TopicOf())
				}
			}
		}
		if got := r.takeAll(t, "Pub"); len(got) != 0 {
			t.Errorf("got %d messages for the publisher, want 0", len(got))
		}
		if err := r.topics.Unsubscribe("B", "orders"); err != nil {
			t.Fatal(err)
		}
		if _, err := r.topics.Publish(t.Context(), "orders", routingRequest("Pub", "", "order-4")); err != nil {
			t.Fatal(err)
		}
		if got := r.takeAll(t, "B"); len(got) != 0 {
			t.Errorf("got %d messages after unsubscribing, want 0", len(got))
		}
		routingBalanced(t, tr)
		if s := r.topics.Stats(); s.Published != 5 {
			t.Errorf("got %d publications, want 5", s.Published)
		}
	})
}

func TestTopic_RetentionReplaysToLateSubscribers(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		r := newRouting(t, tr, routingConfig{}, "Pub", "Early", "Late", "Later")
		if err := r.topics.Subscribe("Early", "news"); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if _, err := r.topics.Publish(t.Context(), "news", routingRequest("Pub", "", fmt.Sprintf("n%d", i))); err != nil {
				t.Fatal(err)
			}
			r.clock.Advance(20 * time.Minute)
		}
		// now +60m: n0 is exactly an hour old and leaves the window.
		if err := r.topics.Subscribe("Late", "news"); err != nil {
			t.Fatal(err)
		}
		if got := routingActions(r.takeAll(t, "Late")); !slices.Equal(got, []string{"n1", "n2"}) {
			t.Errorf("got replay %v, want [n1 n2]", got)
		}
		r.clock.Advance(time.Hour)
		if err := r.topics.Subscribe("Later", "news"); err != nil {
			t.Fatal(err)
		}
		if got := r.takeAll(t, "Later"); len(got) != 0 {
			t.Errorf("got %d replayed messages after the window, want 0", len(got))
		}
		routingBalanced(t, tr)
	})
}

func TestTopic_RetentionLimitAndDisabled(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		r := newRouting(t, tr, routingConfig{topics: feature.TopicSettings{Retention: time.Hour, RetainMax: 2}}, "Pub", "A")
		for i := range 4 {
			if _, err := r.topics.Publish(t.Context(), "t", routingRequest("Pub", "", fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.topics.Subscribe("A", "t"); err != nil {
			t.Fatal(err)
		}
		if got := routingActions(r.takeAll(t, "A")); !slices.Equal(got, []string{"2", "3"}) {
			t.Errorf("got %v, want the newest two", got)
		}

		off := newRouting(t, tr, routingConfig{topics: feature.TopicSettings{Retention: -1}}, "Pub", "B")
		if _, err := off.topics.Publish(t.Context(), "t", routingRequest("Pub", "", "x")); err != nil {
			t.Fatal(err)
		}
		if err := off.topics.Subscribe("B", "t"); err != nil {
			t.Fatal(err)
		}
		if got := off.takeAll(t, "B"); len(got) != 0 {
			t.Errorf("got %d replayed messages with retention off, want 0", len(got))
		}
	})
}

func TestTopic_Errors(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		r := newRouting(t, tr, routingConfig{}, "A")
		if err := r.topics.Subscribe("A", ""); !errors.Is(err, transport.ErrValidation) {
			t.Errorf("got %v, want ErrValidation for an empty topic", err)
		}
		if err := r.topics.Subscribe("Ghost", "t"); !errors.Is(err, transport.ErrUnknownAgent) {
			t.Errorf("got %v, want ErrUnknownAgent", err)
		}
		if err := r.topics.Unsubscribe("Ghost", "t"); !errors.Is(err, transport.ErrUnknownAgent) {
			t.Errorf("got %v, want ErrUnknownAgent", err)
		}
		if err := r.topics.Unsubscribe("A", "never"); err != nil {
			t.Errorf("got %v, want nil for a topic never used", err)
		}
		if _, err := r.topics.Publish(t.Context(), "", routingRequest("A", "", "x")); !errors.Is(err, transport.ErrValidation) {
			t.Errorf("got %v, want ErrValidation", err)
		}
		if _, err := r.topics.Publish(t.Context(), "t", &transport.Message{From: "A", Type: transport.MessageNotification}); !errors.Is(err, transport.ErrValidation) {
			t.Errorf("got %v, want ErrValidation for a message without content", err)
		}
	})
}
