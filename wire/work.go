package wire

import (
	"context"
	"encoding/hex"
	"hash/fnv"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/transport"
)

// Sending says how Send sends a piece of work.
type Sending struct {
	// Key, when set, is the message's idempotency key in place of the
	// task's own: a transport drops a second send under one key, so work
	// sent again (as its instance resumes) goes under a key of its own.
	// The agent still reads the task's key.
	Key string
	// Offer offers the work (transport.Offerer) where the transport can:
	// a full mailbox refuses it without keeping a dead letter, for the
	// sender to try again later.
	Offer bool
}

// Send writes t into its HANDOFF message (Encode) and sends it through
// tr as how says: the codec and the send in one call, so that work reaches
// a transport only as this package writes it.
func Send(ctx context.Context, tr transport.Transport, t *registry.Task, how Sending) error {
	_, out := tr.(WorkWriter)
	var maps *workMaps
	if out {
		maps, _ = workMapsPool.Get().(*workMaps)
	}
	var m *transport.Message
	if maps != nil {
		m = encode(t, maps.content, maps.metadata)
	} else {
		m = Encode(t)
	}
	if how.Key != "" {
		m.IdempotencyKey = how.Key
	}
	var err error
	if o, ok := tr.(transport.Offerer); ok && how.Offer {
		err = o.OfferWork(ctx, m)
	} else {
		err = tr.SendWork(ctx, m)
	}
	if out && err == nil && len(m.Content) <= maxPooledEntries && len(m.Metadata) <= maxPooledEntries {
		// Written out and not kept: the maps serve the next work.
		clear(m.Content)
		clear(m.Metadata)
		workMapsPool.Put(&workMaps{content: m.Content, metadata: m.Metadata})
	}
	return err
}

// WorkWriter is implemented by a transport that writes a work message out
// as it sends it and keeps no reference to it, nor to its maps, once
// SendWork or OfferWork returned nil (natsbus's Transport): Send then
// reuses the message's content and metadata maps for the next work it
// encodes. Made for every work sent, the two maps were about a kilobyte
// of garbage per step on NATS.
type WorkWriter interface {
	// WritesWorkOut marks the transport; it does nothing.
	WritesWorkOut()
}

// workMaps are the maps of work a WorkWriter sent, cleared.
type workMaps struct{ content, metadata map[string]any }

var workMapsPool sync.Pool // *workMaps

// maxPooledEntries bounds the maps kept for reuse: a map keeps the size it
// grew to, and work carries at most twelve entries in each (the transport
// may add one).
const maxPooledEntries = 16

// Encode writes t into the HANDOFF message that carries it to t.Agent. The
// task's maps are shared with the message, not copied; context,
// previous_result, constraints and input are always objects. The message
// asks for an ack: the work stays in flight until its agent takes it.
func Encode(t *registry.Task) *transport.Message {
	return encode(t, nil, nil)
}

// encode is Encode writing into content and metadata, empty maps to reuse,
// or new maps when nil.
func encode(t *registry.Task, content, meta map[string]any) *transport.Message {
	from := t.From
	if from == "" {
		from = Engine
	}
	reason, explanation := t.Reason, ""
	if t.HandoffID != "" || t.Kind != "" {
		// An agent-to-agent hand-off, or work a rule sent with no agent
		// handing over (after a wait, say): its reason is the kind, and
		// the words say why.
		reason, explanation = t.Kind, t.Reason
	}
	// The exact count: a map of up to eight entries is one group, and a
	// hint of nine (an agent's hand-off, which explains itself) made a
	// table twice the size.
	n := 7
	if explanation != "" {
		n++
	}
	if t.ReturnControl {
		n++
	}
	if t.Payload != nil {
		n++
	}
	if t.HasItem {
		n += 2
	}
	if content == nil {
		content = make(map[string]any, n)
	}
	content[KeyAction] = actionOf(t)
	content[KeyTask] = t.Description
	content[KeyInput] = orEmpty(t.Input)
	content[KeyContext] = orEmpty(t.Context)
	content[KeyPreviousResult] = orEmpty(t.PreviousResult)
	content[KeyConstraints] = orEmpty(t.Constraints)
	content[KeyReason] = reason
	if explanation != "" {
		content[KeyExplanation] = explanation
	}
	if t.ReturnControl {
		content[KeyReturnControl] = true
	}
	if t.Payload != nil {
		content[KeyPayload] = t.Payload
	}
	if t.HasItem {
		content[KeyItem] = t.Item
		content[KeyIndex] = t.Index
	}
	if meta == nil {
		meta = make(map[string]any, 11)
	}
	meta[KeyWorkflow] = t.WorkflowID
	meta[KeyVersion] = t.Version
	meta[KeyInstanceID] = t.InstanceID
	meta[KeyStep] = t.Step
	meta[KeyAttempt] = t.Attempt
	meta[KeyState] = t.State
	meta[KeyHandoffID] = t.HandoffID // always there, "" for the engine's own dispatches
	meta[KeyIdempotencyKey] = t.Key()
	meta[KeyTraceparent] = t.Traceparent
	if !t.Deadline.IsZero() {
		meta[KeyDeadline] = t.Deadline.UTC().Format(time.RFC3339Nano)
	}
	if t.Heartbeat > 0 {
		meta[KeyHeartbeat] = t.Heartbeat.Seconds()
	}
	return &transport.Message{
		Type:        transport.MessageHandoff,
		From:        from,
		To:          t.Agent,
		Priority:    transport.PriorityFromRank(t.Priority),
		Content:     content,
		Metadata:    meta,
		RequiresAck: true,
	}
}

