package engine_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/transport"
	"github.com/batonhq/baton/wire"
)

// The helpers below are what an external agent's worker does with work it
// took from the transport (natsbus.Worker does the same): read the task,
// ack the message, and report through the engine's own API — Report for a
// run's outcome, HandleReport for a final notice (any report of its step
// settles it) and for taking the work (a heartbeat).

// takeWork reads the task in m and acks m on eng's transport.
func takeWork(ctx context.Context, eng *engine.Engine, m *transport.Message) (*registry.Task, error) {
	t, err := wire.Decode(m)
	if err != nil {
		return nil, err
	}
	if m.RequiresAck {
		_ = eng.Transport().Ack(ctx, m)
	}
	return t, nil
}

// reportWork reports the outcome of the work in m; a final notice asks
// for no outcome, and reporting it settles it.
func reportWork(ctx context.Context, eng *engine.Engine, m *transport.Message, out registry.Outcome, runErr error) error {
	t, err := takeWork(ctx, eng, m)
	if err != nil {
		return err
	}
	if t.Notice {
		return settleNotice(ctx, eng, t)
	}
	return eng.Report(ctx, t.InstanceID, t.Step, out, runErr)
}

// acceptWork tells the engine that the agent took the work in m (a
// heartbeat); for a final notice, that settles it.
func acceptWork(ctx context.Context, eng *engine.Engine, m *transport.Message) error {
	t, err := takeWork(ctx, eng, m)
	if err != nil {
		return err
	}
	if t.Notice {
		return settleNotice(ctx, eng, t)
	}
	return answerErr(eng.HandleReport(ctx, &wire.Report{InstanceID: t.InstanceID, Step: t.Step, Agent: t.Agent, Heartbeat: true}))
}

// settleNotice reports the final notice t as taken.
func settleNotice(ctx context.Context, eng *engine.Engine, t *registry.Task) error {
	return answerErr(eng.HandleReport(ctx, &wire.Report{InstanceID: t.InstanceID, Step: t.Step, Agent: t.Agent, Trigger: "noticed"}))
}

// isFinalNotice reports whether m carries a final notice.
func isFinalNotice(m *transport.Message) bool {
	t, err := wire.Decode(m)
	return err == nil && t.Notice
}

// answerErr turns the engine's answer to a report back into the error the
// engine's sentinels match.
func answerErr(a wire.Answer) error {
	switch {
	case a.OK:
		return nil
	case a.Code == wire.CodeStale:
		return fmt.Errorf("%w (%s)", engine.ErrStaleReport, a.Message)
	case a.Code == wire.CodeUnknownInstance:
		return fmt.Errorf("%w (%s)", engine.ErrUnknownInstance, a.Message)
	}
	return errors.New(a.Message)
}
