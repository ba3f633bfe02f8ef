package server_test

import (
	"bufio"
	"context"
	"fmt"
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
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/internal/cputime"
	"github.com/batonhq/baton/natsserver"
)

// chain4FloorChildEnv asks the test binary to run as
// BenchmarkServeChain4Floor's worker: the NATS URL.
const chain4FloorChildEnv = "SERVER_BENCH_CHAIN4_FLOOR"

// The floor's streams, subjects and consumer.
const (
	floorWorkStream  = "FLOOR_WORK"
	floorWorkSubject = "floor.work"
	floorStepsStream = "FLOOR_STEPS"
	floorReports     = "floor.reports"
	floorConsumer    = "floor"
)

// BenchmarkServeChain4Floor is the least JetStream traffic one instance of
// BenchmarkServeChain4's workflow needs, with the server's side measured
// as that benchmark measures it: the embedded NATS server as the server
// runs it (file storage, every write synced) and, in the same process, an
// engine that does nothing but the traffic: a start record appended to a
// steps stream, then for each of the 4 steps one work message published
// with its ack, the report answered, a step record appended with an
// expected sequence. The worker (a pull, a report by request-reply, an
// ack that removes the work) is another process, as the Go worker is
// there; 50 instances in flight. Bodies are as large as the server's. It
// reports the same server-cpu-ms/inst, so that the two can be read side
// by side in one run: no HTTP, no rules, no codec, only what the store
// and the bus must write and send.
func BenchmarkServeChain4Floor(b *testing.B) {
	ns, err := natsserver.Start(natsserver.Config{Dir: b.TempDir(), Listen: true})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = ns.Close() }()
	nc, err := ns.Connect()
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	ws, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: floorWorkStream, Subjects: []string{floorWorkSubject},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: floorStepsStream, Subjects: []string{"floor.steps.*"},
		Storage: jetstream.FileStorage}); err != nil {
		b.Fatal(err)
	}
	if _, err := ws.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: floorConsumer,
		AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 4 * chain4Concurrency}); err != nil {
		b.Fatal(err)
	}
	// Bodies as large as the server's: a work message, a step record.
	workPad, record := []byte(strings.Repeat("x", 1200)), []byte(strings.Repeat("x", 700))
	type floorInstance struct {
		lastSeq uint64
		step    int
	}
	insts := make([]floorInstance, b.N)
	var (
		mu               sync.Mutex
		started, settled int
	)
	done, fail := make(chan struct{}), make(chan error, 1)
	failed := func(err error) {
		select {
		case fail <- err:
		default:
		}
	}
	// begin appends instance i's start record and sends its first work.
	begin := func(i int) error {
		ack, err := js.Publish(ctx, "floor.steps."+strconv.Itoa(i), record, jetstream.WithExpectLastSequencePerSubject(0))
		if err != nil {
			return err
		}
		insts[i].lastSeq = ack.Sequence
		return sendFloorWork(ctx, js, i, 1, workPad)
	}
	// The engine: append the step, answer the report, send the next work.
	reports := make(chan *nats.Msg, chain4Concurrency)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range chain4Concurrency {
		wg.Go(func() {
			for {
				var m *nats.Msg
				select {
				case m = <-reports:
				case <-stop:
					return
				}
				i, err := strconv.Atoi(strings.Fields(string(m.Data))[0])
				if err != nil {
					failed(err)
					return
				}
				in := &insts[i]
				ack, err := js.Publish(ctx, "floor.steps."+strconv.Itoa(i), record, jetstream.WithExpectLastSequencePerSubject(in.lastSeq))
				if err != nil {
					failed(err)
					return
				}
				in.lastSeq = ack.Sequence
				in.step++
				_ = m.Respond([]byte(`{"ok":true}`))
				if in.step < 4 {
					err = sendFloorWork(ctx, js, i, in.step+1, workPad)
				} else {
					mu.Lock()
					settled++
					next := -1
					if started < b.N {
						next = started
						started++
					}
					if settled == b.N {
						close(done)
					}
					mu.Unlock()
					if next >= 0 {
						err = begin(next)
					}
				}
				if err != nil {
					failed(err)
					return
				}
			}
		})
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	sub, err := nc.Subscribe(floorReports, func(m *nats.Msg) { reports <- m })
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()

	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), chain4FloorChildEnv+"="+ns.URL())
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	if !expectChain4(bufio.NewScanner(stdout), "ready") {
		b.Fatal("the floor's worker never got ready")
	}
	b.ResetTimer()
	cpu, start := cputime.Process(), time.Now()
	mu.Lock()
	first := min(chain4Concurrency, b.N)
	started = first
	mu.Unlock()
	for i := range first {
		if err := begin(i); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-done:
	case err := <-fail:
		b.Fatal(err)
	case <-time.After(10 * time.Minute):
		b.Fatal("the floor's instances never settled")
	}
	elapsed, used := time.Since(start), cputime.Process()-cpu
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "inst/s")
	b.ReportMetric(float64(used.Microseconds())/1000/float64(b.N), "server-cpu-ms/inst")
}

// sendFloorWork publishes instance i's work of step, waiting for its ack.
func sendFloorWork(ctx context.Context, js jetstream.JetStream, i, step int, pad []byte) error {
	body := append(strconv.AppendInt(append(strconv.AppendInt(nil, int64(i), 10), ' '), int64(step), 10), ' ')
	_, err := js.Publish(ctx, floorWorkSubject, append(body, pad...))
	return err
}

// runChain4FloorChild is BenchmarkServeChain4Floor's worker: it takes each
// work message, reports it by request-reply (a body as large as a Go
// worker's report) and acks it, until SIGTERM.
func runChain4FloorChild(url string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	nc, err := nats.Connect(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cons, err := js.Consumer(ctx, floorWorkStream, floorConsumer)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	reportPad := []byte(strings.Repeat("x", 150))
	taken := make(chan jetstream.Msg, chain4Concurrency)
	var wg sync.WaitGroup
	for range chain4Concurrency {
		wg.Go(func() {
			for {
				var m jetstream.Msg
				select {
				case m = <-taken:
				case <-ctx.Done():
					return
				}
				data := m.Data()
				body := append(append([]byte(nil), data[:min(len(data), 24)]...), reportPad...)
				if _, err := nc.Request(floorReports, body, time.Minute); err != nil {
					fmt.Fprintln(os.Stderr, "floor worker:", err)
					continue
				}
				_ = m.Ack()
			}
		})
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		select {
		case taken <- m:
		case <-ctx.Done():
		}
	}, jetstream.PullMaxMessages(chain4Concurrency))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	<-ctx.Done()
	cc.Stop()
	wg.Wait()
	return 0
}
