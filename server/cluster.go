package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/batonhq/baton/natscluster"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/wire"
)

// ClusterPartitions is how many partitions the instances of servers
// sharing a NATS system are split into, each owned by one server at a
// time.
const ClusterPartitions = 64

// cluster is a server's membership among the servers sharing a NATS
// system (--nats URL): the partitions of instances it owns, the calls it
// forwards to the owners of the others, and the events it shares.
type cluster struct {
	node   *natscluster.Node
	store  *natsstore.Store
	events string // the subject prefix of the servers' events
	self   string // this server's events subject
	nc     *nats.Conn
	stop   func() error // ends the reports
	sub    *nats.Subscription
	ready  atomic.Bool // the events bridge is on
}

// Operations a server forwards to the owner of an instance.
const (
	opStart  = "start"
	opSignal = "signal"
	opSelect = "select"
	opCancel = "cancel"
)

// call is an operation on an instance, run by the server that owns it.
type call struct {
	Op          string         `json:"op"`
	ID          string         `json:"id"`
	Workflow    string         `json:"workflow,omitempty"`
	Version     int            `json:"version,omitempty"`
	Input       map[string]any `json:"input,omitempty"`
	Traceparent string         `json:"traceparent,omitempty"`
	Name        string         `json:"name,omitempty"`
	Data        map[string]any `json:"data,omitempty"`
	Agent       string         `json:"agent,omitempty"`
	Explanation string         `json:"explanation,omitempty"`
	Reason      string         `json:"reason,omitempty"` // a cancel's
}

// callAnswer is what the owner answers a call.
type callAnswer struct {
	Summary Summary    `json:"summary"`
	Created bool       `json:"created,omitempty"`
	Error   *callError `json:"error,omitempty"`
}

// callError is an apiError as it travels between servers.
type callError struct {
	Status     int    `json:"status"`
	Code       string `json:"code"`
	Message    string `json:"message"`
	Field      string `json:"field,omitempty"`
	RetryAfter bool   `json:"retry_after,omitempty"`
}

func (a callAnswer) err() *apiError {
	if a.Error == nil {
		return nil
	}
	e := a.Error
	return &apiError{Status: e.Status, Code: e.Code, Message: e.Message, Field: e.Field, RetryAfter: e.RetryAfter}
}

func answerOf(sum Summary, created bool, e *apiError) callAnswer {
	a := callAnswer{Summary: sum, Created: created}
	if e != nil {
		a.Error = &callError{Status: e.Status, Code: e.Code, Message: e.Message, Field: e.Field, RetryAfter: e.RetryAfter}
	}
	return a
}

// forwardedKey marks the context of a call another server forwarded: it
// runs here, whoever owns the instance by now (a commit of a server that
// lost the partition is refused by the store).
type forwardedKey struct{}

// elsewhere runs c on the server owning its instance when that is not
// this one; forwarded is false when c is to run here.
func (s *Server) elsewhere(ctx context.Context, c call) (callAnswer, bool) {
	if s.clu == nil || ctx.Value(forwardedKey{}) != nil || s.clu.node.Owns(c.ID) {
		return callAnswer{}, false
	}
	data, err := json.Marshal(c)
	if err != nil {
		field := "data"
		if c.Op == opStart {
			field = "input"
		}
		return answerOf(Summary{}, false, badField(field, "cannot be encoded: "+err.Error())), true
	}
	// The owner bounds its work by callTimeout: the caller waits a little
	// longer, so that an answer on time is not missed.
	ctx, cancel := context.WithTimeout(ctx, s.callTimeout()+s.clu.node.Timeout())
	defer cancel()
	out, err := s.clu.node.Call(ctx, c.ID, data)
	switch {
	case errors.Is(err, nats.ErrMaxPayload):
		return answerOf(Summary{}, false, &apiError{Status: http.StatusRequestEntityTooLarge, Code: "too_large",
			Message: "the request is larger than the NATS server lets one server pass to another: " + err.Error()}), true
	case err != nil:
		return answerOf(Summary{}, false, retryLater(unavailable("the server owning instance "+c.ID+" did not answer: "+err.Error()))), true
	}
	var ans callAnswer
	if err := json.Unmarshal(out, &ans); err != nil || (ans.Error != nil && (ans.Error.Status < 400 || ans.Error.Status > 599)) {
		return answerOf(Summary{}, false, unavailable("the server owning instance "+c.ID+" answered what is no answer")), true
	}
	return ans, true
}

// callTimeout bounds the work of a call run for another server: a start
// waits up to StartWait for room, and an operation on an instance gets as
// long as a request does at shutdown.
func (s *Server) callTimeout() time.Duration { return s.cfg.StartWait + s.cfg.GracePeriod }

