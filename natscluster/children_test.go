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

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/natscluster"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// The environment of the cluster test's children.
const (
	childEnv      = "BATON_CLUSTER_CHILD" // nats, engine or worker
	nameEnv       = "BATON_CLUSTER_NAME"
	dirEnv        = "BATON_CLUSTER_DIR"
	portEnv       = "BATON_CLUSTER_PORT"
	routePortEnv  = "BATON_CLUSTER_ROUTE_PORT"
	routesEnv     = "BATON_CLUSTER_ROUTES"
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

// runNATSChild is a NATS server of the test's cluster: its routes go to
// the other servers through the test's proxies, and it tells nobody of
// other addresses (NoAdvertise), so that no route goes around a proxy.
// Writes are synced on the server's interval: the test kills processes,
// not machines, and the operating system keeps what a killed process
// wrote.
func runNATSChild() int {
	port, _ := strconv.Atoi(os.Getenv(portEnv))
	routePort, _ := strconv.Atoi(os.Getenv(routePortEnv))
	opts := &server.Options{
		ServerName: os.Getenv(nameEnv), Host: "127.0.0.1", Port: port,
		JetStream: true, StoreDir: os.Getenv(dirEnv), NoSigs: true, NoLog: true,
		Cluster: server.ClusterOpts{Name: "baton-test", Host: "127.0.0.1", Port: routePort, NoAdvertise: true},
		Routes:  server.RoutesFromStr(os.Getenv(routesEnv)),
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return fail(err)
	}
	ns.Start()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	<-ctx.Done()
	ns.Shutdown()
	ns.WaitForShutdown()
	return 0
}

// childConnect connects to the test's servers, the first URL first.
func childConnect(name string) (*nats.Conn, error) {
	return nats.Connect(os.Getenv(urlsEnv), nats.Name(name), nats.DontRandomize(),
		nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.Timeout(2*time.Second),
		nats.RetryOnFailedConnect(true))
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
	nc, err := childConnect(name)
	if err != nil {
		return fail(err)
	}
	defer nc.Close()
	octx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	st, err := openRetrying(octx, func() (*natsstore.Store, error) {
		cfg := storeConfig()
		cfg.Logger = logger
		return natsstore.Open(octx, nc, cfg)
	})
	if err != nil {
		return fail(err)
	}
	defer st.Close()
	tr, err := openRetrying(octx, func() (*natsbus.Transport, error) { return natsbus.New(octx, nc, busConfig()) })
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
	n, err := openRetrying(octx, func() (*natscluster.Node, error) {
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

// openRetrying opens something on a cluster that may still be electing
// its leaders.
func openRetrying[T any](ctx context.Context, open func() (T, error)) (T, error) {
	for {
		v, err := open()
		if err == nil || ctx.Err() != nil {
			return v, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runWorkerChild runs every agent of the workflow as a natsbus Worker,
// appending the idempotency key of each run to the log.
func runWorkerChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	nc, err := childConnect(os.Getenv(nameEnv))
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
	tr, err := openRetrying(octx, func() (*natsbus.Transport, error) { return natsbus.New(octx, nc, busConfig()) })
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
