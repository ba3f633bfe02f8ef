package natsbus

import (
	"context"
	"sort"
	"strings"

	"github.com/batonhq/baton/transport"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
)

// Metrics returns the accounting of every process sharing the NATS system,
// read from the streams' and consumers' state, so that the counts add up as
// the bus's do:
//
//	Accepted == Delivered + DeadLettered + Queued + InFlight
//
// Each work stream has given a sequence number to every message it stored,
// so its last sequence counts them; the messages it holds are queued or in
// flight (the consumers' pending acks); the others left it delivered (acked)
// or dead-lettered (counted in the dead-letter stream by subject). Messages
// refused before they were stored (a full mailbox, an unknown agent) count
// as accepted and dead-lettered, as on the bus. While a message is being
// dead-lettered it may briefly count twice. With DeadLetterMaxAge set, dead
// letters older than that no longer count and the sum falls short of
// Accepted by them.
//
// Acks, Nacks, Rejects, Redeliveries, Duplicates and ValidationErrors are
// this process's own counts. When the server cannot be read, Metrics returns
// those alone.
func (t *Transport) Metrics() transport.Snapshot {
	s := transport.Snapshot{
		Acks: t.acks.Load(), Nacks: t.nacks.Load(), Rejects: t.rejects.Load(),
		Redeliveries: t.redeliveries.Load(), Duplicates: t.duplicates.Load(), ValidationErrors: t.invalid.Load(),
		DeadLettersByReason: map[transport.DeadLetterReason]uint64{},
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.Timeout)
	defer cancel()
	dead, held, err := t.deadCounts(ctx)
	if err != nil {
		t.log.Warn("natsbus: metrics: dead letters not read", zap.Error(err))
		return s
	}
	s.DeadLettersHeld = held
	names := t.js.StreamNames(ctx, jetstream.WithStreamListSubject(WorkPrefix+">"))
	var agents []string
	for name := range names.Name() {
		if strings.HasPrefix(name, WorkStreamPrefix) {
			agents = append(agents, agentOf(strings.TrimPrefix(name, WorkStreamPrefix)))
		}
	}
	if err := names.Err(); err != nil {
		t.log.Warn("natsbus: metrics: streams not listed", zap.Error(err))
		return s
	}
	for _, agent := range agents {
		a, err := t.agentStats(ctx, agent, dead[agent])
		if err != nil {
			t.log.Warn("natsbus: metrics: stream not read", zap.String("agent", agent), zap.Error(err))
			continue
		}
		s.Agents = append(s.Agents, a)
	}
	// Dead letters of agents without a stream (never opened) count too.
	seen := map[string]bool{}
	for _, a := range s.Agents {
		seen[a.Agent] = true
	}
	for agent, byReason := range dead {
		if !seen[agent] {
			var n uint64
			for _, c := range byReason {
				n += c
			}
			s.Accepted += n
			s.DeadLettered += n
		}
	}
	for _, a := range s.Agents {
		s.Accepted += a.Accepted
		s.Delivered += a.Delivered
		s.DeadLettered += a.DeadLettered
		s.Queued += a.Depth
		s.InFlight += a.AwaitingAck
	}
	for _, byReason := range dead {
		for r, c := range byReason {
			s.DeadLettersByReason[transport.DeadLetterReason(strings.TrimSuffix(string(r), refusedSuffix))] += c
		}
	}
	s.Expired = s.DeadLettersByReason[transport.ReasonTTLExpired]
	sort.Slice(s.Agents, func(i, j int) bool { return s.Agents[i].Agent < s.Agents[j].Agent })
	return s
}

// deadCounts reads the dead-letter stream's count of each subject, by agent
// and reason, and how many dead letters it holds.
func (t *Transport) deadCounts(ctx context.Context) (map[string]map[transport.DeadLetterReason]uint64, int, error) {
	s, err := t.js.Stream(ctx, DeadStream)
	if err != nil {
		return nil, 0, err
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(DeadPrefix+">"))
	if err != nil {
		return nil, 0, err
	}
	out := map[string]map[transport.DeadLetterReason]uint64{}
	for subj, n := range info.State.Subjects {
		rest := strings.TrimPrefix(subj, DeadPrefix)
		// A refused letter's reason keeps its suffix here, for agentStats.
		dot := strings.LastIndexByte(strings.TrimSuffix(rest, refusedSuffix), '.')
		if dot < 0 {
			continue
		}
		agent := agentOf(rest[:dot])
		if out[agent] == nil {
			out[agent] = map[transport.DeadLetterReason]uint64{}
		}
		out[agent][transport.DeadLetterReason(rest[dot+1:])] += n
	}
	return out, int(info.State.Msgs), nil
}

// agentStats reads one agent's work stream and consumers.
func (t *Transport) agentStats(ctx context.Context, agent string, dead map[transport.DeadLetterReason]uint64) (transport.AgentStats, error) {
	a := transport.AgentStats{Agent: agent}
	mb, err := t.box(ctx, agent)
	if err != nil {
		return a, err
	}
	info, err := mb.stream.Info(ctx)
	if err != nil {
		return a, err
	}
	inflight := 0
	for _, c := range mb.cons {
		ci, err := c.Info(ctx)
		if err != nil {
			return a, err
		}
		inflight += ci.NumAckPending
	}
	held := int(info.State.Msgs)
	inflight = min(inflight, held)
	var fromStream, refused uint64
	for r, n := range dead {
		if r == transport.ReasonQueueOverflow || r == transport.ReasonReceiverNotFound || strings.HasSuffix(string(r), refusedSuffix) {
			refused += n
		} else {
			fromStream += n
		}
	}
	stored := info.State.LastSeq
	a.Capacity = int(info.Config.MaxMsgs)
	a.Depth = held - inflight
	a.AwaitingAck = inflight
	a.Accepted = stored + refused
	a.DeadLettered = fromStream + refused
	left := stored - uint64(held)
	if left >= fromStream {
		a.Delivered = left - fromStream
	}
	return a, nil
}
