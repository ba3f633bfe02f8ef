package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/ops"
)

// agents answers GET /v1/agents: every agent of every workflow served.
func (s *Server) agents(w http.ResponseWriter, r *http.Request) {
	list, err := s.ops.Agents(r.Context())
	if err != nil {
		writeError(w, apiErrorOf(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"agents": list})
}

// opsQueues are the options of the operations layer that read the agents'
// queues: from their JetStream work streams on a server with NATS, none
// otherwise (the in-memory transport's agents are the server's own).
func (s *Server) opsQueues() []ops.Option {
	if s.back == nil || s.back.nc == nil {
		return nil
	}
	js, err := jetstream.New(s.back.nc)
	if err != nil {
		return nil
	}
	return []ops.Option{ops.WithQueues(natsQueues{js: js})}
}

// natsQueues reads an external agent's queue from its work stream: the
// messages held (a work queue stream keeps a message until it is acked),
// and, summed over the stream's consumers (one per priority level), the
// work not yet taken, the work taken and not acked, the last delivery and
// whether a pull is waiting.
type natsQueues struct{ js jetstream.JetStream }

func (q natsQueues) Queue(ctx context.Context, agent string) (ops.QueueState, error) {
	var st ops.QueueState
	stream, err := q.js.Stream(ctx, natsbus.WorkStream(agent))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return st, nil // no work was ever sent to it
	}
	if err != nil {
		return st, fmt.Errorf("server: the work stream of %s: %w", agent, err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return st, fmt.Errorf("server: the work stream of %s: %w", agent, err)
	}
	if info.State.Msgs > 0 {
		st.Oldest = info.State.FirstTime
	}
	consumers := stream.ListConsumers(ctx)
	for ci := range consumers.Info() {
		st.Queued += int(ci.NumPending)
		st.InFlight += ci.NumAckPending
		st.Pulling = st.Pulling || ci.NumWaiting > 0
		if last := ci.Delivered.Last; last != nil && last.After(st.Pulled) {
			st.Pulled = *last
		}
	}
	if err := consumers.Err(); err != nil && !errors.Is(err, nats.ErrTimeout) {
		return st, fmt.Errorf("server: the consumers of %s: %w", agent, err)
	}
	return st, nil
}
