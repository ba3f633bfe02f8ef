package natsbus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// The agent below uses nothing but the NATS client: it is the complete
// agent of docs/protocol.md, kept here so that the document's agent is one
// that works.

// work is the part of a work message a plain agent reads.
type plainWork struct {
	Content   map[string]any `json:"content"`
	Metadata  map[string]any `json:"metadata"`
	TTL       float64        `json:"ttl"` // seconds
	Timestamp time.Time      `json:"timestamp"`
}

// decide does an agent's work: the trigger it ends with and its result.
type decide func(w plainWork) (trigger string, result map[string]any)

// serveAgent takes agent's work until ctx ends: highest priority first,
// heartbeats while deciding, the report, then the ack.
func serveAgent(ctx context.Context, nc *nats.Conn, agent string, do decide) {
	stream := "BATON_WORK_" + agent // the id as it is: letters, digits, - and _
	for ctx.Err() == nil {
		msg := nextWork(nc, stream)
		if msg == nil {
			time.Sleep(5 * time.Millisecond) // nothing waits
			continue
		}
		var w plainWork
		if err := json.Unmarshal(msg.Data, &w); err != nil {
			nc.Publish(msg.Reply, []byte("+TERM not a work message"))
			continue
		}
		if time.Since(w.Timestamp) > time.Duration(w.TTL*float64(time.Second)) {
			nc.Publish(msg.Reply, []byte("+TERM ttl_expired")) // never run expired work
			continue
		}
		report := map[string]any{"instance_id": w.Metadata["instance_id"], "step": w.Metadata["step"], "agent": agent}
		if w.Content["action"] == "notice" {
			report["trigger"] = "noticed" // a final notice: nothing to run
		} else {
			// Heartbeats: "+WPI" restarts the ack wait while the work runs.
			done := make(chan struct{})
			go func() {
				tick := time.NewTicker(10 * time.Second)
				defer tick.Stop()
				for {
					select {
					case <-done:
						return
					case <-tick.C:
						nc.Publish(msg.Reply, []byte("+WPI"))
					}
				}
			}()
			trigger, result := do(w)
			close(done)
			report["trigger"], report["result"] = trigger, result
		}
		body, _ := json.Marshal(report)
		answer, err := nc.Request("baton.reports", body, 10*time.Second)
		var ans struct {
			OK   bool   `json:"ok"`
			Code string `json:"code"`
		}
		if err != nil || json.Unmarshal(answer.Data, &ans) != nil || ans.Code == "unknown_instance" {
			nc.Publish(msg.Reply, giveBack(msg)) // no engine took it (yet): deliver it again later
			continue
		}
		nc.Request(msg.Reply, []byte("+ACK"), 5*time.Second) // ok, stale or invalid: settled
	}
}

// giveBack is the -NAK that has msg delivered again after a pause: 100 ms
// after its first delivery, doubling with each delivery, at most 30 s.
func giveBack(msg *nats.Msg) []byte {
	pause := 100 * time.Millisecond
	if meta, err := msg.Metadata(); err == nil {
		for k := uint64(1); k < meta.NumDelivered && pause < 30*time.Second; k++ {
			pause *= 2
		}
	}
	return fmt.Appendf(nil, `-NAK {"delay": %d}`, min(pause, 30*time.Second).Nanoseconds())
}

// nextWork asks the agent's consumers for one message, the highest
// priority first; nil when none waits.
func nextWork(nc *nats.Conn, stream string) *nats.Msg {
	for _, level := range []string{"critical", "high", "normal", "low"} {
		msg, err := nc.Request("$JS.API.CONSUMER.MSG.NEXT."+stream+"."+level, []byte(`{"batch":1,"no_wait":true,"expires":1000000}`), time.Second)
		if err != nil || msg.Header.Get("Status") != "" {
			continue // 404 or 408: nothing at this level
		}
		return msg
	}
	return nil
}

func TestPlainAgent_ANATSClientAloneCompletesRefunds(t *testing.T) {
	ns := startServer(t, false)
	re := newRefundEngine(t, connect(t, ns), memStorage)
	agents := map[string]decide{
		"customer": func(plainWork) (string, map[string]any) {
			return "validated", map[string]any{"refund_eligible": true, "order_id": "1"}
		},
		"seller":       func(plainWork) (string, map[string]any) { return "reviewed", map[string]any{"approval": "APPROVED"} },
		"payment":      func(plainWork) (string, map[string]any) { return "refunded", map[string]any{"transaction_id": "tx"} },
		"notification": func(plainWork) (string, map[string]any) { return "sent", nil },
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for agent, do := range agents {
		nc := connect(t, ns)
		wg.Add(1)
		go func() {
			defer wg.Done()
			serveAgent(ctx, nc, agent, do)
		}()
	}
	insts := runRefunds(t, re.eng, 20)
	cancel()
	wg.Wait()
	wantEachStepOnce(t, insts, nil)
	var s = re.tr.Metrics()
	wantBalanced(t, s)
	if s.Delivered != 80 || s.InFlight != 0 {
		t.Errorf("got delivered %d in flight %d, want 80 and 0", s.Delivered, s.InFlight)
	}
}
