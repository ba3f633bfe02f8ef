package bus_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/transport"
)

func conversationBus(t *testing.T, l bus.ConversationLimits) *bus.Bus {
	return newBus(t, []string{"reviewer", "implementer", "lead"}, bus.WithConversations(l))
}

func TestCommFlow_Conversation_ThreadsRepliesAndFollowUps(t *testing.T) {
	b := conversationBus(t, bus.ConversationLimits{})
	root := request("lead", "implementer", "implement_auth")
	mustSend(t, b, root)
	got := mustReceiveOne(t, b, "implementer")
	if err := b.Reply(t.Context(), got, &transport.Message{Content: map[string]any{"action": "done"}}); err != nil {
		t.Fatal(err)
	}
	// A follow-up that names only in_reply_to inherits the conversation.
	follow := notice("lead", "implementer", "status_changed")
	follow.InReplyTo = root.MessageID
	mustSend(t, b, follow)
	if follow.ConversationID != root.ConversationID {
		t.Errorf("got conversation %q, want the root's %q", follow.ConversationID, root.ConversationID)
	}
	msgs, closed, err := b.Conversation(root.ConversationID)
	if err != nil || closed != "" {
		t.Fatalf("got %v closed %q, want an open thread", err, closed)
	}
	var actions []string
	for _, m := range msgs {
		actions = append(actions, m.Action())
	}
	if want := []string{"implement_auth", "done", "status_changed"}; len(actions) != 3 || actions[0] != want[0] || actions[1] != want[1] || actions[2] != want[2] {
		t.Errorf("got thread %v, want %v", actions, want)
	}
	msgs[0].Content["action"] = "tampered" // the thread holds copies
	if again, _, _ := b.Conversation(root.ConversationID); again[0].Action() != "implement_auth" {
		t.Error("got the thread changed through a returned message, want copies")
	}
}

func TestCommFlow_Conversation_ReplyToUnknownMessageRefused(t *testing.T) {
	b := conversationBus(t, bus.ConversationLimits{})
	reply := &transport.Message{Type: transport.MessageResponse, From: "implementer", To: "lead", InReplyTo: "no-such-id",
		Content: map[string]any{"action": "done"}}
	err := b.Send(t.Context(), reply)
	var ve *transport.ValidationError
	if !errors.As(err, &ve) || ve.Field != "in_reply_to" {
		t.Fatalf("got %v, want a ValidationError naming in_reply_to", err)
	}
	if s := assertCounts(t, b, flowCounts{}); s.ValidationErrors != 1 {
		t.Errorf("got %d validation errors, want 1", s.ValidationErrors)
	}
	// Without conversation tracking, in_reply_to is not checked.
	plain := newBus(t, []string{"lead"})
	mustSend(t, plain, reply)
}

func TestCommFlow_Conversation_ClosesAtMaxDepth(t *testing.T) {
	b := conversationBus(t, bus.ConversationLimits{MaxDepth: 3})
	root := request("lead", "reviewer", "review")
	mustSend(t, b, root)
	for range 2 {
		m := notice("reviewer", "lead", "comment")
		m.InReplyTo = root.MessageID
		mustSend(t, b, m)
	}
	m := notice("reviewer", "lead", "one too many")
	m.InReplyTo = root.MessageID
	err := b.Send(t.Context(), m)
	var ce *bus.ConversationClosedError
	if !errors.As(err, &ce) || !errors.Is(err, bus.ErrConversationClosed) || ce.Reason != bus.ConversationMaxDepth || ce.ConversationID != root.ConversationID {
		t.Fatalf("got %v, want the thread closed at max_depth", err)
	}
	if _, closed, _ := b.Conversation(root.ConversationID); closed != bus.ConversationMaxDepth {
		t.Errorf("got closed %q, want max_depth", closed)
	}
	if s := assertCounts(t, b, flowCounts{Accepted: 3, Queued: 3}); s.ConversationsRefused != 1 {
		t.Errorf("got %d refused, want 1", s.ConversationsRefused)
	}
}

func TestCommFlow_Conversation_ClosesAfterMaxDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := conversationBus(t, bus.ConversationLimits{MaxDuration: time.Hour})
		root := request("lead", "reviewer", "review")
		mustSend(t, b, root)
		time.Sleep(time.Hour - time.Second)
		if _, closed, _ := b.Conversation(root.ConversationID); closed != "" {
			t.Fatalf("got closed %q inside the duration, want open", closed)
		}
		late := notice("reviewer", "lead", "late")
		late.ConversationID = root.ConversationID
		mustSend(t, b, late)
		time.Sleep(time.Second)
		if _, closed, _ := b.Conversation(root.ConversationID); closed != bus.ConversationMaxDuration {
			t.Fatalf("got closed %q, want max_duration", closed)
		}
		stale := notice("reviewer", "lead", "stale")
		stale.ConversationID = root.ConversationID
		if err := b.Send(t.Context(), stale); !errors.Is(err, bus.ErrConversationClosed) {
			t.Errorf("got %v, want ErrConversationClosed", err)
		}
	})
}

