package a2aserver

import (
	"io"
	"net/http"
	"time"

	"github.com/batonhq/baton/internal/sse"
	"github.com/batonhq/baton/ops"
)

// takeStream reserves a slot for a stream, before anything is started for
// it; release frees it.
func (h *Handler) takeStream() (release func(), e *Error) {
	select {
	case h.streams <- struct{}{}:
		return func() { <-h.streams }, nil
	default:
		e := rpcError(CodeInternal, "the server has its most streams open already: try again later")
		e.Data = map[string]any{"retry": true}
		return nil, e
	}
}

// stream answers a streaming send or a subscribe, its slot taken:
// server-sent events, each a JSON-RPC answer to the request: the task
// first, then a status update at each change of its status (an artifact
// update before a completed one), until it is finished or waits for
// input. wch, when not nil, is a watch begun before the send.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, req request, id string, wch *watcher) {
	if wch == nil {
		wch = h.watch(id)
		defer wch.stop()
	}
	ctx := r.Context()
	v, e := h.view(ctx, id)
	if e != nil {
		writeRPC(w, http.StatusOK, req.ID, nil, e)
		return
	}
	st, err := sse.Start(w, streamWriteTimeout)
	if err != nil {
		writeRPC(w, http.StatusOK, req.ID, nil, rpcError(CodeInternal, err.Error()))
		return
	}
	defer st.End()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	send := func(result any, e *Error) bool {
		data := encode(response{JSONRPC: "2.0", ID: req.ID, Result: result, Error: e})
		return st.Send(func(w io.Writer) {
			_, _ = io.WriteString(w, "data: ")
			_, _ = w.Write(data[:len(data)-1]) // without the encoder's newline
			_, _ = io.WriteString(w, "\n\n")
		}) == nil
	}
	if !send(req.D.streamTask(v), nil) || v.settled() {
		return
	}
	last := v.in.Status
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-wch.poke:
		case <-tick.C:
			if st.Send(func(w io.Writer) { _, _ = io.WriteString(w, ": keep-alive\n\n") }) != nil {
				return
			}
			continue
		case <-ctx.Done():
			return
		case <-wch.done:
			return
		}
		v, e := h.view(ctx, id)
		if e != nil {
			send(nil, e)
			return
		}
		if v.in.Status == last {
			continue
		}
		last = v.in.Status
		if v.in.Status == ops.StatusCompleted && !send(req.D.artifactUpdate(v), nil) {
			return
		}
		if !send(req.D.statusUpdate(v), nil) || v.settled() {
			return
		}
	}
}
