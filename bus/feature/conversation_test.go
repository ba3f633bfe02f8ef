package feature_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/bus/feature"
	"github.com/batonhq/baton/transport"
)

// conversationRouting composes the routing decorators with conversation
// limits l over tr, for a reviewer, an implementer and a lead.
func conversationRouting(t *testing.T, tr transport.Transport, l feature.ConversationLimits) *routing {
	return newRouting(t, tr, routingConfig{conv: l}, "reviewer", "implementer", "lead")
}

func TestCommFlow_Conversation_ThreadsRepliesAndFollowUps(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		r := conversationRouting(t, tr, feature.ConversationLimits{})
		root := routingRequest("lead", "implementer", "implement_auth")
		r.mustSend(t, root)
		got := r.takeOne(t, "implementer")
		if err := r.req.Reply(t.Context(), got, &transport.Message{Content: map[string]any{"action": "done"}}); err != nil {
			t.Fatal(err)
		}
		// A follow-up that names only in_reply_to inherits the conversation.
		follow := routingNotice("lead", "implementer", "status_changed")
		follow.InReplyTo = root.MessageID
		r.mustSend(t, follow)
		if follow.ConversationID != root.ConversationID {
			t.Errorf("got conversation %q, want the root's %q", follow.ConversationID, root.ConversationID)
		}
		msgs, closed := r.conv.Conversation(root.ConversationID)
		if closed != "" {
			t.Fatalf("got closed %q, want an open thread", closed)
		}
		actions := routingActions(msgs)
		if want := []string{"implement_auth", "done", "status_changed"}; len(actions) != 3 || actions[0] != want[0] || actions[1] != want[1] || actions[2] != want[2] {
			t.Errorf("got thread %v, want %v", actions, want)
		}
		msgs[0].Content["action"] = "tampered" // the thread holds copies
		if again, _ := r.conv.Conversation(root.ConversationID); again[0].Action() != "implement_auth" {
			t.Error("got the thread changed through a returned message, want copies")
		}
	})
}

func TestCommFlow_Conversation_ReplyToUnknownMessageRefused(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		r := conversationRouting(t, tr, feature.ConversationLimits{})
		reply := &transport.Message{Type: transport.MessageResponse, From: "implementer", To: "lead", InReplyTo: "no-such-id",
			Content: map[string]any{"action": "done"}}
		err := r.top().SendWork(t.Context(), reply)
		var ve *transport.ValidationError
		if !errors.As(err, &ve) || ve.Field != "in_reply_to" {
			t.Fatalf("got %v, want a ValidationError naming in_reply_to", err)
		}
		if s := routingBalanced(t, tr); s.Accepted != 0 || r.conv.Stats().UnknownReplies != 1 {
			t.Errorf("got %d accepted, %d unknown replies, want 0 and 1", s.Accepted, r.conv.Stats().UnknownReplies)
		}
		// Without conversation tracking, in_reply_to is not checked.
		if err := tr.SendWork(t.Context(), reply); err != nil {
			t.Errorf("got %v from the transport alone, want nil", err)
		}
	})
}

func TestCommFlow_Conversation_ClosesAtMaxDepth(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		r := conversationRouting(t, tr, feature.ConversationLimits{MaxDepth: 3})
		root := routingRequest("lead", "reviewer", "review")
		r.mustSend(t, root)
		for range 2 {
			m := routingNotice("reviewer", "lead", "comment")
			m.InReplyTo = root.MessageID
			r.mustSend(t, m)
		}
		m := routingNotice("reviewer", "lead", "one too many")
		m.InReplyTo = root.MessageID
		err := r.top().SendWork(t.Context(), m)
		var ce *feature.ConversationClosedError
		if !errors.As(err, &ce) || !errors.Is(err, feature.ErrConversationClosed) || !errors.Is(err, transport.ErrCommunication) ||
			ce.Reason != feature.ConversationMaxDepth || ce.ConversationID != root.ConversationID {
			t.Fatalf("got %v, want the thread closed at max_depth", err)
		}
		if _, closed := r.conv.Conversation(root.ConversationID); closed != feature.ConversationMaxDepth {
			t.Errorf("got closed %q, want max_depth", closed)
		}
		if s := routingBalanced(t, tr); s.Accepted != 3 || s.Queued != 3 || r.conv.Stats().Refused != 1 {
			t.Errorf("got accepted %d queued %d refused %d, want 3 3 1", s.Accepted, s.Queued, r.conv.Stats().Refused)
		}
	})
}