func actionOf(t *registry.Task) string {
	if t.Notice {
		return ActionNotice
	}
	return ActionRun
}

// Decode reads the task a HANDOFF message carries, from its content and
// metadata as Encode wrote them or as they come back from JSON (numbers as
// float64). A message that is not such work is a *FieldError naming the
// first field that is wrong.
func Decode(m *transport.Message) (*registry.Task, error) {
	if m == nil {
		return nil, fieldError("message", "is nil")
	}
	var f workFields
	f.fromMaps(m.Content, m.Metadata)
	return decodeTask(m, &f)
}

// decodeTask reads the task of m, whose content and metadata entries are
// f, with Decode's errors.
func decodeTask(m *transport.Message, f *workFields) (*registry.Task, error) {
	if m.Type != transport.MessageHandoff {
		return nil, fieldError("message_type", "is "+strconv.Quote(string(m.Type))+", not HANDOFF")
	}
	t := &registry.Task{Agent: m.To, Priority: m.Priority.Rank()}
	if m.From != Engine {
		t.From = m.From
	}
	var (
		err         error
		explanation string
	)
	switch a, _ := f.string(fAction); a {
	case ActionRun:
	case ActionNotice:
		t.Notice = true
	default:
		return nil, fieldError("content.action", "must be \"run\" or \"notice\"")
	}
	if t.InstanceID, err = f.str(fInstanceID, true); err != nil {
		return nil, err
	}
	if t.Step, err = f.integer(fStep, true); err != nil {
		return nil, err
	}
	if t.Step < 1 {
		return nil, fieldError("metadata.step", "must be 1 or more")
	}
	if t.Attempt, err = f.integer(fAttempt, false); err != nil {
		return nil, err
	}
	if t.Version, err = f.integer(fVersion, false); err != nil {
		return nil, err
	}
	for _, s := range [...]struct {
		dst *string
		i   int
	}{
		{&t.WorkflowID, fWorkflow}, {&t.State, fState}, {&t.HandoffID, fHandoffID},
		{&t.IdempotencyKey, fIdempotencyKey}, {&t.Traceparent, fTraceparent},
		{&t.Description, fTask}, {&t.Reason, fReason}, {&explanation, fExplanation},
	} {
		if *s.dst, err = f.str(s.i, false); err != nil {
			return nil, err
		}
	}
	if t.HandoffID != "" || t.Reason == ReasonRule {
		// An agent-to-agent hand-off, or work a rule sent: reason is its
		// kind, explanation its words. The engine's other dispatches have
		// no words beyond their reason, so an explanation there is
		// dropped, as Encode never writes one.
		t.Kind, t.Reason = t.Reason, explanation
	}
	t.IdempotencyKey = t.Key()
	for _, o := range [...]struct {
		dst *map[string]any
		i   int
	}{
		{&t.Input, fInput}, {&t.Context, fContext}, {&t.PreviousResult, fPreviousResult},
		{&t.Constraints, fConstraints}, {&t.Payload, fPayload},
	} {
		if *o.dst, err = f.object(o.i); err != nil {
			return nil, err
		}
	}
	if v, ok := f.get(fReturnControl); ok {
		b, isBool := v.(bool)
		if !isBool {
			return nil, fieldError("content.return_control", "must be a boolean")
		}
		t.ReturnControl = b
	}
	if item, ok := f.get(fItem); ok {
		t.Item, t.HasItem = item, true
		if t.Index, err = f.integer(fIndex, true); err != nil {
			return nil, err
		}
	}
	if s, err := f.str(fDeadline, false); err != nil {
		return nil, err
	} else if s != "" {
		if t.Deadline, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return nil, fieldError("metadata.deadline", "must be an RFC 3339 time")
		}
		// Encode writes the deadline in UTC, where an offset can push the
		// year out of the four digits RFC 3339 has.
		if y := t.Deadline.UTC().Year(); y < 0 || y > 9999 {
			return nil, fieldError("metadata.deadline", "must be an RFC 3339 time")
		}
	}
	if v, ok := f.get(fHeartbeat); ok {
		// Rounded, not truncated: Encode writes Duration.Seconds, whose
		// float64 may fall a hair short of the nanoseconds it stands for.
		secs, isNum := number(v)
		ns := math.Round(secs * float64(time.Second))
		if !isNum || secs < 0 || ns >= 1<<63 {
			return nil, fieldError("metadata.heartbeat", "must be a number of seconds")
		}
		t.Heartbeat = time.Duration(ns)
	}
	return t, nil
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, !math.IsNaN(n) && !math.IsInf(n, 0)
	}
	return 0, false
}

// orEmpty returns m, or a new empty map for nil: a map shared by every
// message would be shared by every task decoded in process too, and one
// handler writing into it would write into all of them.
func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// Traceparent is the W3C trace context of work whose sender has none: the
// instance is the trace and the step (its idempotency key) the span, so
// that an agent's spans join the instance's trace even when no exporter is
// configured. The engine gives it to the work it sends; an HTTP agent's
// call made for a Go handler derives the same.
func Traceparent(instanceID, key string) string {
	h := fnv.New128a()
	h.Write([]byte(instanceID))
	var trace [16]byte
	h.Sum(trace[:0])
	s := fnv.New64a()
	s.Write([]byte(key))
	var span [8]byte
	s.Sum(span[:0])
	trace[0] |= 1 // never the all-zero id, which W3C forbids
	span[0] |= 1
	return "00-" + hex.EncodeToString(trace[:]) + "-" + hex.EncodeToString(span[:]) + "-01"
}
