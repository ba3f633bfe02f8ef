package bus_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/transport"
)

func actions(msgs []*transport.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Action()
	}
	return out
}

func TestTopic_PublishSubscribeFIFO(t *testing.T) {
	b := newBus(t, []string{"Pub", "A", "B", "C"})
	for _, a := range []string{"A", "B", "Pub"} {
		if err := b.Subscribe(a, "orders"); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Subscribe("A", "orders"); err != nil {
		t.Errorf("got %v subscribing twice, want nil", err)
	}
	if got := b.Subscribers("orders"); !slices.Equal(got, []string{"A", "B", "Pub"}) {
		t.Errorf("got subscribers %v, want [A B Pub]", got)
	}
	for i := range 3 {
		deliveries, err := b.Publish(t.Context(), "orders", request("Pub", "", fmt.Sprintf("order-%d", i)))
		if err != nil || len(deliveries) != 2 {
			t.Fatalf("got %v %v, want 2 deliveries (the publisher is skipped)", deliveries, err)
		}
	}
	mustSend(t, b, request("Pub", "topic:orders", "order-3"))
	for _, a := range []string{"A", "B"} {
		got := receiveAll(t, b, a)
		if want := []string{"order-0", "order-1", "order-2", "order-3"}; !slices.Equal(actions(got), want) {
			t.Errorf("%s got %v, want %v", a, actions(got), want)
		}
		for _, m := range got {
			if m.To != a || m.TopicOf() != "orders" {
				t.Errorf("%s got to %q topic %q, want itself and orders", a, m.To, m.TopicOf())
			}
		}
	}
	if got := receiveAll(t, b, "Pub"); len(got) != 0 {
		t.Errorf("got %d messages for the publisher, want 0", len(got))
	}
	if err := b.Unsubscribe("B", "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Publish(t.Context(), "orders", request("Pub", "", "order-4")); err != nil {
		t.Fatal(err)
	}
	if got := receiveAll(t, b, "B"); len(got) != 0 {
		t.Errorf("got %d messages after unsubscribing, want 0", len(got))
	}
	if s := assertBalanced(t, b); s.Published != 5 {
		t.Errorf("got %d publications, want 5", s.Published)
	}
}

func TestTopic_RetentionReplaysToLateSubscribers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"Pub", "Early", "Late", "Later"})
		if err := b.Subscribe("Early", "news"); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if _, err := b.Publish(t.Context(), "news", request("Pub", "", fmt.Sprintf("n%d", i))); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Minute)
		}
		// now +60m: n0 is exactly an hour old and leaves the window.
		if err := b.Subscribe("Late", "news"); err != nil {
			t.Fatal(err)
		}
		if got := actions(receiveAll(t, b, "Late")); !slices.Equal(got, []string{"n1", "n2"}) {
			t.Errorf("got replay %v, want [n1 n2]", got)
		}
		time.Sleep(time.Hour)
		if err := b.Subscribe("Later", "news"); err != nil {
			t.Fatal(err)
		}
		if got := receiveAll(t, b, "Later"); len(got) != 0 {
			t.Errorf("got %d replayed messages after the window, want 0", len(got))
		}
		assertBalanced(t, b)
	})
}

func TestTopic_RetentionLimitAndDisabled(t *testing.T) {
	b := newBus(t, []string{"Pub", "A"}, bus.WithTopicRetention(time.Hour, 2))
	for i := range 4 {
		if _, err := b.Publish(t.Context(), "t", request("Pub", "", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Subscribe("A", "t"); err != nil {
		t.Fatal(err)
	}
	if got := actions(receiveAll(t, b, "A")); !slices.Equal(got, []string{"2", "3"}) {
		t.Errorf("got %v, want the newest two", got)
	}

	off := newBus(t, []string{"Pub", "A"}, bus.WithTopicRetention(0, 0))
	if _, err := off.Publish(t.Context(), "t", request("Pub", "", "x")); err != nil {
		t.Fatal(err)
	}
	if err := off.Subscribe("A", "t"); err != nil {
		t.Fatal(err)
	}
	if got := receiveAll(t, off, "A"); len(got) != 0 {
		t.Errorf("got %d replayed messages with retention off, want 0", len(got))
	}
}

func TestTopic_Errors(t *testing.T) {
	b := newBus(t, []string{"A"})
	if err := b.Subscribe("A", ""); !errors.Is(err, transport.ErrValidation) {
		t.Errorf("got %v, want ErrValidation for an empty topic", err)
	}
	if err := b.Subscribe("Ghost", "t"); !errors.Is(err, transport.ErrUnknownAgent) {
		t.Errorf("got %v, want ErrUnknownAgent", err)
	}
	if err := b.Unsubscribe("Ghost", "t"); !errors.Is(err, transport.ErrUnknownAgent) {
		t.Errorf("got %v, want ErrUnknownAgent", err)
	}
	if err := b.Unsubscribe("A", "never"); err != nil {
		t.Errorf("got %v, want nil for a topic never used", err)
	}
	if _, err := b.Publish(t.Context(), "", request("A", "", "x")); !errors.Is(err, transport.ErrValidation) {
		t.Errorf("got %v, want ErrValidation", err)
	}
	if _, err := b.Publish(t.Context(), "t", &transport.Message{From: "A", Type: transport.MessageNotification}); !errors.Is(err, transport.ErrValidation) {
		t.Errorf("got %v, want ErrValidation for a message without content", err)
	}
}
