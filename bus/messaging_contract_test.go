package bus_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/transport"
)

// Scenarios about single messages: send, receive, broadcast,
// correlation, priority, TTL, validation, acknowledgement, content rules.

func TestSendMessageBetweenAgents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"FlightAgent", "PaymentAgent"})
		m := &transport.Message{
			From: "FlightAgent", To: "PaymentAgent", Type: transport.MessageRequest,
			Content: map[string]any{"action": "process_payment", "parameters": map[string]any{"flight": "Flight A", "amount": 450}},
		}
		if err := b.Send(t.Context(), m); err != nil {
			t.Fatalf("got %v, want the message sent", err)
		}
		id, err := uuid.Parse(m.MessageID)
		if err != nil || id.Version() != 4 {
			t.Errorf("got message_id %q (%v), want a UUID v4", m.MessageID, err)
		}
		if m.From != "FlightAgent" || m.To != "PaymentAgent" || m.Type != transport.MessageRequest || m.Content["action"] != "process_payment" {
			t.Errorf("got %+v, want the sender's fields kept", m)
		}
		if m.Timestamp.Location() != time.UTC || !m.Timestamp.Equal(time.Now()) {
			t.Errorf("got timestamp %v, want now in UTC", m.Timestamp)
		}
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var wire map[string]any
		if err := json.Unmarshal(data, &wire); err != nil {
			t.Fatal(err)
		}
		if _, err := time.Parse(time.RFC3339Nano, wire["timestamp"].(string)); err != nil || !strings.HasSuffix(wire["timestamp"].(string), "Z") {
			t.Errorf("got timestamp %v in JSON, want ISO 8601 UTC", wire["timestamp"])
		}
		for _, f := range []string{"message_id", "from_agent", "to_agent", "message_type", "content", "timestamp"} {
			if _, ok := wire[f]; !ok {
				t.Errorf("got JSON %s, want field %s", data, f)
			}
		}
		s := assertBalanced(t, b)
		if got := depth(s, "PaymentAgent"); got != 1 {
			t.Errorf("got PaymentAgent queue depth %d, want 1", got)
		}
		if s.Send.Count != 1 || s.Send.P95 >= 10*time.Millisecond {
			t.Errorf("got send latency %+v, want one sample under 10ms", s.Send)
		}
	})
}

func TestReceiveMessages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"PaymentAgent"})
		for i, from := range []string{"FlightAgent", "HotelAgent", "CarAgent"} {
			m := request(from, "PaymentAgent", "pay")
			m.MessageID = fmt.Sprintf("msg_%03d", i+1)
			mustSend(t, b, m)
			time.Sleep(time.Second)
		}
		got := receiveAll(t, b, "PaymentAgent")
		if want := []string{"msg_001", "msg_002", "msg_003"}; !slices.Equal(ids(got), want) {
			t.Errorf("got %v, want %v", ids(got), want)
		}
		if again := receiveAll(t, b, "PaymentAgent"); len(again) != 0 {
			t.Errorf("got %d messages on a second receive, want 0 (removed from the queue)", len(again))
		}
		s := assertBalanced(t, b)
		if s.Delivered != 3 || s.Receive.Count != 2 || s.Receive.P95 >= 10*time.Millisecond {
			t.Errorf("got delivered %d receive %+v, want 3 delivered and 2 receive calls under 10ms", s.Delivered, s.Receive)
		}
	})
}

func TestMessagePriority(t *testing.T) {
	start := time.Date(2025, 11, 16, 10, 0, 0, 0, time.UTC)
	clk := clock.NewManual(start)
	b := newBus(t, []string{"PaymentAgent"}, bus.WithClock(clk))
	for _, tc := range []struct {
		id       string
		priority string
		at       time.Duration
	}{{"msg_001", "LOW", 0}, {"msg_002", "HIGH", 5 * time.Second}, {"msg_003", "MEDIUM", 2 * time.Second}} {
		p, err := transport.ParsePriority(tc.priority)
		if err != nil {
			t.Fatal(err)
		}
		m := request("FlightAgent", "PaymentAgent", "pay")
		m.MessageID, m.Priority, m.Timestamp = tc.id, p, start.Add(tc.at)
		mustSend(t, b, m)
	}
	clk.Advance(10 * time.Second)
	got := receiveAll(t, b, "PaymentAgent")
	if want := []string{"msg_002", "msg_003", "msg_001"}; !slices.Equal(ids(got), want) {
		t.Errorf("got %v, want %v (HIGH, MEDIUM, LOW)", ids(got), want)
	}
	assertBalanced(t, b)
}

func TestMessageTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, logs := observed()
		b := newBus(t, []string{"FlightAgent", "PaymentAgent"}, bus.WithLogger(log))
		m := request("FlightAgent", "PaymentAgent", "pay")
		m.TTL = 60 * time.Second
		mustSend(t, b, m)
		time.Sleep(65 * time.Second)
		if got := receiveAll(t, b, "PaymentAgent"); len(got) != 0 {
			t.Fatalf("got %d messages, want the expired one not delivered", len(got))
		}
		s := assertBalanced(t, b)
		if s.Expired != 1 || s.DeadLettersByReason[transport.ReasonTTLExpired] != 1 {
			t.Errorf("got expired %d, dead letters %v; want 1 ttl_expired", s.Expired, s.DeadLettersByReason)
		}
		dl := b.DeadLetters()
		if len(dl) != 1 || dl[0].Reason != transport.ReasonTTLExpired || dl[0].Message.MessageID != m.MessageID {
			t.Errorf("got dead letters %+v, want the message with reason ttl_expired", dl)
		}
		expired := logs.FilterField(zap.String("category", "expiry")).All()
		if len(expired) != 1 || fieldsOf(expired[0])["message_id"] != m.MessageID {
			t.Errorf("got expiry logs %v, want one for %s", expired, m.MessageID)
		}
	})
}

