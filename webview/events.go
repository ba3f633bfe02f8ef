package webview

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/batonhq/baton/internal/sse"
)

// keepAlive is how often an idle stream gets a comment line, so that
// proxies do not close it.
const keepAlive = 15 * time.Second

// events streams "changed" server-sent events for one instance (or every
// instance): the page then reloads the part that shows it. Events are
// coalesced: at most one per refresh period, the last one never lost. The
// stream ends with the request or when the backend shuts down.
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	st, err := sse.Start(w, h.writeTimeout)
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	defer st.End()
	dirty := make(chan struct{}, 1)
	stop, done, err := h.b.Watch(r.URL.Query().Get("instance"), func() {
		select {
		case dirty <- struct{}{}:
		default:
		}
	})
	if err != nil {
		h.unavailable(w, r, err)
		return
	}
	defer stop()
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if st.Send(func(w io.Writer) { fmt.Fprint(w, ": baton web view\n\n") }) != nil {
		return
	}
	alive := time.NewTicker(keepAlive)
	defer alive.Stop()
	pause := time.NewTimer(0)
	defer pause.Stop()
	<-pause.C
	for n := 1; ; {
		select {
		case <-dirty:
			if st.Send(func(w io.Writer) { fmt.Fprintf(w, "id: %d\nevent: changed\ndata: %d\n\n", n, n) }) != nil {
				return // the client is gone or stopped reading
			}
			n++
			// Let a burst of events gather: the next one goes out after a
			// pause, however many came.
			pause.Reset(h.refresh)
			select {
			case <-pause.C:
			case <-r.Context().Done():
				return
			case <-done:
				return
			}
		case <-alive.C:
			if st.Send(func(w io.Writer) { fmt.Fprint(w, ": keep-alive\n\n") }) != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-done:
			return
		}
	}
}
