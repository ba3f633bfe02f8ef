package sse_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/batonhq/baton/internal/sse"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// stream serves a stream that sends chunk after chunk until a send fails,
// and reports the error on ended.
func stream(timeout time.Duration, ended chan<- error) *httptest.Server {
	chunk := strings.Repeat("x", 64<<10)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		st, err := sse.Start(w, timeout)
		if err != nil {
			ended <- err
			return
		}
		defer st.End()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		// Bounded: far more than the buffers of a loopback connection.
		for range 20000 {
			if err := st.Send(func(w io.Writer) { fmt.Fprintf(w, ": %s\n\n", chunk) }); err != nil {
				ended <- err
				return
			}
		}
		ended <- nil
	}))
}

func TestStream_ClientThatStopsReadingIsDropped(t *testing.T) {
	ended := make(chan error, 1)
	srv := stream(50*time.Millisecond, ended)
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", srv.Listener.Addr())
	// The client reads the status line, then nothing more.
	if _, err := bufio.NewReader(conn).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("every send went through to a client that does not read")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a send to a client that stopped reading never timed out")
	}
}

func TestStream_OutlivesTheServersTimeouts(t *testing.T) {
	ended := make(chan error, 1)
	chunk := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			_, _ = io.Copy(io.Discard, r.Body) // ends with the read deadline
			return
		}
		st, err := sse.Start(w, time.Minute)
		if err != nil {
			ended <- err
			return
		}
		defer st.End()
		w.WriteHeader(http.StatusOK)
		for k := range 2 {
			if k == 1 {
				select {
				case <-chunk:
				case <-r.Context().Done():
					ended <- r.Context().Err()
					return
				}
			}
			if err := st.Send(func(w io.Writer) { fmt.Fprintf(w, "data: %d\n\n", k) }); err != nil {
				ended <- err
				return
			}
		}
		ended <- nil
	}))
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = 20*time.Millisecond, 20*time.Millisecond
	srv.Start()
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	if line, err := rd.ReadString('\n'); err != nil || line != "data: 0\n" {
		t.Fatalf("got %q, %v, want the first event", line, err)
	}
	// Both deadlines pass while the stream waits: a second connection's
	// request, begun after the stream's, times out on its read deadline.
	slow, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprintf(slow, "POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n")
	_ = slow.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.Copy(io.Discard, slow); err != nil {
		t.Fatalf("the slow request was not closed by the server: %v", err)
	}
	close(chunk)
	if _, err := rd.ReadString('\n'); err != nil {
		t.Fatalf("the stream ended after the server's timeouts: %v", err)
	}
	if line, err := rd.ReadString('\n'); err != nil || line != "data: 1\n" {
		t.Fatalf("got %q, %v, want the second event", line, err)
	}
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
}