func TestCommFlow_Conversation_ClosesAfterMaxDuration(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		r := conversationRouting(t, tr, feature.ConversationLimits{MaxDuration: time.Hour})
		root := routingRequest("lead", "reviewer", "review")
		r.mustSend(t, root)
		r.clock.Advance(time.Hour - time.Second)
		if _, closed := r.conv.Conversation(root.ConversationID); closed != "" {
			t.Fatalf("got closed %q inside the duration, want open", closed)
		}
		late := routingNotice("reviewer", "lead", "late")
		late.ConversationID = root.ConversationID
		r.mustSend(t, late)
		r.clock.Advance(time.Second)
		if _, closed := r.conv.Conversation(root.ConversationID); closed != feature.ConversationMaxDuration {
			t.Fatalf("got closed %q, want max_duration", closed)
		}
		stale := routingNotice("reviewer", "lead", "stale")
		stale.ConversationID = root.ConversationID
		if err := r.top().SendWork(t.Context(), stale); !errors.Is(err, feature.ErrConversationClosed) {
			t.Errorf("got %v, want ErrConversationClosed", err)
		}
	})
}

func TestCommFlow_Conversation_QueryByCorrelation(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		r := conversationRouting(t, tr, feature.ConversationLimits{})
		impl := routingRequest("lead", "implementer", "implement")
		r.mustSend(t, impl)
		// A review thread references the implementation thread.
		review := routingRequest("lead", "reviewer", "review")
		review.CorrelationID = impl.MessageID
		r.mustSend(t, review)
		got := r.takeOne(t, "reviewer")
		if err := r.req.Reply(t.Context(), got, &transport.Message{Content: map[string]any{"action": "approved"}}); err != nil {
			t.Fatal(err)
		}
		related := r.conv.Correlated(impl.MessageID)
		if len(related) != 3 || related[0].MessageID != impl.MessageID || related[1].MessageID != review.MessageID || related[2].Action() != "approved" {
			t.Errorf("got %v, want the implementation request, the review and its answer", routingIDs(related))
		}
		if review.ConversationID == impl.ConversationID {
			t.Error("got one conversation, want two threads linked by correlation_id")
		}
	})
}

func TestCommFlow_Conversation_CloseByOwnerAndRetention(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		r := conversationRouting(t, tr, feature.ConversationLimits{MaxThreads: 2})
		var roots []*transport.Message
		for range 3 {
			m := routingRequest("lead", "reviewer", "review")
			r.mustSend(t, m)
			roots = append(roots, m)
		}
		if msgs, _ := r.conv.Conversation(roots[0].ConversationID); len(msgs) != 0 {
			t.Errorf("got %d messages of the oldest thread, want it forgotten beyond MaxThreads", len(msgs))
		}
		if err := r.conv.CloseConversation(roots[2].ConversationID); err != nil {
			t.Fatal(err)
		}
		m := routingNotice("reviewer", "lead", "after close")
		m.InReplyTo = roots[2].MessageID
		var ce *feature.ConversationClosedError
		if err := r.top().SendWork(t.Context(), m); !errors.As(err, &ce) || ce.Reason != feature.ConversationClosedByOwner {
			t.Errorf("got %v, want closed by its owner", err)
		}
		if err := r.conv.CloseConversation("nope"); !errors.Is(err, transport.ErrValidation) {
			t.Errorf("got %v, want ErrValidation for an unknown thread", err)
		}
		if s := r.conv.Stats(); s.Threads != 2 {
			t.Errorf("got %d threads, want 2", s.Threads)
		}
	})
}