// runCall runs a call forwarded by another server (or this one's own,
// when it owns the instance by the time the call is made).
func (s *Server) runCall(ctx context.Context, id string, data []byte) []byte {
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, forwardedKey{}, true), s.callTimeout())
	defer cancel()
	var ans callAnswer
	if c, e := decodeCall(data, id); e != nil {
		ans = answerOf(Summary{}, false, e)
	} else {
		switch c.Op {
		case opStart:
			var version *int
			if c.Version > 0 {
				version = &c.Version
			}
			sum, created, e := s.startInstance(ctx, c.Workflow, startRequest{Input: c.Input, ID: &c.ID, Version: version}, c.Traceparent)
			ans = answerOf(sum, created, e)
		case opSignal:
			sum, e := s.sendSignal(ctx, c.ID, c.Name, c.Data)
			ans = answerOf(sum, false, e)
		case opSelect:
			sum, e := s.selectInstance(ctx, c.ID, c.Agent, c.Explanation)
			ans = answerOf(sum, false, e)
		case opCancel:
			sum, e := s.cancelInstance(ctx, c.ID, c.Reason)
			ans = answerOf(sum, false, e)
		}
	}
	out, _ := json.Marshal(ans) // plain structs: cannot fail
	return out
}

// moving reports whether an unfinished instance its engine does not hold
// is moving between the servers of a cluster (a takeover under way), as
// opposed to one that has ended.
func (s *Server) moving(snap record.Snapshot) bool {
	return s.clu != nil && !snap.Status.Finished()
}

// movingError answers a request for an instance moving between servers.
func movingError(id string) *apiError {
	return retryLater(unavailable("instance " + id + " is moving between servers: try again"))
}

// decodeCall reads a call forwarded for instance id: a 400 naming the
// field when it is not one.
func decodeCall(data []byte, id string) (call, *apiError) {
	var c call
	if err := json.Unmarshal(data, &c); err != nil {
		return c, badField("call", "is not JSON: "+err.Error())
	}
	switch {
	case c.ID != id:
		return c, badField("id", fmt.Sprintf("%q is not the instance the call was sent for (%q)", c.ID, id))
	case c.Op == opStart && c.Workflow == "":
		return c, badField("workflow", "is required to start an instance")
	case c.Op == opSignal && c.Name == "":
		return c, badField("name", "is required to send a signal")
	case c.Op == opSelect && c.Agent == "":
		return c, badField("agent", "is required")
	case c.Op != opStart && c.Op != opSignal && c.Op != opSelect && c.Op != opCancel:
		return c, badField("op", fmt.Sprintf("%q is not an operation (start, signal, select, cancel)", c.Op))
	}
	return c, nil
}

// joinCluster makes the server one of those sharing its NATS system: it
// takes its share of the partitions (resuming their instances), answers
// the reports and calls for them, and shares its events with the others.
func (s *Server) joinCluster(ctx context.Context) error {
	b := s.back
	c := &cluster{store: b.natsStore, nc: b.nc, events: b.natsStore.Prefix() + ".events."}
	s.clu = c
	node, err := natscluster.Start(ctx, b.nc, b.natsStore, natscluster.Config{
		Name:      s.cfg.Name,
		Replicas:  max(s.cfg.Replicas, 1),
		LeaseTTL:  s.cfg.LeaseTTL,
		Logger:    s.log,
		OnAcquire: s.acquire,
		OnRelease: s.release,
	})
	if err != nil {
		s.clu = nil
		return fmt.Errorf("server: join the servers on NATS: %w", err)
	}
	c.node = node
	c.self = c.events + node.Name()
	if err := node.ServeCalls(s.runCall); err != nil {
		return err
	}
	c.sub, err = b.nc.Subscribe(c.events+"*", s.remoteEvent)
	if err != nil {
		return fmt.Errorf("server: take the other servers' events: %w", err)
	}
	c.ready.Store(true)
	s.awaitPartitions(ctx, node)
	c.stop, err = node.ServeReports(context.Background(), func(ctx context.Context, r *wire.Report) wire.Answer {
		ans, err := s.route(ctx, r)
		if err != nil {
			return wire.Answer{Code: wire.CodeUnknownInstance, Message: err.Error()}
		}
		return ans
	})
	if err != nil {
		return fmt.Errorf("server: serve reports on NATS: %w", err)
	}
	return nil
}

