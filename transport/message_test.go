package transport_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/transport"
)

func validMessage() *transport.Message {
	return &transport.Message{
		Type:    transport.MessageRequest,
		From:    "FlightAgent",
		To:      "PaymentAgent",
		Content: map[string]any{"action": "process_payment", "parameters": map[string]any{"amount": 450.0}},
	}
}

func TestMessage_Validate(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(m *transport.Message)
		field  string
		reason string // substring of the error text; "" when valid
	}{
		{"valid", func(m *transport.Message) {}, "", ""},
		{"missing content", func(m *transport.Message) { m.Content = nil }, "content", "bus: content is required"},
		{"missing action", func(m *transport.Message) { delete(m.Content, "action") }, "content.action", "bus: content.action is required"},
		{"empty action", func(m *transport.Message) { m.Content["action"] = "" }, "content.action", "bus: content.action is required"},
		{"action not a string", func(m *transport.Message) { m.Content["action"] = 3 }, "content.action", "bus: content.action must be a string"},
		{"missing to", func(m *transport.Message) { m.To = "" }, "to_agent", "bus: to_agent is required"},
		{"topic without name", func(m *transport.Message) { m.To = "topic:" }, "to_agent", "bus: to_agent names no topic"},
		{"missing from", func(m *transport.Message) { m.From = "" }, "from_agent", "bus: from_agent is required"},
		{"missing type", func(m *transport.Message) { m.Type = "" }, "message_type", "bus: message_type is required"},
		{"unknown type", func(m *transport.Message) { m.Type = "SHOUT" }, "message_type", `bus: message_type is unknown: "SHOUT"`},
		{"unknown priority", func(m *transport.Message) { m.Priority = 9 }, "priority", "bus: priority is unknown: 9"},
		{"response without in_reply_to", func(m *transport.Message) { m.Type = transport.MessageResponse }, "in_reply_to", "bus: in_reply_to is required for RESPONSE"},
		{"ack without in_reply_to", func(m *transport.Message) { m.Type = transport.MessageAck }, "in_reply_to", "bus: in_reply_to is required for ACK"},
		{"response with in_reply_to", func(m *transport.Message) { m.Type = transport.MessageResponse; m.InReplyTo = "x" }, "", ""},
		{"negative ttl", func(m *transport.Message) { m.TTL = -time.Second }, "ttl", "bus: ttl must not be negative"},
		{"ttl over 24h", func(m *transport.Message) { m.TTL = 25 * time.Hour }, "ttl", "bus: ttl exceeds the maximum of 24h"},
		{"ttl of 24h", func(m *transport.Message) { m.TTL = 24 * time.Hour }, "", ""},
		{"payload over 1 MiB", func(m *transport.Message) { m.Content["blob"] = strings.Repeat("x", 1<<20) }, "content", "bus: content exceeds the 1 MiB payload limit"},
		{"metadata pushes over 1 MiB", func(m *transport.Message) {
			m.Content["blob"] = strings.Repeat("x", 600<<10)
			m.Metadata = map[string]any{"blob": strings.Repeat("y", 600<<10)}
		}, "content", "exceeds the 1 MiB payload limit"},
		{"payload just under 1 MiB", func(m *transport.Message) { m.Content["blob"] = strings.Repeat("x", 1<<19) }, "", ""},
		{"NaN in content", func(m *transport.Message) { m.Content["x"] = math.NaN() }, "content.x", "bus: content.x is NaN, which JSON cannot hold"},
		{"channel in metadata", func(m *transport.Message) { m.Metadata = map[string]any{"c": make(chan int)} }, "metadata.c", "bus: metadata.c cannot be encoded as JSON"},
		{"invalid UTF-8 deep in content", func(m *transport.Message) {
			m.Content["order"] = map[string]any{"items": []any{"a", "b", "\xff"}}
		}, "content.order.items[2]", "bus: content.order.items[2] is not valid UTF-8"},
		{"escapes push over 1 MiB", func(m *transport.Message) { m.Content["blob"] = strings.Repeat("\"", 600<<10) }, "content", "exceeds the 1 MiB payload limit"},
		{"content and metadata just under 1 MiB together", func(m *transport.Message) {
			m.Content["blob"] = strings.Repeat("x", 300<<10)
			m.Metadata = map[string]any{"blob": strings.Repeat("y", 600<<10)}
		}, "", ""},
		{"many numbers under 1 MiB", func(m *transport.Message) {
			m.Content["n"] = slices.Repeat([]any{1.0}, 100_000)
		}, "", ""},
		{"content nested 200 deep", func(m *transport.Message) { m.Content["deep"] = nested(200) }, "", ""},
		{"content nested past 256", func(m *transport.Message) { m.Content["deep"] = nested(300) }, "content.deep" + strings.Repeat(".k", 256), "nests deeper than 256 levels"},
		{"struct in content", func(m *transport.Message) { m.Content["s"] = struct{ A int }{1} }, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := validMessage()
			tc.edit(m)
			err := m.Validate()
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			var ve *transport.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("got %v, want a *ValidationError", err)
			}
			if ve.Field != tc.field {
				t.Errorf("got field %q, want %q", ve.Field, tc.field)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("got %q, want it to contain %q", err, tc.reason)
			}
			if !errors.Is(err, transport.ErrValidation) || !errors.Is(err, transport.ErrCommunication) {
				t.Errorf("got %v, want it to match ErrValidation and ErrCommunication", err)
			}
		})
	}
}

