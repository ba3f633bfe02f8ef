package feature_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/batonhq/baton/bus/feature"
	"github.com/batonhq/baton/transport"
)

func TestGuardCollector_ReportsTheGuardsFigures(t *testing.T) {
	guardEach(t, 0, func(t *testing.T, e *guardEnv) {
		e.open(t, 0, "A")
		e.open(t, 10, "B")
		g := feature.NewPressureGauge(e.tr, feature.Backpressure{}, e.clk)
		rl := newLimiter(t, &guardEnv{tr: g, clk: e.clk}, feature.RateLimits{Outbound: 60, Inbound: 6000, Burst: 9})
		br := newBreakers(t, &guardEnv{tr: rl, clk: e.clk}, feature.BreakerSettings{})
		e.sendN(t, br, "A", "B", transport.PriorityNormal, 9) // at 8 B is throttled, at 9 its breaker opens
		if err := br.SendWork(t.Context(), guardMsg(transport.MessageNotification, "A", "B", "refused")); err == nil {
			t.Fatal("got a send through an open breaker, want it refused")
		}
		e.sendN(t, br, "A", "A", transport.PriorityNormal, 1) // A's tokens are spent: it waits
		c := feature.NewGuardCollector(feature.Guards{RateLimiter: rl, Breakers: br, Pressure: g}, "")
		want := `
# HELP baton_bus_backpressure_signals_total Backpressure notifications sent to senders.
# TYPE baton_bus_backpressure_signals_total counter
baton_bus_backpressure_signals_total 1
# HELP baton_bus_breaker_opened_total Times a circuit breaker opened.
# TYPE baton_bus_breaker_opened_total counter
baton_bus_breaker_opened_total 1
# HELP baton_bus_breaker_refused_total Sends refused by an open circuit breaker.
# TYPE baton_bus_breaker_refused_total counter
baton_bus_breaker_refused_total 1
# HELP baton_bus_circuit_breaker_state 1 for the current state of an agent's circuit breaker.
# TYPE baton_bus_circuit_breaker_state gauge
baton_bus_circuit_breaker_state{agent="A",state="closed"} 1
baton_bus_circuit_breaker_state{agent="A",state="half-open"} 0
baton_bus_circuit_breaker_state{agent="A",state="open"} 0
baton_bus_circuit_breaker_state{agent="B",state="closed"} 0
baton_bus_circuit_breaker_state{agent="B",state="half-open"} 0
baton_bus_circuit_breaker_state{agent="B",state="open"} 1
# HELP baton_bus_messages_deferred Messages waiting in senders' outbound queues for rate-limit tokens.
# TYPE baton_bus_messages_deferred gauge
baton_bus_messages_deferred 1
# HELP baton_bus_pressure_changes_total Changes of a mailbox's pressure level.
# TYPE baton_bus_pressure_changes_total counter
baton_bus_pressure_changes_total 1
# HELP baton_bus_pressure_level Pressure of an agent's mailbox: 0 normal, 1 throttled, 2 overloaded.
# TYPE baton_bus_pressure_level gauge
baton_bus_pressure_level{agent="B"} 1
# HELP baton_bus_rate_deferred_total Messages that waited for rate-limit tokens.
# TYPE baton_bus_rate_deferred_total counter
baton_bus_rate_deferred_total 1
`
		if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
			t.Error(err)
		}
		if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
			t.Errorf("got lint problems %v (%v), want none", problems, err)
		}
		if n := testutil.CollectAndCount(feature.NewGuardCollector(feature.Guards{}, "")); n != 0 {
			t.Errorf("got %d series without guards, want none", n)
		}
	})
}
