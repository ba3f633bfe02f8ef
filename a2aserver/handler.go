package a2aserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/ops"
)

// Paths and defaults.
const (
	// Prefix is the path under which the workflows are served: a server
	// mounts the Handler there.
	Prefix = "/a2a/"
	// CardPath is where an agent's card is, under the agent's URL.
	CardPath = "/.well-known/agent-card.json"
	// DefaultMaxWait bounds how long a send's answer waits for its task to
	// finish or to ask for input.
	DefaultMaxWait = 60 * time.Second
	// DefaultMaxBody is the largest request body read.
	DefaultMaxBody = 1 << 20
	// DefaultMaxStreams caps the streams open at once.
	DefaultMaxStreams = 1000
	// keepAlive is how often an idle stream gets a comment line, so that
	// proxies do not close it.
	keepAlive = 15 * time.Second
	// streamWriteTimeout bounds each write of a stream: a client that
	// stops reading loses its stream.
	streamWriteTimeout = 30 * time.Second
)

// CancelReason is the reason an A2A cancel gives the instance's record.
const CancelReason = "cancelled by an A2A client"

// Handler serves every workflow of an operations layer as an A2A agent.
// Mount it at Prefix behind the server's authentication.
type Handler struct {
	ops     *ops.Ops
	tokens  bool
	maxBody int64
	maxWait time.Duration
	streams chan struct{}
	mux     *http.ServeMux
	taken   takenSignals // signalling messages already taken, by task
}

// Option configures a Handler.
type Option func(*Handler)

// WithTokens says that the server asks for bearer tokens: the cards
// declare the scheme.
func WithTokens(on bool) Option { return func(h *Handler) { h.tokens = on } }

// WithMaxBody bounds the request bodies read (default DefaultMaxBody).
func WithMaxBody(n int64) Option { return func(h *Handler) { h.maxBody = n } }

// WithMaxWait bounds how long a send's answer waits (default
// DefaultMaxWait).
func WithMaxWait(d time.Duration) Option { return func(h *Handler) { h.maxWait = d } }

// WithMaxStreams caps the streams open at once (default
// DefaultMaxStreams).
func WithMaxStreams(n int) Option {
	return func(h *Handler) { h.streams = make(chan struct{}, max(n, 1)) }
}

// New is the A2A front door over o.
func New(o *ops.Ops, opts ...Option) *Handler {
	h := &Handler{ops: o, maxBody: DefaultMaxBody, maxWait: DefaultMaxWait, streams: make(chan struct{}, DefaultMaxStreams)}
	for _, opt := range opts {
		opt(h)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+Prefix+"{workflow}"+CardPath, h.serveCard)
	// Clients of older drafts read the card at agent.json.
	mux.HandleFunc("GET "+Prefix+"{workflow}/.well-known/agent.json", h.serveCard)
	mux.HandleFunc("POST "+Prefix+"{workflow}", h.serveRPC)
	mux.HandleFunc(Prefix+"{workflow}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "POST")
		writeRPC(w, http.StatusMethodNotAllowed, nullID, nil, rpcError(CodeInvalidRequest, r.Method+" is not allowed on "+r.URL.Path+": JSON-RPC requests are POSTed"))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeRPC(w, http.StatusNotFound, nullID, nil, rpcError(CodeInvalidRequest, "no route "+r.URL.Path))
	})
	h.mux = mux
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func (h *Handler) serveCard(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("workflow")
	f, err := h.ops.Pick(name, 0)
	if err != nil {
		writeRPC(w, http.StatusNotFound, nullID, nil, rpcError(CodeInvalidRequest, "no workflow "+quote(name)+" on this server"))
		return
	}
	writeJSON(w, http.StatusOK, h.card(f.Workflow, baseURL(r)+Prefix+name))
}