func TestCommFlow_Conversation_RepliesToBroadcastAndTopicCopies(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		r := conversationRouting(t, tr, feature.ConversationLimits{})
		if err := r.topics.Subscribe("reviewer", "policy"); err != nil {
			t.Fatal(err)
		}
		alert := routingNotice("lead", "", "maintenance")
		if _, err := r.bc.Broadcast(t.Context(), alert); err != nil {
			t.Fatal(err)
		}
		if _, err := r.topics.Publish(t.Context(), "policy", routingNotice("lead", "", "new_rule")); err != nil {
			t.Fatal(err)
		}
		if err := r.topics.Subscribe("implementer", "policy"); err != nil { // replayed copy
			t.Fatal(err)
		}
		for _, agent := range []string{"reviewer", "implementer"} {
			got := r.takeAll(t, agent)
			if len(got) != 2 {
				t.Errorf("%s got %v, want the broadcast and the publication", agent, routingActions(got))
			}
			for _, m := range got {
				if err := r.req.Reply(t.Context(), m, &transport.Message{Type: transport.MessageNotification, Content: map[string]any{"action": "noted"}}); err != nil {
					t.Errorf("%s replying to its copy of %q: got %v, want the copy known", agent, m.Action(), err)
				}
			}
		}
		// The broadcast is one message of its thread, however many copies
		// it made; each reply to a copy joins it.
		if msgs, _ := r.conv.Conversation(alert.ConversationID); len(msgs) != 3 || msgs[0].MessageID != alert.MessageID {
			t.Errorf("got thread %v, want the broadcast and the two replies to its copies", routingActions(msgs))
		}
	})
}

// TestCommFlow_Conversation_AnswerToRequestJoinsThread sends a Request
// through the routing stack: its answer goes straight to the waiting
// caller, not through the transport, and still joins the thread.
func TestCommFlow_Conversation_AnswerToRequestJoinsThread(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		r := conversationRouting(t, tr, feature.ConversationLimits{})
		done := make(chan error, 1)
		go func() {
			got, err := r.takeNext(t, "reviewer")
			if err == nil {
				err = r.req.Reply(t.Context(), got, &transport.Message{Content: map[string]any{"action": "approved"}})
			}
			done <- err
		}()
		ask := routingRequest("lead", "reviewer", "review")
		if _, err := r.req.Request(t.Context(), ask); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		msgs, _ := r.conv.Conversation(ask.ConversationID)
		if got := routingActions(msgs); len(got) != 2 || got[0] != "review" || got[1] != "approved" {
			t.Errorf("got thread %v, want [review approved]", got)
		}
	})
}

// TestCommFlow_Conversation_RequestAndBroadcastInheritTheThread sends a
// Request and a broadcast that answer a message but name no conversation:
// both join the thread of the message they answer.
func TestCommFlow_Conversation_RequestAndBroadcastInheritTheThread(t *testing.T) {
	onEach(t, func(t *testing.T, tr transport.Transport) {
		r := conversationRouting(t, tr, feature.ConversationLimits{})
		root := routingRequest("lead", "reviewer", "review")
		r.mustSend(t, root)
		ask := routingRequest("reviewer", "implementer", "clarify")
		ask.InReplyTo = root.MessageID
		ctx, cancel := context.WithCancel(t.Context())
		done := r.requestAsync(ctx, ask)
		r.waitTimer(t)
		cancel()
		<-done
		all := routingNotice("reviewer", "", "heads_up")
		all.InReplyTo = root.MessageID
		if _, err := r.bc.Broadcast(t.Context(), all); err != nil {
			t.Fatal(err)
		}
		if ask.ConversationID != root.ConversationID || all.ConversationID != root.ConversationID {
			t.Errorf("got conversations %q and %q, want the root's %q", ask.ConversationID, all.ConversationID, root.ConversationID)
		}
		msgs, _ := r.conv.Conversation(root.ConversationID)
		if got := routingActions(msgs); len(got) != 3 || got[1] != "clarify" || got[2] != "heads_up" {
			t.Errorf("got thread %v, want [review clarify heads_up]", got)
		}
	})
}