func TestCommFlow_Conversation_QueryByCorrelation(t *testing.T) {
	b := conversationBus(t, bus.ConversationLimits{})
	impl := request("lead", "implementer", "implement")
	mustSend(t, b, impl)
	// A review thread references the implementation thread.
	review := request("lead", "reviewer", "review")
	review.CorrelationID = impl.MessageID
	mustSend(t, b, review)
	got := mustReceiveOne(t, b, "reviewer")
	if err := b.Reply(t.Context(), got, &transport.Message{Content: map[string]any{"action": "approved"}}); err != nil {
		t.Fatal(err)
	}
	related, err := b.Correlated(impl.MessageID)
	if err != nil {
		t.Fatal(err)
	}
	if len(related) != 3 || related[0].MessageID != impl.MessageID || related[1].MessageID != review.MessageID || related[2].Action() != "approved" {
		t.Errorf("got %v, want the implementation request, the review and its answer", ids(related))
	}
	if review.ConversationID == impl.ConversationID {
		t.Error("got one conversation, want two threads linked by correlation_id")
	}
}

func TestCommFlow_Conversation_CloseByOwnerAndRetention(t *testing.T) {
	b := conversationBus(t, bus.ConversationLimits{MaxThreads: 2})
	var roots []*transport.Message
	for range 3 {
		m := request("lead", "reviewer", "review")
		mustSend(t, b, m)
		roots = append(roots, m)
	}
	if msgs, _, _ := b.Conversation(roots[0].ConversationID); len(msgs) != 0 {
		t.Errorf("got %d messages of the oldest thread, want it forgotten beyond MaxThreads", len(msgs))
	}
	if err := b.CloseConversation(roots[2].ConversationID); err != nil {
		t.Fatal(err)
	}
	m := notice("reviewer", "lead", "after close")
	m.InReplyTo = roots[2].MessageID
	var ce *bus.ConversationClosedError
	if err := b.Send(t.Context(), m); !errors.As(err, &ce) || ce.Reason != bus.ConversationClosedByOwner {
		t.Errorf("got %v, want closed by its owner", err)
	}
	if err := b.CloseConversation("nope"); !errors.Is(err, transport.ErrValidation) {
		t.Errorf("got %v, want ErrValidation for an unknown thread", err)
	}
	off := newBus(t, nil)
	if _, _, err := off.Conversation("x"); !errors.Is(err, bus.ErrConversationsOff) {
		t.Errorf("got %v, want ErrConversationsOff without WithConversations", err)
	}
}

func TestCommFlow_Query_ShorterDefaultTimeout(t *testing.T) {
	tests := []struct {
		typ  transport.MessageType
		opts []bus.Option
		want time.Duration
	}{
		{transport.MessageQuery, nil, bus.DefaultQueryTimeout},
		{transport.MessageRequest, nil, bus.DefaultRequestTimeout},
		{transport.MessageQuery, []bus.Option{bus.WithQueryTimeout(5 * time.Second)}, 5 * time.Second},
	}
	if bus.DefaultQueryTimeout != 30*time.Second || bus.DefaultQueryTimeout >= bus.DefaultRequestTimeout {
		t.Fatalf("got query %v request %v, want 30s and a longer request timeout", bus.DefaultQueryTimeout, bus.DefaultRequestTimeout)
	}
	for _, tc := range tests {
		t.Run(string(tc.typ), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBus(t, []string{"registry"}, tc.opts...)
				q := &transport.Message{Type: tc.typ, From: "lead", To: "registry", Content: map[string]any{"action": "who_can_review"}}
				start := time.Now()
				_, err := b.Request(t.Context(), q)
				if !errors.Is(err, transport.ErrTimeout) || time.Since(start) != tc.want {
					t.Errorf("got %v after %v, want a timeout after %v", err, time.Since(start), tc.want)
				}
			})
		})
	}
}

func TestCommFlow_Query_NotificationExpectsNoReply(t *testing.T) {
	b := newBus(t, []string{"lead"})
	for _, typ := range []transport.MessageType{transport.MessageNotification, transport.MessageBroadcast, transport.MessageAck, transport.MessageError} {
		m := &transport.Message{Type: typ, From: "x", To: "lead", InReplyTo: "y", Content: map[string]any{"action": "fyi"}}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		_, err := b.Request(ctx, m)
		cancel()
		var ve *transport.ValidationError
		if !errors.As(err, &ve) || ve.Field != "message_type" {
			t.Errorf("%s: got %v, want a ValidationError on message_type", typ, err)
		}
	}
	mustSend(t, b, notice("x", "lead", "fyi")) // a notification is simply sent
	assertCounts(t, b, flowCounts{Accepted: 1, Queued: 1})
}

func TestCommFlow_Conversation_RepliesToBroadcastAndTopicCopies(t *testing.T) {
	b := conversationBus(t, bus.ConversationLimits{})
	if err := b.Subscribe("reviewer", "policy"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Broadcast(t.Context(), notice("lead", "", "maintenance")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Publish(t.Context(), "policy", notice("lead", "", "new_rule")); err != nil {
		t.Fatal(err)
	}
	if err := b.Subscribe("implementer", "policy"); err != nil { // replayed copy
		t.Fatal(err)
	}
	for _, agent := range []string{"reviewer", "implementer"} {
		for _, m := range receiveAll(t, b, agent) {
			if err := b.Reply(t.Context(), m, &transport.Message{Type: transport.MessageNotification, Content: map[string]any{"action": "noted"}}); err != nil {
				t.Errorf("%s replying to its copy of %q: got %v, want the copy known", agent, m.Action(), err)
			}
		}
	}
}
