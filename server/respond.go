package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/batonhq/baton/ops"
)

// apiError is an error as the API answers it:
// {"error": {"code", "message", "field"}} with its status.
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	// RetryAfter asks the client to try again in a second (a 503 that
	// passes: overload, a shutdown, a takeover).
	RetryAfter bool `json:"-"`
}

// retryLater marks e as one to try again shortly.
func retryLater(e *apiError) *apiError {
	e.RetryAfter = true
	return e
}

func (e *apiError) Error() string { return e.Message }

func badField(field, reason string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "invalid_field", Field: field, Message: field + " " + reason}
}

func notFound(code, field, msg string) *apiError {
	return &apiError{Status: http.StatusNotFound, Code: code, Field: field, Message: msg}
}

func conflict(code, msg string) *apiError {
	return &apiError{Status: http.StatusConflict, Code: code, Message: msg}
}

func unavailable(msg string) *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: msg}
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="baton"`)
	}
	if e.RetryAfter {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, e.Status, map[string]any{"error": e})
}

// answer is writeJSON's buffer and encoder, pooled: an instance's answer
// grew a new buffer five times over, and its encoder was made anew, on
// every GET.
type answer struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var answers = sync.Pool{New: func() any {
	a := &answer{}
	a.enc = json.NewEncoder(&a.buf)
	a.enc.SetEscapeHTML(false)
	return a
}}

// maxPooledAnswer is the largest buffer put back in answers: a long list
// is not kept for the small answers that follow.
const maxPooledAnswer = 64 << 10

// writeJSON writes v as the answer, without HTML escaping.
func writeJSON(w http.ResponseWriter, status int, v any) {
	a := answers.Get().(*answer)
	defer func() {
		if a.buf.Cap() <= maxPooledAnswer {
			a.buf.Reset()
			answers.Put(a)
		}
	}()
	if err := a.enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		a.buf.Reset()
		a.buf.WriteString(`{"error":{"code":"internal","message":"the answer could not be encoded"}}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(a.buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(a.buf.Bytes()) // copied or sent before it returns: the buffer goes back to the pool
}

// readBody reads a JSON request's body: 415 for a body that is not JSON by
// its content type, 413 beyond MaxBody. An empty body is nil.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	if r.ContentLength > MaxBody {
		return nil, tooLarge()
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge()
		}
		return nil, &apiError{Status: http.StatusBadRequest, Code: "invalid_body", Message: "the body could not be read: " + err.Error()}
	}
	if len(data) == 0 {
		return nil, nil
	}
	if !isJSON(r.Header.Get("Content-Type")) {
		return nil, &apiError{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type", Field: "Content-Type",
			Message: "the body must be JSON, sent with Content-Type: application/json"}
	}
	return data, nil
}

func tooLarge() *apiError {
	return &apiError{Status: http.StatusRequestEntityTooLarge, Code: "too_large", Message: "the body is larger than 1 MiB"}
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// decode reads data, a JSON object, into v: unknown fields, wrong types
// and anything after the object are refused, naming the field.
func decode(data []byte, v any) *apiError {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var (
			te *json.UnmarshalTypeError
			se *json.SyntaxError
		)
		switch {
		case errors.As(err, &te) && te.Field != "":
			return badField(te.Field, "must be "+jsonKind(te.Type.Kind().String()))
		case errors.As(err, &te):
			return &apiError{Status: http.StatusBadRequest, Code: "invalid_json", Message: "the body must be a JSON object"}
		case errors.As(err, &se):
			return &apiError{Status: http.StatusBadRequest, Code: "invalid_json", Message: "the body is not valid JSON: " + err.Error()}
		}
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			if f, qerr := strconv.Unquote(name); qerr == nil {
				return badField(f, "is not a known field")
			}
		}
		return &apiError{Status: http.StatusBadRequest, Code: "invalid_json", Message: "the body is not valid JSON: " + err.Error()}
	}
	if _, err := dec.Token(); err != io.EOF {
		return &apiError{Status: http.StatusBadRequest, Code: "invalid_json", Message: "the body has data after its JSON object"}
	}
	return nil
}

func jsonKind(kind string) string {
	switch kind {
	case "int", "int64":
		return "an integer"
	case "map", "struct", "ptr":
		return "an object"
	case "bool":
		return "a boolean"
	case "slice":
		return "a list"
	}
	return "a " + kind
}

// statusOfKind is the HTTP status of each kind of the operations layer's
// errors.
var statusOfKind = []struct {
	kind   error
	status int
}{
	{ops.ErrInvalid, http.StatusBadRequest},
	{ops.ErrNotFound, http.StatusNotFound},
	{ops.ErrConflict, http.StatusConflict},
	{ops.ErrTooLarge, http.StatusRequestEntityTooLarge},
	{ops.ErrUnavailable, http.StatusServiceUnavailable},
}

// apiErrorOf is the API's answer to an error of the operations layer: the
// one place its kinds become HTTP statuses. Any other error is a 503.
func apiErrorOf(err error) *apiError {
	if err == nil {
		return nil
	}
	var oe *ops.Error
	if !errors.As(err, &oe) {
		return unavailable(err.Error())
	}
	e := &apiError{Status: http.StatusServiceUnavailable, Code: oe.Code, Message: oe.Message, Field: oe.Field, RetryAfter: oe.Retry}
	for _, k := range statusOfKind {
		if errors.Is(oe, k.kind) {
			e.Status = k.status
			break
		}
	}
	if e.Code == "" {
		e.Code = "unavailable"
	}
	return e
}

// opsError is an API error (another server's answer to a call) as the
// operations layer's error.
func opsError(e *apiError) error {
	if e == nil {
		return nil
	}
	out := &ops.Error{Kind: ops.ErrUnavailable, Code: e.Code, Field: e.Field, Message: e.Message, Retry: e.RetryAfter}
	for _, k := range statusOfKind {
		if k.status == e.Status {
			out.Kind = k.kind
			break
		}
	}
	return out
}
