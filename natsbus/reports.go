package natsbus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/batonhq/baton/wire"
)

// reportServers is how many reports one ServeReports handles at once.
const reportServers = 32

// DefaultReportTimeout bounds Report when its context has no deadline.
const DefaultReportTimeout = 10 * time.Second

// ServeReports answers the reports agents send on ReportsSubject: it decodes
// each with wire.DecodeReport, calls handle with ctx (an engine passes its
// HandleReport), and replies with the answer's JSON. A body that is not a
// report is answered {"ok": false, "code": "invalid"}. The subscription is
// in a queue group, so that several engines share the reports, and the
// server nc is connected to has it when ServeReports returns. stop ends
// the subscription and waits for the reports being handled.
func ServeReports(ctx context.Context, nc *nats.Conn, handle func(context.Context, *wire.Report) wire.Answer) (stop func() error, err error) {
	if ctx == nil || nc == nil || handle == nil {
		return nil, errors.New("natsbus: ServeReports needs a context, a connection and a handler")
	}
	// The subscription's callback hands each report to a free server and
	// waits while none is: the client library keeps what arrives meanwhile
	// in the subscription's pending buffer (a channel subscription would
	// drop reports once its channel is full).
	ch := make(chan *nats.Msg)
	done := make(chan struct{})
	sub, err := nc.QueueSubscribe(ReportsSubject, reportsQueue, func(m *nats.Msg) {
		select {
		case ch <- m:
		case <-done:
		}
	})
	if err != nil {
		return nil, fmt.Errorf("natsbus: serve reports: %w", err)
	}
	// The server this connection is on has the subscription once it
	// answers a ping; on a cluster the others learn of it a moment later
	// (a report sent to them meanwhile finds no responder and is sent
	// again).
	if err := nc.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("natsbus: serve reports: %w", err)
	}
	var wg sync.WaitGroup
	serve := func(m *nats.Msg) {
		data := answerOK
		if a := answer(ctx, m.Data, handle); a != (wire.Answer{OK: true}) {
			data = wire.EncodeAnswer(a)
		}
		_ = m.Respond(data) // copied as it is sent
	}
	for range reportServers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case m := <-ch:
					serve(m)
				case <-done:
					for {
						select {
						case m := <-ch:
							serve(m)
						default:
							return
						}
					}
				}
			}
		}()
	}
	var once sync.Once
	return func() error {
		var err error
		once.Do(func() {
			err = sub.Unsubscribe()
			close(done)
			wg.Wait()
		})
		return err
	}, nil
}

// answerOK is the JSON of the usual answer, written once.
var answerOK = wire.EncodeAnswer(wire.Answer{OK: true})

// answer is the engine's answer to one report's bytes.
func answer(ctx context.Context, data []byte, handle func(context.Context, *wire.Report) wire.Answer) wire.Answer {
	r, err := wire.DecodeReport(data)
	if err != nil {
		return wire.Answer{Code: wire.CodeInvalid, Message: err.Error()}
	}
	return handle(ctx, &r)
}

// Report sends r to the engines on ReportsSubject and returns the answer
// of the one that took it. Without a deadline on ctx it waits at most
// DefaultReportTimeout. An error means no answer came (no engine listens,
// or none answered in time): the report may or may not have been applied,
// and sending it again is safe (a second report of the same step is
// answered stale).
func Report(ctx context.Context, nc *nats.Conn, r wire.Report) (wire.Answer, error) {
	data, err := wire.EncodeReport(&r)
	if err != nil {
		return wire.Answer{}, fmt.Errorf("natsbus: encode report: %w", err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultReportTimeout)
		defer cancel()
	}
	msg, err := nc.RequestWithContext(ctx, ReportsSubject, data)
	if err != nil {
		return wire.Answer{}, fmt.Errorf("natsbus: report step %d of %s: %w", r.Step, r.InstanceID, err)
	}
	ans, err := wire.DecodeAnswer(msg.Data)
	if err != nil {
		return wire.Answer{}, fmt.Errorf("natsbus: answer to the report of step %d of %s: %w", r.Step, r.InstanceID, err)
	}
	return ans, nil
}
