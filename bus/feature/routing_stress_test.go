package feature_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/bus/feature"
	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/transport"
)

// TestStress_RoutingUnderLoad runs concurrent senders that broadcast,
// publish, send requests and plain messages through the four routing
// decorators, receivers that answer the requests, and a watcher that
// subscribes, unsubscribes and reads threads meanwhile. Every request ends
// answered or timed out, none stays waiting, and the transport's
// accounting balances. Run with -race, it checks the decorators' locking.
func TestStress_RoutingUnderLoad(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		const senders, perSender = 4, 60
		clk := clock.Real() // the requests' timeouts must pass on their own
		conv := feature.NewConversations(tr, feature.ConversationLimits{MaxDepth: 1000, MaxThreads: 50}, clk)
		topics := feature.NewTopics(conv, feature.TopicSettings{RetainMax: 5}, clk)
		bc := feature.NewBroadcaster(topics, feature.BroadcastSettings{}, clk)
		req := feature.NewRequests(bc, feature.RequestSettings{Timeout: 200 * time.Millisecond}, clk)
		defer req.Close()
		agents := []string{"A0", "A1", "A2", "A3"}
		for i, a := range agents {
			if err := bc.OpenTypedMailbox(a, fmt.Sprintf("type%d", i%2), 0); err != nil {
				t.Fatal(err)
			}
			if err := topics.Subscribe(a, "news"); err != nil {
				t.Fatal(err)
			}
		}
		ctx, stop := context.WithCancel(t.Context())
		var receivers sync.WaitGroup
		for _, a := range agents {
			receivers.Go(func() {
				for ctx.Err() == nil {
					msgs, err := req.TakeWork(ctx, a, 4)
					if err != nil {
						return
					}
					for _, m := range msgs {
						if m.Type == transport.MessageRequest {
							_ = req.Reply(ctx, m, &transport.Message{Content: map[string]any{"action": "answer"}})
						}
					}
					if len(msgs) == 0 {
						time.Sleep(time.Millisecond)
					}
				}
			})
		}
		var watcher sync.WaitGroup
		watcher.Go(func() {
			for ; ctx.Err() == nil; time.Sleep(100 * time.Microsecond) {
				_ = topics.Subscribe("A3", "news")
				_ = topics.Unsubscribe("A3", "news")
				_ = topics.Subscribers("news")
				_ = conv.Stats()
				_ = req.Stats()
			}
		})
		var answered, failed atomic.Uint64
		var wg sync.WaitGroup
		for s := range senders {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(s), 7))
				for i := range perSender {
					m := routingNotice(agents[s], agents[r.IntN(len(agents))], fmt.Sprint("work-", i))
					switch r.IntN(6) {
					case 0:
						_, _ = bc.Broadcast(ctx, m)
					case 1:
						_, _ = topics.Publish(ctx, "news", m)
					case 2:
						_, _ = bc.BroadcastToTypes(ctx, []string{"type1"}, m)
					case 3:
						m.Type = transport.MessageRequest
						if _, err := req.Request(ctx, m); err == nil {
							answered.Add(1)
						} else {
							failed.Add(1)
						}
					default:
						_ = req.SendWork(ctx, m)
					}
					if r.IntN(8) == 0 {
						_, _ = conv.Conversation(m.ConversationID)
					}
				}
			})
		}
		wg.Wait()
		stop()
		receivers.Wait()
		watcher.Wait()

		s := req.Stats()
		if s.Waiting != 0 || s.Answered != answered.Load() || s.Requests != answered.Load()+failed.Load() {
			t.Errorf("got %+v, want none waiting and %d answered of %d", s, answered.Load(), answered.Load()+failed.Load())
		}
		routingBalanced(t, tr)
		t.Logf("requests %d answered %d timed out %d broadcasts %d published %d threads %d",
			s.Requests, s.Answered, s.TimedOut, bc.Stats().Broadcasts, topics.Stats().Published, conv.Stats().Threads)
	})
}
