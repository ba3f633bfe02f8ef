package natsbus

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/transport"
	"github.com/nats-io/nats.go"
)

// sentWork remembers the work a Transport stored, by work stream and
// sequence: the message's JSON as it was sent. An agent on a plain client
// that terminates its work leaves only the stream and the sequence in
// JetStream's advisory, and the work-queue stream has removed the message
// by then; this is where its dead letter finds the work's instance, step
// and idempotency key again. It keeps at most maxSent messages and
// maxSentBytes of them; past that the oldest are forgotten, and the dead
// letter of forgotten work says only what the advisory tells.
type sentWork struct {
	mu    sync.Mutex
	items map[sentAt][]byte
	order []sentAt // keys in the order kept; may hold keys taken since
	bytes int
}

// The bounds of a Transport's memory of the work it sent: about what one
// busy engine has in flight, a few megabytes at most.
const (
	maxSent      = 4096
	maxSentBytes = 16 << 20
)

func newSentWork() *sentWork { return &sentWork{items: map[sentAt][]byte{}} }

// sentAt is where a work message was stored: a struct, not a string built
// per send, since every send keeps one.
type sentAt struct {
	stream string
	seq    uint64
}

func sentKey(stream string, seq uint64) string { return stream + "." + strconv.FormatUint(seq, 10) }

// put keeps data, the work stored in stream at seq.
func (s *sentWork) put(stream string, seq uint64, data []byte) {
	if len(data) > maxSentBytes {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := sentAt{stream, seq}
	if old, ok := s.items[key]; ok {
		s.bytes -= len(old)
	} else {
		s.order = append(s.order, key)
	}
	s.items[key] = data
	s.bytes += len(data)
	for (len(s.items) > maxSent || s.bytes > maxSentBytes) && len(s.order) > 0 {
		old := s.order[0]
		s.order[0] = sentAt{}
		s.order = s.order[1:]
		if d, ok := s.items[old]; ok {
			s.bytes -= len(d)
			delete(s.items, old)
		}
	}
	// Keys taken leave their place in order behind: compact it once it is
	// mostly such places.
	if len(s.order) > 2*maxSent {
		s.order = compactOrder(s.order, s.items)
	}
}

func compactOrder(order []sentAt, items map[sentAt][]byte) []sentAt {
	out := make([]sentAt, 0, len(items))
	for _, k := range order {
		if _, ok := items[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

// get returns the work stored in stream at seq, if it is remembered.
func (s *sentWork) get(stream string, seq uint64) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.items[sentAt{stream, seq}]
	return d, ok
}

// forget drops the work stored in stream at seq.
func (s *sentWork) forget(stream string, seq uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := sentAt{stream, seq}
	if d, ok := s.items[key]; ok {
		s.bytes -= len(d)
		delete(s.items, key)
	}
}

// sentSubject starts the subjects on which Transports answer for the work
// they sent: sentSubject + <stream>.<seq>. A Transport that hears of work
// terminated that it did not send asks the others there.
const sentSubject = "_BATON.natsbus.sent."

// sentAsk bounds how long a Transport waits for another to tell the work
// terminated it did not send: where no Transport remembers it, the dead
// letter waits that long (dead letters are few, and wait on no one else).
const sentAsk = time.Second

// answerSent answers an ask for work this Transport sent, when it
// remembers it; others stay silent.
func (t *Transport) answerSent(m *nats.Msg) {
	rest := strings.TrimPrefix(m.Subject, sentSubject)
	i := strings.LastIndexByte(rest, '.')
	if i < 0 || m.Reply == "" {
		return
	}
	seq, err := strconv.ParseUint(rest[i+1:], 10, 64)
	if err != nil {
		return
	}
	if data, ok := t.sent.get(rest[:i], seq); ok {
		_ = m.Respond(data)
	}
}

// terminatedWork is the work stored in stream at seq, which an agent
// terminated: as this Transport sent it, as another one answers for it,
// or, where none remembers it, a message holding only what the advisory
// tells.
func (t *Transport) terminatedWork(ctx context.Context, stream string, seq uint64) *transport.Message {
	data, ok := t.sent.get(stream, seq)
	t.sent.forget(stream, seq)
	if !ok {
		actx, cancel := context.WithTimeout(ctx, min(sentAsk, t.cfg.Timeout))
		ans, err := t.nc.RequestWithContext(actx, sentSubject+sentKey(stream, seq), nil)
		cancel()
		if err == nil {
			data, ok = ans.Data, true
		}
	}
	if ok {
		var m transport.Message
		if err := json.Unmarshal(data, &m); err == nil && m.MessageID != "" {
			return &m
		}
	}
	return &transport.Message{MessageID: stream + ":" + strconv.FormatUint(seq, 10), Type: transport.MessageHandoff,
		To: agentOf(strings.TrimPrefix(stream, WorkStreamPrefix)), Content: map[string]any{"action": "unknown"}}
}
