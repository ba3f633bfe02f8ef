package natsbus_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/internal/clustertest"
	"github.com/batonhq/baton/internal/cputime"
	"github.com/batonhq/baton/internal/refundagents"
	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/transport"
)

// storages are the benchmarks' cases: memory streams, file streams synced
// on every write (the default of Baton's embedded server), and file streams
// synced on the server's interval.
var storages = []struct {
	name       string
	storage    jetstream.StorageType
	syncAlways bool
}{
	{"memory", jetstream.MemoryStorage, false},
	{"file-sync-always", jetstream.FileStorage, true},
	{"file-sync-interval", jetstream.FileStorage, false},
}

// BenchmarkNATSTransport sends, takes and acks one message per iteration
// on an in-process server, with the default TakeWait (paid at the two empty
// levels above NORMAL on every take) and without it.
func BenchmarkNATSTransport(b *testing.B) {
	cases := append(storages[:len(storages):len(storages)], struct {
		name       string
		storage    jetstream.StorageType
		syncAlways bool
	}{"memory-no-take-wait", jetstream.MemoryStorage, false})
	for _, st := range cases {
		b.Run(st.name, func(b *testing.B) {
			ns := startServerSync(b, false, st.syncAlways)
			tr := newTransport(b, ns, func(c *natsbus.Config) {
				c.Storage = st.storage
				if st.name == "memory-no-take-wait" {
					c.TakeWait = 0
				}
			})
			if err := tr.OpenMailbox("bench", 0); err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := tr.SendWork(ctx, work("bench", transport.PriorityNormal, "k"+strconv.Itoa(i))); err != nil {
					b.Fatal(err)
				}
				var got []*transport.Message
				for tries := 0; len(got) == 0; tries++ {
					var err error
					if got, err = tr.TakeWork(ctx, "bench", 1); err != nil {
						b.Fatal(err)
					}
					if tries > 10000 {
						b.Fatal("the message sent never came")
					}
				}
				if err := tr.Ack(ctx, got[0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// cpuTime is the process's user plus system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	t := cputime.Process()
	if t == 0 {
		b.Fatal("the system does not tell the process's CPU time")
	}
	return t
}

// BenchmarkNATSRefund runs whole refund instances (4 steps each) with every
// agent external, served by an in-process Worker over an in-process
// server, up to 500 instances at a time, and reports steps per second and
// the CPU time of the process (engine, worker and server together) per
// step. The first cases keep the instances in the engine's memory and
// only the work on NATS; the natsstore- cases keep the instances in
// natsstore on the same server too, as wfrun serve does.
func BenchmarkNATSRefund(b *testing.B) {
	for _, st := range storages {
		b.Run(st.name, func(b *testing.B) {
			ns := startServerSync(b, false, st.syncAlways)
			store := func(c *natsbus.Config) { c.Storage = st.storage }
			re := newRefundEngine(b, connect(b, ns), store)
			startWorker(b, connect(b, ns), refundagents.Approved(), store)
			benchRefunds(b, re.eng, nil)
		})
	}
	for _, st := range storages[1:] {
		b.Run("natsstore-"+st.name, func(b *testing.B) {
			ns := startServerSync(b, false, st.syncAlways)
			nc := connect(b, ns)
			store, err := natsstore.Open(context.Background(), nc, natsstore.Config{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = store.Close() })
			re := newRefundEngine(b, nc, nil, engine.WithStore(store))
			startWorker(b, connect(b, ns), refundagents.Approved(), nil)
			benchRefunds(b, re.eng, nil)
		})
	}
}

// BenchmarkNATSRefundCluster runs refund instances as BenchmarkNATSRefund
// does, on a 3-node JetStream cluster of child processes on loopback: the
// engine's store (natsstore) and the work streams keep three replicas on
// file, synced on the servers' interval or on every write; the engine and
// the worker are connected to different servers. cpu-ns/step counts this
// process (engine, worker, and the route proxies between the servers);
// servers-cpu-ns/step adds the three servers' CPU time.
func BenchmarkNATSRefundCluster(b *testing.B) {
	for _, syncAlways := range []bool{false, true} {
		name := "R3-file-sync-interval"
		if syncAlways {
			name = "R3-file-sync-always"
		}
		b.Run(name, func(b *testing.B) {
			c := clustertest.StartWith(b, 3, clustertest.Options{SyncAlways: syncAlways})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			nc := c.Connect(b, 0, "bench-engine")
			store, err := clustertest.OpenRetrying(ctx, func() (*natsstore.Store, error) {
				return natsstore.Open(ctx, nc, natsstore.Config{Replicas: 3})
			})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = store.Close() })
			r3 := func(c *natsbus.Config) { c.Replicas = 3 }
			re := newRefundEngine(b, nc, r3, engine.WithStore(store))
			startWorker(b, c.Connect(b, 1, "bench-worker"), refundagents.Approved(), r3)
			benchRefunds(b, re.eng, c)
		})
	}
}

// benchRefunds runs b.N refund instances on eng, up to 500 at a time, and
// reports steps per second and this process's CPU time per step, and with
// a cluster, its servers' CPU time per step too.
func benchRefunds(b *testing.B, eng *engine.Engine, c *clustertest.Cluster) {
	ctx := context.Background()
	serversCPU := func() time.Duration {
		if c == nil {
			return 0
		}
		d, err := c.CPUTime()
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, servers0, start := cpuTime(b), serversCPU(), time.Now()
	// The handles of the instances in flight only, in a ring, as the floor
	// keeps no more than each instance's step and sequence: a slice of
	// every handle kept each finished instance alive to the end, a heap
	// that grew with b.N for the collector to scan.
	const window = 500
	insts := make([]*engine.Instance, min(window, b.N))
	wait := func(inst *engine.Instance) {
		res, _ := inst.Wait(ctx)
		if res.Outcome != "COMPLETED" {
			b.Fatalf("got %s %s (%v), want COMPLETED", res.Status, res.Outcome, res.Err)
		}
	}
	for n := range b.N {
		if n >= window {
			wait(insts[n%window])
		}
		inst, err := eng.Start(ctx, refundInput)
		if err != nil {
			b.Fatal(err)
		}
		insts[n%window] = inst
	}
	for _, inst := range insts {
		wait(inst)
	}
	elapsed, cpu := time.Since(start), cpuTime(b)-cpu0
	steps := float64(4 * b.N)
	b.ReportMetric(steps/elapsed.Seconds(), "steps/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/steps, "cpu-ns/step")
	if c != nil {
		b.ReportMetric(float64((serversCPU()-servers0).Nanoseconds())/steps, "servers-cpu-ns/step")
	}
}

// BenchmarkNATSFloor is the least JetStream traffic a step of
// BenchmarkNATSRefund needs, on the same embedded server with the same
// cases and the same metric, so that the two are compared in one run: per
// step, one publish to a work-queue stream waiting for its ack, a pull of
// it, a report by request and reply, a fire-and-forget ack, and an append
// to a steps stream with the expected last sequence of the instance's
// subject; b.N instances of 4 steps, up to 500 at a time. The bodies are
// bytes made once, as large as the refund's work, report and step record,
// and nothing is encoded, decoded or kept beyond the instance's step and
// last sequence. The steps stream stands for the engine's commit: in
// memory where the refund's engine keeps its instances in memory, on file
// (synced as the case says) in the natsstore- cases, as natsstore keeps
// them.
func BenchmarkNATSFloor(b *testing.B) {
	for _, st := range storages {
		b.Run(st.name, func(b *testing.B) {
			benchFloor(b, startServerSync(b, false, st.syncAlways), st.storage, jetstream.MemoryStorage)
		})
	}
	for _, st := range storages[1:] {
		b.Run("natsstore-"+st.name, func(b *testing.B) {
			benchFloor(b, startServerSync(b, false, st.syncAlways), st.storage, jetstream.FileStorage)
		})
	}
}

// floorInstance is what the floor's engine keeps of an instance.
type floorInstance struct {
	step    int
	lastSeq uint64
}

// benchFloor runs BenchmarkNATSFloor's traffic on ns: the work stream on
// work storage, the steps stream on steps storage.
func benchFloor(b *testing.B, ns *server.Server, work, steps jetstream.StorageType) {
	ctx := context.Background()
	engineNC, workerNC := connect(b, ns), connect(b, ns)
	ejs, err := jetstream.New(engineNC)
	if err != nil {
		b.Fatal(err)
	}
	wjs, err := jetstream.New(workerNC)
	if err != nil {
		b.Fatal(err)
	}
	const window, stepsPer = 500, 4
	ws, err := ejs.CreateStream(ctx, jetstream.StreamConfig{Name: "FLOOR_WORK", Subjects: []string{"floor.work"},
		Retention: jetstream.WorkQueuePolicy, Storage: work})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := ejs.CreateStream(ctx, jetstream.StreamConfig{Name: "FLOOR_STEPS", Subjects: []string{"floor.steps.*"},
		Storage: steps}); err != nil {
		b.Fatal(err)
	}
	if _, err := ws.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "floor", AckPolicy: jetstream.AckExplicitPolicy,
		MaxAckPending: 4 * window}); err != nil {
		b.Fatal(err)
	}
	cons, err := wjs.Consumer(ctx, "FLOOR_WORK", "floor")
	if err != nil {
		b.Fatal(err)
	}
	// Bodies as large as the refund's: its work message, its report and a
	// step record of natsstore (about 1.2 KB, 150 B and 700 B).
	pad := func(n int) []byte { return []byte(strings.Repeat("x", n)) }
	workPad, reportPad, record := pad(1200), pad(150), pad(700)

	insts := make([]floorInstance, b.N)
	var (
		mu               sync.Mutex
		started, settled int
	)
	done := make(chan struct{})
	fail := make(chan error, 1)
	failed := func(err error) {
		select {
		case fail <- err:
		default:
		}
	}
	sendWork := func(i, step int) error {
		body := append(strconv.AppendInt(append(strconv.AppendInt(nil, int64(i), 10), ' '), int64(step), 10), ' ')
		_, err := ejs.Publish(ctx, "floor.work", append(body, workPad...))
		return err
	}
	// The engine: append the step, answer the report, send the next work.
	reports := make(chan *nats.Msg, window)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				var m *nats.Msg
				select {
				case m = <-reports:
				case <-stop:
					return
				}
				f := strings.Fields(string(m.Data[:min(len(m.Data), 24)]))
				i, _ := strconv.Atoi(f[0])
				in := &insts[i]
				ack, err := ejs.Publish(ctx, "floor.steps."+f[0], record, jetstream.WithExpectLastSequencePerSubject(in.lastSeq))
				if err != nil {
					failed(err)
					return
				}
				in.lastSeq = ack.Sequence
				in.step++
				_ = m.Respond([]byte(`{"ok":true}`))
				next, more := i, in.step < stepsPer
				if !more {
					mu.Lock()
					settled++
					if started < b.N {
						next, more = started, true
						started++
					}
					if settled == b.N {
						close(done)
					}
					mu.Unlock()
				}
				if more {
					if err := sendWork(next, insts[next].step+1); err != nil {
						failed(err)
						return
					}
				}
			}
		}()
	}
	rsub, err := engineNC.Subscribe("floor.reports", func(m *nats.Msg) { reports <- m })
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = rsub.Unsubscribe() }()
	// The worker: report each work taken, then ack it without waiting.
	taken := make(chan jetstream.Msg, window)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				var m jetstream.Msg
				select {
				case m = <-taken:
				case <-stop:
					return
				}
				data := m.Data()
				body := append(append([]byte(nil), data[:min(len(data), 24)]...), reportPad...)
				if _, err := workerNC.Request("floor.reports", body, 10*time.Second); err != nil {
					failed(err)
					return
				}
				if err := m.Ack(); err != nil {
					failed(err)
					return
				}
			}
		}()
	}
	cc, err := cons.Consume(func(m jetstream.Msg) { taken <- m }, jetstream.PullMaxMessages(window))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, start := cpuTime(b), time.Now()
	mu.Lock()
	first := min(window, b.N)
	started = first
	mu.Unlock()
	for i := range first {
		if err := sendWork(i, 1); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-done:
	case err := <-fail:
		b.Fatal(err)
	}
	elapsed, cpu := time.Since(start), cpuTime(b)-cpu0
	b.StopTimer()
	cc.Stop()
	close(stop)
	wg.Wait()
	stepsDone := float64(stepsPer * b.N)
	b.ReportMetric(stepsDone/elapsed.Seconds(), "steps/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/stepsDone, "cpu-ns/step")
}