// awaitPartitions waits, before the server takes requests, until it owns
// partitions and every one it leased is ready (fenced and resumed, which
// goes a partition at a time): on a new cluster no server owns any for the
// first moments, and requests for a partition leased but not ready find no
// owner and answer 503. It gives up after a few lease times (the others
// may hold every partition a while longer: requests are forwarded to them
// meanwhile).
func (s *Server) awaitPartitions(ctx context.Context, node *natscluster.Node) {
	limit := time.Now().Add(max(3*node.LeaseTTL(), 30*time.Second))
	for len(node.Partitions()) == 0 || node.Settling() > 0 {
		if time.Now().After(limit) || ctx.Err() != nil {
			s.log.Warn("server: serving before its partitions are ready: the other servers hold them for now, or fencing them takes longer")
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	s.log.Info("server: sharing the instances", zap.String("name", node.Name()), zap.Int("partitions", len(node.Partitions())))
}

// leave hands the server's partitions to the others and stops its part in
// the cluster. Safe without a cluster.
func (s *Server) leave() {
	c := s.clu
	if c == nil {
		return
	}
	if c.stop != nil {
		if err := c.stop(); err != nil {
			s.log.Warn("server: reports not stopped cleanly", zap.Error(err))
		}
	}
	c.ready.Store(false)
	if c.sub != nil {
		_ = c.sub.Unsubscribe()
	}
	if c.node != nil {
		if err := c.node.Close(); err != nil {
			s.log.Warn("server: partitions not handed over cleanly", zap.Error(err))
		}
	}
}

// partitionSet is a test of whether an id is in one of partitions.
func (s *Server) partitionSet(partitions []int) func(string) bool {
	return func(id string) bool { return slices.Contains(partitions, s.clu.store.Partition(id)) }
}

// acquire resumes the instances of partitions the server has just taken,
// first building the engine of any version another server started one of
// them on that this one has none of (from the source the store keeps).
// Only a failed read of the store fails it: an instance that cannot be
// resumed is logged, and tried again at the node's next recheck.
func (s *Server) acquire(ctx context.Context, partitions []int) error {
	in := s.partitionSet(partitions)
	snaps, err := s.store.Instances(ctx)
	if err != nil {
		return fmt.Errorf("server: read the instances to take over: %w", err)
	}
	for _, snap := range snaps {
		if snap.Status.Finished() || snap.Hash == "" || !in(snap.ID) {
			continue
		}
		f, added, err := s.cat.load(ctx, snap.Hash)
		if err != nil {
			s.log.Error("server: instance of a version this server cannot run", zap.String("instance", snap.ID), zap.Error(err))
			continue
		}
		if added {
			s.log.Info("server: runs a version another server started", zap.String("workflow", f.wf.Name), zap.Int("version", f.wf.Version))
			s.metrics.engines.Watch(f.eng)
		}
	}
	var errs []error
	for _, f := range s.cat.flows() {
		rep, err := f.eng.ResumeListed(ctx, snaps, in)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for id, ferr := range rep.Failed {
			s.log.Error("server: instance not resumed", zap.String("instance", id), zap.Error(ferr))
		}
		if len(rep.Resumed) > 0 {
			s.log.Info("server: instances taken over", zap.String("workflow", f.wf.Name), zap.Int("version", f.wf.Version), zap.Int("count", len(rep.Resumed)))
		}
	}
	return errors.Join(errs...)
}

// release drops the instances of partitions the server gave up or lost.
func (s *Server) release(partitions []int) {
	in := s.partitionSet(partitions)
	for _, f := range s.cat.flows() {
		f.eng.Release(in)
	}
	s.live.forget(in)
}

// shareEvent sends an event of this server's engines to the others.
func (s *Server) shareEvent(ev Event) {
	c := s.clu
	if c == nil || !c.ready.Load() {
		return
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return
	}
	if err := c.nc.Publish(c.self, data); err != nil {
		s.log.Debug("server: event not shared", zap.Error(err))
	}
}

// remoteEvent takes another server's event into this one's stream.
func (s *Server) remoteEvent(m *nats.Msg) {
	if m.Subject == s.clu.self {
		return
	}
	var ev Event
	if err := json.Unmarshal(m.Data, &ev); err != nil || !strings.HasPrefix(m.Subject, s.clu.events) {
		s.log.Debug("server: an event that is none", zap.String("subject", m.Subject))
		return
	}
	s.hub.publish(ev)
}

// Partitions are the partitions of instances this server owns among the
// servers sharing its NATS system, sorted; nil when it shares none (an
// embedded NATS server, or none).
func (s *Server) Partitions() []int {
	if s.clu == nil || s.clu.node == nil {
		return nil
	}
	return s.clu.node.Partitions()
}

// Owns reports whether this server runs instance id: always without a
// cluster; in one, when it owns the id's partition.
func (s *Server) Owns(id string) bool {
	if s.clu == nil || s.clu.node == nil {
		return true
	}
	return s.clu.node.Owns(id)
}