// serveRPC answers one JSON-RPC request.
func (h *Handler) serveRPC(w http.ResponseWriter, r *http.Request) {
	if !isJSON(r.Header.Get("Content-Type")) {
		writeRPC(w, http.StatusUnsupportedMediaType, nullID, nil, rpcError(CodeInvalidRequest, "the body must be JSON, sent with Content-Type: application/json"))
		return
	}
	if r.ContentLength > h.maxBody {
		writeRPC(w, http.StatusRequestEntityTooLarge, nullID, nil, h.tooLarge())
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeRPC(w, http.StatusRequestEntityTooLarge, nullID, nil, h.tooLarge())
			return
		}
		writeRPC(w, http.StatusBadRequest, nullID, nil, rpcError(CodeParseError, "parse error: the body could not be read: "+err.Error()))
		return
	}
	req, e := decodeRequest(data)
	if e != nil {
		writeRPC(w, http.StatusOK, req.ID, nil, e)
		return
	}
	name := r.PathValue("workflow")
	if _, err := h.ops.Pick(name, 0); err != nil {
		writeRPC(w, http.StatusNotFound, req.ID, nil, rpcError(CodeInvalidRequest, "no workflow "+quote(name)+" on this server"))
		return
	}
	ctx := r.Context()
	switch req.Op {
	case opSend, opStream:
		h.serveSend(w, r, name, req)
	case opGet:
		v, e := h.task(ctx, name, req)
		writeResult(w, req, v, e, req.D.task)
	case opCancel:
		v, e := h.cancel(ctx, name, req)
		writeResult(w, req, v, e, req.D.task)
	case opSubscribe:
		v, e := h.task(ctx, name, req)
		if e != nil {
			writeRPC(w, http.StatusOK, req.ID, nil, e)
			return
		}
		release, e := h.takeStream()
		if e != nil {
			writeRPC(w, http.StatusOK, req.ID, nil, e)
			return
		}
		defer release()
		h.stream(w, r, req, v.in.ID, nil)
	}
}

func (h *Handler) tooLarge() *Error {
	return rpcError(CodeInvalidRequest, "the body is larger than "+strconv.FormatInt(h.maxBody, 10)+" bytes")
}

// serveSend starts or signals an instance, then answers its task once
// settled (or streams it).
func (h *Handler) serveSend(w http.ResponseWriter, r *http.Request, workflow string, req request) {
	var p sendParams
	if e := decodeParams(req.Params, &p); e != nil {
		writeRPC(w, http.StatusOK, req.ID, nil, e)
		return
	}
	if p.Message == nil {
		writeRPC(w, http.StatusOK, req.ID, nil, invalidParams("message", "invalid params: message is required"))
		return
	}
	c, e := p.Message.read()
	if e != nil {
		writeRPC(w, http.StatusOK, req.ID, nil, e)
		return
	}
	if req.Op == opStream {
		// A stream refused for the cap must start nothing.
		release, e := h.takeStream()
		if e != nil {
			writeRPC(w, http.StatusOK, req.ID, nil, e)
			return
		}
		defer release()
	}
	ctx := r.Context()
	id := p.Message.TaskID
	if id == "" {
		id = StartID(workflow, p.Message.MessageID)
	}
	// The watch begins before the operation, so that no event of the
	// instance is missed.
	wch := h.watch(id)
	defer wch.stop()
	if p.Message.TaskID == "" {
		_, _, err := h.ops.Start(ctx, ops.StartRequest{Workflow: workflow, ID: id, Input: c.value(), Traceparent: r.Header.Get("traceparent")})
		if err != nil {
			writeRPC(w, http.StatusOK, req.ID, nil, fromOps(err))
			return
		}
	} else if mid := p.Message.MessageID; mid == "" || !h.taken.has(id, mid) {
		// A message whose signal was taken is answered with the task.
		if e := h.signal(ctx, workflow, id, c); e != nil {
			writeRPC(w, http.StatusOK, req.ID, nil, e)
			return
		}
		if mid != "" {
			h.taken.add(id, mid)
		}
	}
	if req.Op == opStream {
		h.stream(w, r, req, id, wch)
		return
	}
	var v view
	if p.waits() {
		// The answer may wait longer than the server's write timeout.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(h.maxWait + 10*time.Second))
		v, e = h.follow(ctx, wch, id, view.settled)
	} else {
		v, e = h.view(ctx, id)
	}
	writeResult(w, req, v, e, req.D.sendResult)
}

// StartID is the instance id of a start by a message: the same message
// sent again to the same workflow is the same start.
func StartID(workflow, messageID string) string {
	sum := sha256.Sum256([]byte(workflow + "\x00" + messageID))
	return "a2a-" + hex.EncodeToString(sum[:16])
}

// signal sends the signal a message carries to instance id.
func (h *Handler) signal(ctx context.Context, workflow, id string, c content) *Error {
	v, e := h.find(ctx, workflow, id)
	if e != nil {
		return e
	}
	if v.in.Status != ops.StatusWaiting {
		return rpcError(CodeUnsupportedOperation, "task "+id+" is not waiting for input: it is "+v.in.Status+" in state "+v.in.State)
	}
	name, data, e := pickSignal(v.signals, c)
	if e != nil {
		return e
	}
	if _, err := h.ops.Signal(ctx, id, name, data); err != nil {
		return fromOps(err)
	}
	return nil
}