func TestMessageValidationError(t *testing.T) {
	b := newBus(t, []string{"FlightAgent", "PaymentAgent"})
	err := b.Send(t.Context(), &transport.Message{From: "FlightAgent", To: "PaymentAgent", Type: transport.MessageRequest})
	var ve *transport.ValidationError
	if !errors.As(err, &ve) || ve.Field != "content" || err.Error() != "bus: content is required" {
		t.Fatalf("got %v, want *ValidationError %q", err, "bus: content is required")
	}
	if !errors.Is(err, transport.ErrValidation) {
		t.Errorf("got %v, want it to match ErrValidation", err)
	}
	s := assertBalanced(t, b)
	if s.ValidationErrors != 1 || s.Accepted != 0 || depth(s, "PaymentAgent") != 0 {
		t.Errorf("got validation errors %d accepted %d depth %d, want 1 0 0", s.ValidationErrors, s.Accepted, depth(s, "PaymentAgent"))
	}
}

func TestAcknowledgeReceipt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, []string{"Orchestrator", "FlightAgent"})
		req := request("Orchestrator", "FlightAgent", "search_flights")
		req.RequiresAck = true
		mustSend(t, b, req)
		time.Sleep(30 * time.Millisecond)
		got, err := b.ReceiveWait(t.Context(), "FlightAgent")
		if err != nil {
			t.Fatal(err)
		}
		if s := b.Metrics(); s.Agents[0].Agent != "FlightAgent" || s.Agents[0].AwaitingAck != 1 {
			t.Errorf("got %+v, want FlightAgent with 1 message awaiting ack", s.Agents)
		}
		if err := b.Ack(t.Context(), got); err != nil {
			t.Fatal(err)
		}
		acks := receiveAll(t, b, "Orchestrator")
		if len(acks) != 1 {
			t.Fatalf("got %d messages for Orchestrator, want the ACK", len(acks))
		}
		ack := acks[0]
		if ack.Type != transport.MessageAck || ack.CorrelationID != req.MessageID || ack.From != "FlightAgent" || ack.To != "Orchestrator" {
			t.Errorf("got %+v, want ACK FlightAgent -> Orchestrator correlated to %s", ack, req.MessageID)
		}
		if err := b.Ack(t.Context(), got); !errors.Is(err, transport.ErrValidation) {
			t.Errorf("got %v on a second ack, want ErrValidation", err)
		}
		plain := request("Orchestrator", "FlightAgent", "x")
		mustSend(t, b, plain)
		if err := b.Ack(t.Context(), plain); !errors.Is(err, transport.ErrValidation) {
			t.Errorf("got %v acking a message without requires_ack, want ErrValidation", err)
		}
		s := assertBalanced(t, b)
		if s.Acks != 1 || s.Ack.Count != 1 || s.Ack.P95 < 30*time.Millisecond || s.Ack.P95 >= 100*time.Millisecond {
			t.Errorf("got acks %d latency %+v, want 1 of about 30ms (under 100ms)", s.Acks, s.Ack)
		}
	})
}

func TestMessageContentStructureValidation(t *testing.T) {
	b := bus.New()
	t.Cleanup(func() { _ = b.Close() })
	if err := b.Register("PaymentAgent", bus.WithRequiredContent("action", "parameters")); err != nil {
		t.Fatal(err)
	}
	ok := &transport.Message{From: "FlightAgent", To: "PaymentAgent", Type: transport.MessageRequest,
		Content: map[string]any{"action": "process_payment", "parameters": map[string]any{"amount": 450, "flight": "Flight A"}}}
	mustSend(t, b, ok)
	tests := []struct {
		name    string
		content map[string]any
		field   string
		text    string
	}{
		{"missing action", map[string]any{"parameters": map[string]any{}}, "content.action", "bus: content.action is required"},
		{"missing parameters", map[string]any{"action": "process_payment"}, "content.parameters", "bus: content.parameters is required by PaymentAgent"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := b.Send(t.Context(), &transport.Message{From: "FlightAgent", To: "PaymentAgent", Type: transport.MessageRequest, Content: tc.content})
			var ve *transport.ValidationError
			if !errors.As(err, &ve) || ve.Field != tc.field || err.Error() != tc.text {
				t.Errorf("got %v, want %q", err, tc.text)
			}
		})
	}
	got := receiveAll(t, b, "PaymentAgent")
	if len(got) != 1 || got[0] != ok {
		t.Errorf("got %v, want only the valid message accepted", ids(got))
	}
	if s := assertBalanced(t, b); s.ValidationErrors != 2 || s.Accepted != 1 {
		t.Errorf("got validation errors %d accepted %d, want 2 and 1", s.ValidationErrors, s.Accepted)
	}
}
