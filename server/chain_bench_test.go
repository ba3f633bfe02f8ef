package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/batonhq/baton/internal/cputime"
	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/server"
)

// chain4Flow is four steps, each a Go worker's agent on NATS.
const chain4Flow = `workflow: chain4
initial: A
agents:
  a: {}
  b: {}
  c: {}
  d: {}
states:
  A: {agent: a}
  B: {agent: b}
  C: {agent: c}
  D: {agent: d}
  DONE: {terminal: true}
rules:
  - {id: ab, from: a, trigger: done, next: B}
  - {id: bc, from: b, trigger: done, next: C}
  - {id: cd, from: c, trigger: done, next: D}
  - {id: dd, from: d, trigger: done, next: DONE}
`

// chain4ChildEnv asks the test binary to run as BenchmarkServeChain4's
// load: NATS URL, API URL, instance count and concurrency, space-separated.
const chain4ChildEnv = "SERVER_BENCH_CHAIN4"

// chain4Concurrency is the number of instances in flight.
const chain4Concurrency = 50

// BenchmarkServeChain4 is the server on its embedded NATS server (every
// write synced) running b.N instances of a 4-step workflow, 50 in flight,
// each step a Go worker's agent on NATS: instances per second and the
// server's CPU per instance. The worker and the clients that start the
// instances and wait for them are another process, so that the CPU
// measured is the server's alone. Run it as issue 30 does with
// -benchtime=2000x.
func BenchmarkServeChain4(b *testing.B) {
	s, err := server.New(context.Background(), server.Config{
		WorkflowsDir: workflowsDir(b, "", map[string]string{"chain4.yaml": chain4Flow}),
		DataDir:      b.TempDir(),
		NATSListen:   anyPort,
	})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	defer func() {
		hs.Close()
		s.Close()
	}()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %d %d", chain4ChildEnv, s.NATSURL(), hs.URL, b.N, chain4Concurrency))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	lines := bufio.NewScanner(stdout)
	if !expectChain4(lines, "ready") {
		b.Fatal("the load child never got ready")
	}
	b.ResetTimer()
	cpu, start := cputime.Process(), time.Now()
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		b.Fatal(err)
	}
	if !expectChain4(lines, "done") {
		b.Fatal("the load child failed")
	}
	elapsed, used := time.Since(start), cputime.Process()-cpu
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "inst/s")
	b.ReportMetric(float64(used.Microseconds())/1000/float64(b.N), "server-cpu-ms/inst")
}

// expectChain4 reads the child's lines until one that is want: false when
// its output ends first.
func expectChain4(lines *bufio.Scanner, want string) bool {
	for lines.Scan() {
		if lines.Text() == want {
			return true
		}
	}
	return false
}

// runChain4Child is BenchmarkServeChain4's load: the Go worker of
// chain4Flow's agents, and clients that start n instances, conc at a time,
// each waiting for its instance to complete. It says "ready" once the
// worker runs, starts on a line from stdin, and says "done" when every
// instance has completed.
func runChain4Child(spec string) int {
	var natsURL, apiURL string
	var n, conc int
	if _, err := fmt.Sscan(spec, &natsURL, &apiURL, &n, &conc); err != nil {
		fmt.Fprintln(os.Stderr, "chain4:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	nc, err := nats.Connect(natsURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer nc.Close()
	tr, err := natsbus.New(ctx, nc, natsbus.DefaultConfig())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer tr.Close()
	// The last step's run tells its instance's client to look: the
	// instance completes once its report is committed.
	var mu sync.Mutex
	last := map[string]chan struct{}{}
	lastOf := func(id string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		ch, ok := last[id]
		if !ok {
			ch = make(chan struct{})
			last[id] = ch
		}
		return ch
	}
	done := registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{Trigger: "done"}, nil
	})
	wk, err := natsbus.NewWorker(tr, map[string]registry.Handler{
		"a": done, "b": done, "c": done,
		"d": registry.HandlerFunc(func(_ context.Context, t *registry.Task) (registry.Outcome, error) {
			ch := lastOf(t.InstanceID)
			mu.Lock()
			select {
			case <-ch: // the work delivered again
			default:
				close(ch)
			}
			mu.Unlock()
			return registry.Outcome{Trigger: "done"}, nil
		}),
	}, natsbus.WorkerConfig{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ran := make(chan error, 1)
	go func() { ran <- wk.Run(ctx) }()
	defer func() {
		_ = wk.Close()
		<-ran
	}()
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc}, Timeout: time.Minute}
	jobs := make(chan struct{})
	errs := make(chan error, conc)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for range jobs {
				if err := runChain4(ctx, client, apiURL, lastOf); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var failed error
feed:
	for range n {
		select {
		case jobs <- struct{}{}:
		case failed = <-errs:
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if failed == nil && len(errs) > 0 {
		failed = <-errs
	}
	if failed != nil {
		fmt.Fprintln(os.Stderr, "chain4:", failed)
		return 1
	}
	fmt.Println("done")
	return 0
}

// runChain4 starts an instance and waits until it has completed.
func runChain4(ctx context.Context, client *http.Client, apiURL string, lastOf func(string) chan struct{}) error {
	var started struct {
		ID string `json:"id"`
	}
	code, err := chain4Call(client, "POST", apiURL+"/v1/workflows/chain4/instances", `{"input":{}}`, &started)
	if err != nil {
		return err
	}
	if code != http.StatusCreated {
		return fmt.Errorf("start: status %d", code)
	}
	select {
	case <-lastOf(started.ID):
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Minute):
		return errors.New("instance " + started.ID + " never reached its last step")
	}
	for range 30_000 {
		var got struct {
			Status string `json:"status"`
		}
		if _, err := chain4Call(client, "GET", apiURL+"/v1/instances/"+started.ID, "", &got); err != nil {
			return err
		}
		switch got.Status {
		case "completed":
			return nil
		case "running":
			time.Sleep(time.Millisecond)
		default:
			return errors.New("instance " + started.ID + " is " + strconv.Quote(got.Status))
		}
	}
	return errors.New("instance " + started.ID + " never completed")
}

// chain4Call sends a request and decodes its JSON answer into out.
func chain4Call(client *http.Client, method, url, body string, out any) (int, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, json.NewDecoder(resp.Body).Decode(out)
}
