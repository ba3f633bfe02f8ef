// Command booking is the support workflow's booking agent, an HTTP agent:
// Baton POSTs each piece of work to it, signed with the secret both share,
// and it answers with its report at once (200). It proposes a slot for a
// booking request and hands back any other request. The first call for a
// request that says "urgent" fails with 503, to show the state's retry
// policy at work.
//
//	SUPPORT_BOOKING_SECRET=... go run ./examples/support/booking
//
// It listens on BOOKING_ADDR (default 127.0.0.1:8091), the address the
// workflow's url names.
package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx); err != nil {
		log.Fatal("booking: ", err)
	}
}

func run(ctx context.Context) error {
	secret := os.Getenv("SUPPORT_BOOKING_SECRET")
	if secret == "" {
		return errors.New("SUPPORT_BOOKING_SECRET is not set: Baton signs each call with it")
	}
	addr := os.Getenv("BOOKING_ADDR")
	if addr == "" {
		addr = "127.0.0.1:8091"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	a := &agent{secret: []byte(secret), failed: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /booking", a.serve)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Printf("booking: listening on http://%s/booking\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

type agent struct {
	secret []byte
	mu     sync.Mutex
	failed map[string]bool // instances whose first call failed
}

// work is the part of the work message this agent reads
// (docs/protocol.md has all of it).
type work struct {
	Content struct {
		Input map[string]any `json:"input"`
	} `json:"content"`
	Metadata struct {
		InstanceID string `json:"instance_id"`
		Step       int    `json:"step"`
	} `json:"metadata"`
}

func (a *agent) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, "cannot read the body", http.StatusRequestEntityTooLarge)
		return
	}
	if !a.signed(body, r.Header.Get("Baton-Signature")) {
		// A 4xx fails the run without a retry: the sender is not Baton.
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var wk work
	if err := json.Unmarshal(body, &wk); err != nil {
		http.Error(w, "not a work message: "+err.Error(), http.StatusBadRequest)
		return
	}
	message, _ := wk.Content.Input["message"].(string)
	text := strings.ToLower(message)
	if strings.Contains(text, "urgent") && a.firstFailure(wk.Metadata.InstanceID) {
		// A 5xx is a retryable failure of kind transport.
		http.Error(w, "the calendar is busy, try again", http.StatusServiceUnavailable)
		return
	}
	report := map[string]any{"instance_id": wk.Metadata.InstanceID, "step": wk.Metadata.Step, "agent": "booking"}
	if strings.Contains(text, "book") || strings.Contains(text, "visit") || strings.Contains(text, "appointment") || strings.Contains(text, "come on") {
		report["trigger"] = "proposed"
		report["result"] = map[string]any{"slot": nextSlot(time.Now()).Format(time.RFC3339)}
	} else {
		report["trigger"] = "not_mine" // the workflow hands the request back to triage
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(report)
}

// signed checks Baton-Signature: sha256=<hex HMAC-SHA256 of the body>.
func (a *agent) signed(body []byte, header string) bool {
	mac := hmac.New(sha256.New, a.secret)
	mac.Write(body)
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	return hmac.Equal([]byte(header), []byte(want))
}

func (a *agent) firstFailure(instance string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failed[instance] {
		return false
	}
	a.failed[instance] = true
	return true
}

// nextSlot is 10:00 UTC on the next weekday.
func nextSlot(now time.Time) time.Time {
	d := now.UTC().AddDate(0, 0, 1)
	for d.Weekday() == time.Saturday || d.Weekday() == time.Sunday {
		d = d.AddDate(0, 0, 1)
	}
	return time.Date(d.Year(), d.Month(), d.Day(), 10, 0, 0, 0, time.UTC)
}
