package busprom_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/bus/busprom"
	"github.com/batonhq/baton/transport"
)

func send(t *testing.T, b *bus.Bus, to string) {
	t.Helper()
	_ = b.Send(t.Context(), &transport.Message{Type: transport.MessageRequest, From: "X", To: to, Content: map[string]any{"action": "a"}})
}

func TestRegister_Errors(t *testing.T) {
	b := bus.New()
	defer b.Close()
	if _, err := busprom.Register(nil, b); !errors.Is(err, busprom.ErrNoRegistry) {
		t.Errorf("got %v, want ErrNoRegistry", err)
	}
	reg := prometheus.NewRegistry()
	if _, err := busprom.Register(reg, nil); !errors.Is(err, busprom.ErrNoSource) {
		t.Errorf("got %v, want ErrNoSource", err)
	}
	if _, err := busprom.Register(reg, b); err != nil {
		t.Fatal(err)
	}
	var are prometheus.AlreadyRegisteredError
	if _, err := busprom.Register(reg, b); !errors.As(err, &are) {
		t.Errorf("got %v registering twice, want AlreadyRegisteredError", err)
	}
}

func TestCollector_ReportsTheSnapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := bus.New()
		defer b.Close()
		if err := b.Register("A", bus.WithAgentType("worker"), bus.WithMailboxCapacity(3)); err != nil {
			t.Fatal(err)
		}
		for range 4 {
			send(t, b, "A") // the fourth overflows
		}
		send(t, b, "Ghost")
		time.Sleep(10 * time.Millisecond)
		if _, err := b.Receive("A", 2); err != nil {
			t.Fatal(err)
		}
		_ = b.Send(t.Context(), &transport.Message{From: "X", To: "A"}) // invalid

		c := busprom.NewCollector(b, busprom.WithConstLabels(prometheus.Labels{"bus": "main"}))
		want := `
# HELP baton_bus_messages_accepted_total Messages accepted by the bus (sent).
# TYPE baton_bus_messages_accepted_total counter
baton_bus_messages_accepted_total{bus="main"} 5
# HELP baton_bus_messages_delivered_total Messages delivered to a receiver.
# TYPE baton_bus_messages_delivered_total counter
baton_bus_messages_delivered_total{bus="main"} 2
# HELP baton_bus_messages_dead_lettered_total Messages moved to the dead-letter queue, by reason.
# TYPE baton_bus_messages_dead_lettered_total counter
baton_bus_messages_dead_lettered_total{bus="main",reason="max_retries"} 0
baton_bus_messages_dead_lettered_total{bus="main",reason="queue_overflow"} 1
baton_bus_messages_dead_lettered_total{bus="main",reason="receiver_not_found"} 1
baton_bus_messages_dead_lettered_total{bus="main",reason="rejected"} 0
baton_bus_messages_dead_lettered_total{bus="main",reason="ttl_expired"} 0
# HELP baton_bus_messages_queued Accepted messages waiting to be received in a mailbox.
# TYPE baton_bus_messages_queued gauge
baton_bus_messages_queued{bus="main"} 1
# HELP baton_bus_queue_depth Messages queued in an agent's mailbox.
# TYPE baton_bus_queue_depth gauge
baton_bus_queue_depth{agent="A",agent_type="worker",bus="main"} 1
# HELP baton_bus_queue_capacity Capacity of an agent's mailbox.
# TYPE baton_bus_queue_capacity gauge
baton_bus_queue_capacity{agent="A",agent_type="worker",bus="main"} 3
# HELP baton_bus_validation_errors_total Messages refused as invalid.
# TYPE baton_bus_validation_errors_total counter
baton_bus_validation_errors_total{bus="main"} 1
# HELP baton_bus_drop_ratio Dead-lettered messages over accepted messages.
# TYPE baton_bus_drop_ratio gauge
baton_bus_drop_ratio{bus="main"} 0.4
`
		names := []string{"baton_bus_messages_accepted_total", "baton_bus_messages_delivered_total", "baton_bus_messages_dead_lettered_total",
			"baton_bus_messages_queued", "baton_bus_queue_depth", "baton_bus_queue_capacity", "baton_bus_validation_errors_total", "baton_bus_drop_ratio"}
		if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
			t.Error(err)
		}
		if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
			t.Errorf("got lint problems %v (%v), want none", problems, err)
		}

		reg := prometheus.NewRegistry()
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		wait := summaryFor(t, families, "baton_bus_latency_seconds", "wait")
		if wait.GetSampleCount() != 2 {
			t.Errorf("got %d wait samples, want 2", wait.GetSampleCount())
		}
		for _, q := range wait.GetQuantile() {
			if v := q.GetValue(); v < 0.010 || v > 0.0125 {
				t.Errorf("got wait quantile %v = %vs, want 10ms (within the histogram's 25%%)", q.GetQuantile(), v)
			}
		}
		if send := summaryFor(t, families, "baton_bus_latency_seconds", "send"); send.GetSampleCount() != 3 {
			t.Errorf("got %d send samples, want the 3 queued sends", send.GetSampleCount())
		}
	})
}

func summaryFor(t *testing.T, families []*dto.MetricFamily, name, op string) *dto.Summary {
	t.Helper()
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "op" && l.GetValue() == op {
					return m.GetSummary()
				}
			}
		}
	}
	t.Fatalf("got no %s{op=%q}, want one", name, op)
	return nil
}

func TestCollector_ReportsDeliveryAndFlowControl(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := bus.New()
		defer b.Close()
		if err := b.Register("A", bus.WithMailboxCapacity(10)); err != nil {
			t.Fatal(err)
		}
		m := &transport.Message{Type: transport.MessageRequest, From: "X", To: "A", RequiresAck: true, IdempotencyKey: "k", Content: map[string]any{"action": "a"}}
		if err := b.Send(t.Context(), m); err != nil {
			t.Fatal(err)
		}
		dup := *m
		dup.MessageID = ""
		if err := b.Send(t.Context(), &dup); err != nil {
			t.Fatal(err)
		}
		got, _, _ := b.TryReceive("A")
		if err := b.Reject(t.Context(), got, "no"); err != nil {
			t.Fatal(err)
		}
		send(t, b, "Ghost")
		c := busprom.NewCollector(b)
		want := `
# HELP baton_bus_duplicates_total Sends acknowledged without delivery for a repeated idempotency key.
# TYPE baton_bus_duplicates_total counter
baton_bus_duplicates_total 1
# HELP baton_bus_messages_in_flight Received requires_ack messages not yet acknowledged.
# TYPE baton_bus_messages_in_flight gauge
baton_bus_messages_in_flight 0
# HELP baton_bus_rejects_total Messages refused for good with Reject.
# TYPE baton_bus_rejects_total counter
baton_bus_rejects_total 1
`
		names := []string{
			"baton_bus_duplicates_total", "baton_bus_messages_in_flight", "baton_bus_rejects_total"}
		if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
			t.Error(err)
		}
		if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
			t.Errorf("got lint problems %v (%v), want none", problems, err)
		}
	})
}
