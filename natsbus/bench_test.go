package natsbus_test

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/internal/refundagents"
	"github.com/batonhq/baton/natsbus"
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
				if err := tr.SendWork(ctx, work("bench", bus.PriorityNormal, "k"+strconv.Itoa(i))); err != nil {
					b.Fatal(err)
				}
				var got []*bus.Message
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
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkNATSRefund runs whole refund instances (4 steps each) with every
// agent external, served by an in-process Worker over an in-process
// server, up to 500 instances at a time, and reports steps per second and
// the CPU time of the process (engine, worker and server together) per
// step.
func BenchmarkNATSRefund(b *testing.B) {
	for _, st := range storages {
		b.Run(st.name, func(b *testing.B) {
			ns := startServerSync(b, false, st.syncAlways)
			store := func(c *natsbus.Config) { c.Storage = st.storage }
			re := newRefundEngine(b, connect(b, ns), store)
			startWorker(b, ns, refundagents.Approved(), store)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			cpu0, start := cpuTime(b), time.Now()
			const window = 500
			insts := make([]*engine.Instance, 0, b.N)
			wait := func(inst *engine.Instance) {
				res, _ := inst.Wait(ctx)
				if res.Outcome != "COMPLETED" {
					b.Fatalf("got %s %s (%v), want COMPLETED", res.Status, res.Outcome, res.Err)
				}
			}
			for n := range b.N {
				if n >= window {
					wait(insts[n-window])
				}
				inst, err := re.eng.Start(ctx, refundInput)
				if err != nil {
					b.Fatal(err)
				}
				insts = append(insts, inst)
			}
			for _, inst := range insts[max(0, len(insts)-window):] {
				wait(inst)
			}
			elapsed, cpu := time.Since(start), cpuTime(b)-cpu0
			b.ReportMetric(float64(4*b.N)/elapsed.Seconds(), "steps/s")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(4*b.N), "cpu-ns/step")
		})
	}
}