// nested returns a value n maps deep.
func nested(n int) any {
	var v any = "leaf"
	for range n {
		v = map[string]any{"k": v}
	}
	return v
}

func TestMessage_ValidateNil(t *testing.T) {
	var m *transport.Message
	if err := m.Validate(); !errors.Is(err, transport.ErrValidation) {
		t.Fatalf("got %v, want ErrValidation", err)
	}
}

func TestParsePriority(t *testing.T) {
	tests := []struct {
		in   string
		want transport.Priority
		err  bool
	}{
		{"CRITICAL", transport.PriorityCritical, false},
		{"urgent", transport.PriorityCritical, false},
		{"High", transport.PriorityHigh, false},
		{"NORMAL", transport.PriorityNormal, false},
		{"medium", transport.PriorityNormal, false},
		{" low ", transport.PriorityLow, false},
		{"BLOCKER", transport.PriorityNormal, true},
		{"", transport.PriorityNormal, true},
	}
	for _, tc := range tests {
		got, err := transport.ParsePriority(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParsePriority(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
		if err != nil && !errors.Is(err, transport.ErrValidation) {
			t.Errorf("ParsePriority(%q) error %v does not match ErrValidation", tc.in, err)
		}
	}
}

func TestPriority_OrderAndStrings(t *testing.T) {
	if !(transport.PriorityLow < transport.PriorityNormal && transport.PriorityNormal < transport.PriorityHigh && transport.PriorityHigh < transport.PriorityCritical) {
		t.Fatal("got priorities out of order, want LOW < NORMAL < HIGH < CRITICAL")
	}
	var zero transport.Priority
	if zero != transport.PriorityNormal {
		t.Errorf("got zero value %v, want NORMAL", zero)
	}
	for p, want := range map[transport.Priority]string{transport.PriorityLow: "LOW", transport.PriorityNormal: "NORMAL", transport.PriorityHigh: "HIGH", transport.PriorityCritical: "CRITICAL", 7: "Priority(7)"} {
		if got := p.String(); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

func TestPriorityFromRank(t *testing.T) {
	tests := map[int]transport.Priority{-3: transport.PriorityCritical, 1: transport.PriorityCritical, 2: transport.PriorityHigh, 4: transport.PriorityHigh,
		5: transport.PriorityNormal, 9: transport.PriorityNormal, 10: transport.PriorityLow, 100: transport.PriorityLow}
	for rank, want := range tests {
		if got := transport.PriorityFromRank(rank); got != want {
			t.Errorf("PriorityFromRank(%d) = %v, want %v", rank, got, want)
		}
	}
}

func TestMessage_JSONRoundTrip(t *testing.T) {
	m := &transport.Message{
		MessageID:      "6f1c0d4e-8a7b-4c1e-9f00-1234567890ab",
		ConversationID: "conv-1",
		CorrelationID:  "cor_123",
		InReplyTo:      "req-1",
		Type:           transport.MessageResponse,
		From:           "PaymentAgent",
		To:             "HotelAgent",
		Priority:       transport.PriorityHigh,
		Content:        map[string]any{"action": "payment_done", "amount": 450.5, "ok": true, "items": []any{"a", 1.0, nil}},
		Metadata:       map[string]any{"workflow_id": "wf_refund_123"},
		TTL:            90*time.Second + 250*time.Millisecond + 1,
		RequiresAck:    true,
		Sequence:       42,
		Timestamp:      time.Date(2025, 11, 16, 10, 0, 5, 123456789, time.FixedZone("CET", 3600)),
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"timestamp":"2025-11-16T09:00:05.123456789Z"`, `"ttl":90.250000001`, `"priority":"HIGH"`, `"message_type":"RESPONSE"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("got %s, want it to contain %s", data, want)
		}
	}
	var got transport.Message
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := *m
	want.Timestamp = m.Timestamp.UTC()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	again, err := json.Marshal(&got)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(data) {
		t.Errorf("got %s, want %s", again, data)
	}
}

func TestMessage_UnmarshalJSONForms(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		ttl     time.Duration
		ts      time.Time
		prio    transport.Priority
		errText string
	}{
		{"seconds", `{"ttl":60}`, time.Minute, time.Time{}, transport.PriorityNormal, ""},
		{"fraction", `{"ttl":0.5}`, 500 * time.Millisecond, time.Time{}, transport.PriorityNormal, ""},
		{"exponent", `{"ttl":1e2}`, 100 * time.Second, time.Time{}, transport.PriorityNormal, ""},
		{"duration string", `{"ttl":"1m30s"}`, 90 * time.Second, time.Time{}, transport.PriorityNormal, ""},
		{"null ttl", `{"ttl":null}`, 0, time.Time{}, transport.PriorityNormal, ""},
		{"negative", `{"ttl":-5}`, -5 * time.Second, time.Time{}, transport.PriorityNormal, ""},
		{"too precise", `{"ttl":1.0000000001}`, 0, time.Time{}, transport.PriorityNormal, "bus: ttl is finer than a nanosecond"},
		{"huge", `{"ttl":99999999999999999999}`, 0, time.Time{}, transport.PriorityNormal, "bus: ttl is out of range"},
		{"bad string", `{"ttl":"soon"}`, 0, time.Time{}, transport.PriorityNormal, `bus: ttl is not a duration: "soon"`},
		{"timestamp without zone", `{"timestamp":"2025-11-16T10:00:00"}`, 0, time.Date(2025, 11, 16, 10, 0, 0, 0, time.UTC), transport.PriorityNormal, ""},
		{"timestamp with offset", `{"timestamp":"2025-11-16T10:00:00+02:00"}`, 0, time.Date(2025, 11, 16, 8, 0, 0, 0, time.UTC), transport.PriorityNormal, ""},
		{"bad timestamp", `{"timestamp":"yesterday"}`, 0, time.Time{}, transport.PriorityNormal, `bus: timestamp is not ISO 8601: "yesterday"`},
		{"alias priority", `{"priority":"MEDIUM"}`, 0, time.Time{}, transport.PriorityNormal, ""},
		{"urgent priority", `{"priority":"urgent"}`, 0, time.Time{}, transport.PriorityCritical, ""},
		{"numeric priority", `{"priority":1}`, 0, time.Time{}, transport.PriorityNormal, "bus: priority must be a priority name string"},
		{"unknown priority", `{"priority":"BLOCKER"}`, 0, time.Time{}, transport.PriorityNormal, `bus: priority is unknown: "BLOCKER"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m transport.Message
			err := json.Unmarshal([]byte(tc.in), &m)
			if tc.errText != "" {
				if err == nil || err.Error() != tc.errText {
					t.Fatalf("got %v, want %q", err, tc.errText)
				}
				if !errors.Is(err, transport.ErrValidation) {
					t.Errorf("got %v, want it to match ErrValidation", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.TTL != tc.ttl || !m.Timestamp.Equal(tc.ts) || m.Priority != tc.prio {
				t.Errorf("got ttl %v ts %v prio %v, want %v %v %v", m.TTL, m.Timestamp, m.Priority, tc.ttl, tc.ts, tc.prio)
			}
		})
	}
}

func TestMessage_MarshalInvalidPriority(t *testing.T) {
	m := validMessage()
	m.Priority = 12
	if _, err := json.Marshal(m); err == nil || !errors.Is(err, transport.ErrValidation) {
		t.Fatalf("got %v, want an error matching ErrValidation", err)
	}
}

func TestMessage_CloneAndHelpers(t *testing.T) {
	m := validMessage()
	m.Metadata = map[string]any{"k": "v"}
	c := m.Clone()
	c.Content["action"] = "changed"
	c.Metadata["k"] = "changed"
	if m.Action() != "process_payment" || m.Metadata["k"] != "v" {
		t.Errorf("got original %v %v, want it untouched by edits of the clone", m.Content, m.Metadata)
	}
	m.To = "topic:orders"
	if name, ok := m.Topic(); !ok || name != "orders" || m.TopicOf() != "orders" {
		t.Errorf("got topic %q %v, want orders true", name, ok)
	}
	m.Timestamp = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if got, want := m.ExpiresAt(), m.Timestamp.Add(transport.DefaultTTL); !got.Equal(want) {
		t.Errorf("got expiry %v, want %v", got, want)
	}
}

func TestMessage_JSONDeliveryFields(t *testing.T) {
	in := `{"message_id":"m1","message_type":"HANDOFF","from_agent":"engine","to_agent":"seller","priority":"NORMAL",` +
		`"content":{"action":"handoff"},"requires_ack":true,"ack_timeout":2.5,"delivery_count":2,"idempotency_key":"wf:3",` +
		`"timestamp":"2025-11-16T10:00:00Z"}`
	var m transport.Message
	if err := json.Unmarshal([]byte(in), &m); err != nil {
		t.Fatal(err)
	}
	if m.AckTimeout != 2500*time.Millisecond || m.DeliveryCount != 2 || m.IdempotencyKey != "wf:3" || m.Key() != "wf:3" {
		t.Fatalf("got ack_timeout %v delivery %d key %q, want 2.5s 2 wf:3", m.AckTimeout, m.DeliveryCount, m.IdempotencyKey)
	}
	out, err := json.Marshal(&m)
	if err != nil || string(out) != in {
		t.Errorf("got %s (%v), want the input back", out, err)
	}
	for _, tc := range []struct {
		json, field string
	}{
		{`{"ack_timeout":"soon"}`, "ack_timeout"},
		{`{"ttl":"soon"}`, "ttl"},
	} {
		var bad transport.Message
		var ve *transport.ValidationError
		if err := json.Unmarshal([]byte(tc.json), &bad); !errors.As(err, &ve) || ve.Field != tc.field {
			t.Errorf("%s: got %v, want a ValidationError on %s", tc.json, err, tc.field)
		}
	}
	for _, tc := range []struct {
		mutate func(*transport.Message)
		field  string
	}{
		{func(m *transport.Message) { m.AckTimeout = -time.Second }, "ack_timeout"},
		{func(m *transport.Message) { m.DeliveryCount = -1 }, "delivery_count"},
	} {
		c := m.Clone()
		tc.mutate(c)
		var ve *transport.ValidationError
		if err := c.Validate(); !errors.As(err, &ve) || ve.Field != tc.field {
			t.Errorf("got %v, want a ValidationError on %s", err, tc.field)
		}
	}
	meta := transport.Message{Metadata: map[string]any{"idempotency_key": "from-metadata"}}
	if meta.Key() != "from-metadata" {
		t.Errorf("got key %q, want the metadata's", meta.Key())
	}
}

// TestPriority_RankRoundTrips: each level's rank maps back to the level, so
// the workflow language's scale and the four levels have one mapping.
func TestPriority_RankRoundTrips(t *testing.T) {
	for _, p := range []transport.Priority{transport.PriorityLow, transport.PriorityNormal, transport.PriorityHigh, transport.PriorityCritical} {
		if got := transport.PriorityFromRank(p.Rank()); got != p {
			t.Errorf("PriorityFromRank(%v.Rank() = %d) = %v, want %v", p, p.Rank(), got, p)
		}
	}
	if got := transport.Priority(7).Rank(); got != transport.RankNormal {
		t.Errorf("invalid priority ranks %d, want %d (normal)", got, transport.RankNormal)
	}
}

// TestMessage_FillSetsOnlyWhatIsEmpty: Fill gives an empty message an id,
// its own conversation, the time in UTC and the default TTL, and keeps
// what the sender set.
func TestMessage_FillSetsOnlyWhatIsEmpty(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600))
	m := &transport.Message{}
	m.Fill(now, func() string { return "id-1" })
	if m.MessageID != "id-1" || m.ConversationID != "id-1" || !m.Timestamp.Equal(now) || m.Timestamp.Location() != time.UTC || m.TTL != transport.DefaultTTL {
		t.Fatalf("got %+v, want id-1, its own conversation, the time in UTC and the default TTL", m)
	}
	set := &transport.Message{MessageID: "a", ConversationID: "c", Timestamp: now.Add(-time.Hour), TTL: time.Minute}
	set.Fill(now, func() string { t.Fatal("an id was asked for a message that has one"); return "" })
	if set.MessageID != "a" || set.ConversationID != "c" || !set.Timestamp.Equal(now.Add(-time.Hour)) || set.TTL != time.Minute {
		t.Fatalf("got %+v, want the sender's fields kept", set)
	}
}