// pickSignal is the signal a message sends to a wait for signals, and its
// data: a data part {signal, data} names it; to a wait for one signal,
// any message is that signal, its data part (or {text}) the data.
func pickSignal(signals []string, c content) (string, map[string]any, *Error) {
	if name, ok := c.data["signal"].(string); ok && c.hasData {
		data := map[string]any{}
		if raw, present := c.data["data"]; present && raw != nil {
			m, ok := raw.(map[string]any)
			if !ok {
				return "", nil, invalidParams("data", "invalid params: the data part's data must be an object")
			}
			data = m
		}
		for _, s := range signals {
			if s == name {
				return name, data, nil
			}
		}
		return "", nil, invalidParams("signal", "invalid params: the task does not wait for signal "+quote(name)+": it waits for "+strings.Join(signals, ", "))
	}
	if len(signals) == 1 {
		return signals[0], c.value(), nil
	}
	return "", nil, invalidParams("signal", `invalid params: the task waits for one of the signals `+strings.Join(signals, ", ")+`: name one with a data part {"signal": name, "data": {...}}`)
}

// task reads the task a get or subscribe names.
func (h *Handler) task(ctx context.Context, workflow string, req request) (view, *Error) {
	var p taskParams
	if e := decodeParams(req.Params, &p); e != nil {
		return view{}, e
	}
	if p.id() == "" {
		return view{}, invalidParams("id", "invalid params: id is required")
	}
	return h.find(ctx, workflow, p.id())
}

// cancel cancels the task a request names and answers it once cancelled.
func (h *Handler) cancel(ctx context.Context, workflow string, req request) (view, *Error) {
	v, e := h.task(ctx, workflow, req)
	if e != nil {
		return v, e
	}
	wch := h.watch(v.in.ID)
	defer wch.stop()
	if _, err := h.ops.Cancel(ctx, v.in.ID, CancelReason); err != nil {
		return v, fromOps(err)
	}
	return h.follow(ctx, wch, v.in.ID, func(v view) bool { return v.in.Finished() })
}

// find reads task id of workflow: an instance of another workflow is no
// task of this agent.
func (h *Handler) find(ctx context.Context, workflow, id string) (view, *Error) {
	v, e := h.view(ctx, id)
	if e != nil {
		return v, e
	}
	if v.in.Workflow != workflow {
		return view{}, rpcError(CodeTaskNotFound, "no task "+quote(id)+" at agent "+workflow)
	}
	return v, nil
}

// view reads instance id, and the signals it waits for.
func (h *Handler) view(ctx context.Context, id string) (view, *Error) {
	in, err := h.ops.Get(ctx, id)
	if err != nil {
		return view{}, fromOps(err)
	}
	v := view{in: in}
	if in.Status == ops.StatusWaiting {
		if wf, err := h.ops.Definition(in.Hash); err == nil {
			if st, ok := wf.State(in.State); ok && st.Wait != nil {
				v.signals = st.Wait.Signals
			}
		}
	}
	return v, nil
}

// watcher pokes when an event of its instance comes.
type watcher struct {
	poke chan struct{}
	done <-chan struct{}
	stop func()
}

// closed is a done channel for a layer without events: nothing waits.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// watch follows the events of instance id.
func (h *Handler) watch(id string) *watcher {
	w := &watcher{poke: make(chan struct{}, 1)}
	stop, done, err := h.ops.Watch(func(ev ops.Event) bool { return ev.Instance == id }, func(ops.Event) {
		select { // never blocks: one poke pending is enough
		case w.poke <- struct{}{}:
		default:
		}
	})
	if err != nil {
		w.stop, w.done = func() {}, closed
		return w
	}
	w.stop, w.done = stop, done
	return w
}

// follow reads instance id until done reports true of it, for at most
// maxWait (or until the client leaves or the server shuts down), and
// answers it as it is then.
func (h *Handler) follow(ctx context.Context, wch *watcher, id string, done func(view) bool) (view, *Error) {
	timer := time.NewTimer(h.maxWait)
	defer timer.Stop()
	for {
		v, e := h.view(ctx, id)
		if e != nil || done(v) {
			return v, e
		}
		select {
		case <-wch.poke:
		case <-timer.C:
			return v, nil
		case <-ctx.Done():
			return v, nil
		case <-wch.done:
			return v, nil
		}
	}
}

// writeResult answers a task, shaped by shape, or the error.
func writeResult(w http.ResponseWriter, req request, v view, e *Error, shape func(view) obj) {
	if e != nil {
		writeRPC(w, http.StatusOK, req.ID, nil, e)
		return
	}
	writeRPC(w, http.StatusOK, req.ID, shape(v), nil)
}

// writeRPC writes a JSON-RPC answer.
func writeRPC(w http.ResponseWriter, status int, id json.RawMessage, result any, e *Error) {
	writeJSON(w, status, response{JSONRPC: "2.0", ID: id, Result: result, Error: e})
}

func encode(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"the answer could not be encoded"}}` + "\n")
	}
	return buf.Bytes()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data := encode(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}
