package natscluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/internal/clustertest"
	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/natscluster"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// The environment of the cluster test's children.
const (
	childEnv      = "BATON_CLUSTER_CHILD" // engine or worker
	nameEnv       = "BATON_CLUSTER_NAME"
	urlsEnv       = "BATON_CLUSTER_URLS"
	logEnv        = "BATON_CLUSTER_LOG"
	clusterPrefix = "cl"
	// startSubject + engine name: the test asks an engine to start
	// instances (the body is how many) and gets their ids back.
	startSubject = "cltest.start."
	// childLeaseTTL is the engines' lease time in the cluster test.
	childLeaseTTL = 2 * time.Second
	// clusterPartitions is fewer than the default 64, so that the engines
	// share them sooner; the share and takeover logic is the same.
	clusterPartitions = 16
)

func fail(err error) int {
	fmt.Fprintln(os.Stderr, err)
	return 1
}

func busConfig() natsbus.Config {
	cfg := natsbus.DefaultConfig()
	cfg.Replicas = 3
	cfg.AckWait = 5 * time.Second
	cfg.MaxDeliveries = 20
	cfg.Timeout = 10 * time.Second
	return cfg
}

func storeConfig() natsstore.Config {
	return natsstore.Config{Prefix: clusterPrefix, Replicas: 3, Shards: 2, Partitions: clusterPartitions, Timeout: 5 * time.Second}
}

// runEngineChild is one engine of the cluster: it shares the store's
// partitions with the other engines, resumes the ones it takes, and starts
// instances when the test asks. Every agent is external.
func runEngineChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	name := os.Getenv(nameEnv)
	logger, err := zap.NewDevelopment(zap.IncreaseLevel(zap.WarnLevel))
	if err != nil {
		return fail(err)
	}
	logger = logger.With(zap.String("process", name))
	nc, err := clustertest.ConnectURLs(os.Getenv(urlsEnv), name)
	if err != nil {
		return fail(err)
	}
	defer nc.Close()
	octx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	st, err := clustertest.OpenRetrying(octx, func() (*natsstore.Store, error) {
		cfg := storeConfig()
		cfg.Logger = logger
		return natsstore.Open(octx, nc, cfg)
	})
	if err != nil {
		return fail(err)
	}
	defer st.Close()
	tr, err := clustertest.OpenRetrying(octx, func() (*natsbus.Transport, error) { return natsbus.New(octx, nc, busConfig()) })
	if err != nil {
		return fail(err)
	}
	defer tr.Close()
	w, err := rules.Load("testdata/crash.yaml")
	if err != nil {
		return fail(err)
	}
	var node atomic.Pointer[natscluster.Node]
	eng, err := engine.New(w, nil, engine.WithStore(st), engine.WithTransport(tr), engine.WithLogger(logger),
		engine.WithIDs(func() string { return node.Load().NewID() }))
	if err != nil {
		return fail(err)
	}
	defer eng.Close()
	inPartitions := func(ps []int) func(string) bool {
		return func(id string) bool { return slices.Contains(ps, st.Partition(id)) }
	}
	n, err := clustertest.OpenRetrying(octx, func() (*natscluster.Node, error) {
		return natscluster.Start(octx, nc, st, natscluster.Config{
			Name: name, LeaseTTL: childLeaseTTL, Replicas: 3, Recheck: 3 * time.Second, Logger: logger,
			OnAcquire: func(ctx context.Context, ps []int) error {
				rep, err := eng.ResumeWhere(ctx, inPartitions(ps))
				if err != nil {
					return err
				}
				for id, err := range rep.Failed {
					return fmt.Errorf("resume %s: %w", id, err)
				}
				return nil
			},
			OnRelease: func(ps []int) { eng.Release(inPartitions(ps)) },
		})
	})
	if err != nil {
		return fail(err)
	}
	node.Store(n)
	defer n.Close()
	stopReports, err := n.ServeReports(ctx, eng.HandleReport)
	if err != nil {
		return fail(err)
	}
	defer stopReports()
	sub, err := nc.Subscribe(startSubject+name, func(m *nats.Msg) {
		count, _ := strconv.Atoi(string(m.Data))
		var ids []string
		for range count {
			if len(n.Partitions()) == 0 {
				break
			}
			inst, err := eng.Start(ctx, nil)
			if err != nil {
				logger.Warn("start", zap.Error(err))
				continue
			}
			ids = append(ids, inst.ID())
		}
		data, _ := json.Marshal(ids)
		_ = m.Respond(data)
	})
	if err != nil {
		return fail(err)
	}
	defer sub.Unsubscribe()
	<-ctx.Done()
	return 0
}

// runWorkerChild runs every agent of the workflow as a natsbus Worker,
// appending the idempotency key of each run to the log.
func runWorkerChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	nc, err := clustertest.ConnectURLs(os.Getenv(urlsEnv), os.Getenv(nameEnv))
	if err != nil {
		return fail(err)
	}
	defer nc.Close()
	logf, err := os.OpenFile(os.Getenv(logEnv), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fail(err)
	}
	defer logf.Close()
	octx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	logger, err := zap.NewDevelopment(zap.IncreaseLevel(zap.WarnLevel))
	if err != nil {
		return fail(err)
	}
	logger = logger.With(zap.String("process", os.Getenv(nameEnv)))
	tr, err := clustertest.OpenRetrying(octx, func() (*natsbus.Transport, error) {
		cfg := busConfig()
		cfg.Logger = logger
		return natsbus.New(octx, nc, cfg)
	})
	if err != nil {
		return fail(err)
	}
	defer tr.Close()
	var mu sync.Mutex
	hs := map[string]registry.Handler{}
	for k, agent := range strings.Split("a b c x y z n", " ") {
		hs[agent] = registry.HandlerFunc(func(_ context.Context, task *registry.Task) (registry.Outcome, error) {
			mu.Lock()
			_, err := fmt.Fprintln(logf, task.IdempotencyKey) // the side effect, deduplicable by key
			mu.Unlock()
			if err != nil {
				return registry.Outcome{}, err
			}
			time.Sleep(5 * time.Millisecond) // a little work, so that faults land mid-run
			return registry.Outcome{Trigger: "ok", Result: map[string]any{"n": k + 1}}, nil
		})
	}
	wk, err := natsbus.NewWorker(tr, hs, natsbus.WorkerConfig{})
	if err != nil {
		return fail(err)
	}
	if err := wk.Run(ctx); err != nil {
		return fail(err)
	}
	return 0
}
