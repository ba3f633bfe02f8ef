// Package clustertest runs a JetStream cluster for tests: NATS servers as
// child processes of the test binary on loopback, routed to each other
// through proxies that a test can cut, so that a test can kill a server
// with SIGKILL, restart it, or cut it off from the others.
//
// A test package that uses it calls RunChild first in its TestMain:
//
//	func TestMain(m *testing.M) {
//		if code, ok := clustertest.RunChild(); ok {
//			os.Exit(code)
//		}
//		goleak.VerifyTestMain(m)
//	}
package clustertest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The environment of a server child.
const (
	childEnv     = "BATON_CLUSTERTEST_NODE" // the server's name
	dirEnv       = "BATON_CLUSTERTEST_DIR"
	portEnv      = "BATON_CLUSTERTEST_PORT"
	routePortEnv = "BATON_CLUSTERTEST_ROUTE_PORT"
	routesEnv    = "BATON_CLUSTERTEST_ROUTES"
	sinkEnv      = "BATON_CLUSTERTEST_SINK"
	syncEnv      = "BATON_CLUSTERTEST_SYNC_ALWAYS"
)

// logName is the file in a server's directory it logs to.
const logName = "server.log"

// RunChild runs this process as a server of a test cluster when the test
// started it as one, and returns the exit code and true; otherwise it
// returns at once with false.
func RunChild() (int, bool) {
	name := os.Getenv(childEnv)
	if name == "" {
		return 0, false
	}
	if err := runServer(name); err != nil {
		fmt.Fprintln(os.Stderr, "clustertest:", err)
		return 1, true
	}
	return 0, true
}

// runServer is a server of the cluster: its routes go to the other servers
// through the test's proxies, and no route goes around them. A server that
// learns of another one through a route connects to the address that one
// advertises, its own route port unless told otherwise: that would go
// around the proxies, and a server cut off would still reach the others.
// So every server advertises the test's sink, which closes what connects,
// and routes only through the proxies it was given. Writes are synced on
// the server's interval unless the cluster was started with SyncAlways:
// the tests kill processes, not machines, and the operating system keeps
// what a killed process wrote.
func runServer(name string) error {
	port, err := strconv.Atoi(os.Getenv(portEnv))
	if err != nil {
		return fmt.Errorf("%s: %w", portEnv, err)
	}
	routePort, err := strconv.Atoi(os.Getenv(routePortEnv))
	if err != nil {
		return fmt.Errorf("%s: %w", routePortEnv, err)
	}
	dir := os.Getenv(dirEnv)
	// The server logs to a file in its directory, which the test prints
	// when the cluster does not come up; a port it cannot listen on makes
	// it log why and exit.
	opts := &server.Options{
		ServerName: name, Host: "127.0.0.1", Port: port,
		JetStream: true, StoreDir: dir, NoSigs: true, LogFile: filepath.Join(dir, logName), Logtime: true,
		Cluster: server.ClusterOpts{Name: "baton-test", Host: "127.0.0.1", Port: routePort, NoAdvertise: true,
			Advertise: os.Getenv(sinkEnv)},
		Routes:     server.RoutesFromStr(os.Getenv(routesEnv)),
		SyncAlways: os.Getenv(syncEnv) == "1",
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return err
	}
	ns.ConfigureLogger()
	ns.Start()
	if !ns.ReadyForConnections(time.Minute) {
		ns.Shutdown()
		return fmt.Errorf("server %s not ready for connections within a minute", name)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	<-ctx.Done()
	ns.Shutdown()
	ns.WaitForShutdown()
	return nil
}

// Node is one server of a test cluster.
type Node struct {
	Name            string
	dir             string
	port, routePort int
	routes          []string // the proxies this server dials the others through
	cmd             *exec.Cmd
}

// URL is the server's client address.
func (n *Node) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(n.port) }

// Cluster is a JetStream cluster of child processes on loopback.
type Cluster struct {
	tb      testing.TB
	Nodes   []*Node
	proxies map[[2]int]*proxy // [from, to] -> the proxy from dials to reach to
	sink    *proxy            // always cut: the address every server advertises
	opts    Options
}

// Options are a cluster's settings.
type Options struct {
	// SyncAlways makes the servers sync every write to disk before they
	// acknowledge it (JetStream's sync_interval: always), as a benchmark
	// of durable settings needs.
	SyncAlways bool
}

// Start starts a cluster of n servers and waits until its JetStream
// answers. The servers stop when the test ends.
func Start(tb testing.TB, n int) *Cluster {
	tb.Helper()
	return StartWith(tb, n, Options{})
}

// startAttempts bounds how many times StartWith sets a cluster up afresh.
const startAttempts = 3

// startLimit bounds each wait of one attempt to start a cluster: JetStream
// answering, then a replica on every server. A loaded machine takes
// seconds; one that takes this long will not get there.
const startLimit = 90 * time.Second

// StartWith is Start with options.
//
// A cluster that does not come up within startLimit is stopped and set up
// again on new ports and directories, for at most startAttempts attempts,
// each failed one logged with the servers' logs. A port found free a
// moment ago may be taken by another process before a server listens on it
// (a server that cannot listen exits, and its log says why), and a server
// that joins the others late may stay out of the meta group's placements.
func StartWith(tb testing.TB, n int, opts Options) *Cluster {
	tb.Helper()
	var why string
	for attempt := 1; attempt <= startAttempts; attempt++ {
		c := &Cluster{tb: tb, proxies: map[[2]int]*proxy{}, sink: newProxy(tb, "127.0.0.1:1"), opts: opts}
		if why = c.start(n); why == "" {
			return c
		}
		tb.Logf("clustertest: attempt %d of %d to start a cluster of %d: %s", attempt, startAttempts, n, why)
		c.logTails()
		c.stop()
	}
	tb.Fatalf("clustertest: no cluster of %d servers after %d attempts: %s", n, startAttempts, why)
	return nil
}

// start sets up n servers on new ports and waits until their JetStream
// answers and a stream can have a replica on each of them. It returns why
// not, or "".
func (c *Cluster) start(n int) string {
	tb := c.tb
	c.sink.setCut(true)
	for k := range n {
		c.Nodes = append(c.Nodes, &Node{Name: fmt.Sprintf("n%d", k), dir: tb.TempDir(), port: FreePort(tb), routePort: FreePort(tb)})
	}
	for i, from := range c.Nodes {
		for j, to := range c.Nodes {
			if i == j {
				continue
			}
			p := newProxy(tb, "127.0.0.1:"+strconv.Itoa(to.routePort))
			c.proxies[[2]int{i, j}] = p
			from.routes = append(from.routes, "nats-route://"+p.addr())
		}
	}
	for k := range c.Nodes {
		c.Restart(k)
	}
	nc, err := ConnectURLs(c.URLs(0), "clustertest")
	if err != nil {
		return fmt.Sprintf("connect: %v", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Sprintf("jetstream: %v", err)
	}
	var last error
	if why := c.poll("the cluster's JetStream to answer", &last, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := js.AccountInfo(ctx)
		return err
	}); why != "" {
		return why
	}
	// JetStream answers before every server has joined its meta group: a
	// stream with a replica on each server can be placed once all have.
	probe := jetstream.StreamConfig{Name: "clustertest_probe", Subjects: []string{"clustertest.probe"}, Storage: jetstream.MemoryStorage, Replicas: n}
	return c.poll("every server of the cluster to hold a replica", &last, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := js.CreateStream(ctx, probe); err != nil {
			return fmt.Errorf("create a stream of %d replicas: %w", n, err)
		}
		return js.DeleteStream(ctx, probe.Name)
	})
}

// poll calls try every 20 ms until it succeeds, for at most startLimit, or
// until a server has exited. It returns why it gave up, or "".
func (c *Cluster) poll(what string, last *error, try func() error) string {
	start := time.Now()
	for {
		if *last = try(); *last == nil {
			return ""
		}
		for _, n := range c.Nodes {
			if exited(n.cmd) {
				return fmt.Sprintf("server %s exited while waiting for %s (last error: %v)", n.Name, what, *last)
			}
		}
		if time.Since(start) > startLimit {
			return fmt.Sprintf("gave up waiting for %s after %v (last error: %v)", what, startLimit, *last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// exited reports whether cmd's process has ended (a zombie not yet waited
// for). Where /proc cannot tell, the process is taken to run.
func exited(cmd *exec.Cmd) bool {
	if cmd == nil || cmd.Process == nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] == "Z"
}

// logTails logs the end of each server's log.
func (c *Cluster) logTails() {
	for _, n := range c.Nodes {
		data, err := os.ReadFile(filepath.Join(n.dir, logName))
		if err != nil {
			c.tb.Logf("clustertest: server %s: %v", n.Name, err)
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		c.tb.Logf("clustertest: server %s, the end of its log:\n%s", n.Name, strings.Join(lines[max(0, len(lines)-30):], "\n"))
	}
}

// stop kills the servers and closes the proxies of a cluster that did not
// come up.
func (c *Cluster) stop() {
	for _, n := range c.Nodes {
		if n.cmd != nil {
			_ = n.cmd.Process.Kill()
			_ = n.cmd.Wait()
		}
	}
	for _, p := range c.proxies {
		p.close()
	}
	c.sink.close()
}

// Restart starts server k again (or for the first time), on its data.
func (c *Cluster) Restart(k int) {
	n := c.Nodes[k]
	n.cmd = Child(c.tb, childEnv+"="+n.Name, dirEnv+"="+n.dir, portEnv+"="+strconv.Itoa(n.port),
		routePortEnv+"="+strconv.Itoa(n.routePort), routesEnv+"="+strings.Join(n.routes, ","), sinkEnv+"="+c.sink.addr(),
		syncEnv+"="+map[bool]string{true: "1", false: "0"}[c.opts.SyncAlways])
}

// Kill kills server k with SIGKILL and waits for it to exit.
func (c *Cluster) Kill(k int) {
	cmd := c.Nodes[k].cmd
	if err := cmd.Process.Kill(); err != nil {
		c.tb.Fatal(err)
	}
	_ = cmd.Wait()
}

// Cut cuts server k off from the others (true), closing its routes and
// refusing new ones, or lets them through again (false). Its clients stay
// connected to it.
func (c *Cluster) Cut(k int, cut bool) {
	for pair, p := range c.proxies {
		if pair[0] == k || pair[1] == k {
			p.setCut(cut)
		}
	}
}

// Index is the index of the server named name, or -1.
func (c *Cluster) Index(name string) int {
	for k, n := range c.Nodes {
		if n.Name == name {
			return k
		}
	}
	return -1
}

// URLs lists the servers' addresses, server k's first.
func (c *Cluster) URLs(k int) string {
	out := []string{c.Nodes[k].URL()}
	for j, n := range c.Nodes {
		if j != k {
			out = append(out, n.URL())
		}
	}
	return strings.Join(out, ",")
}

// Connect connects to the cluster, server k first, with the options a
// client of a cluster under faults needs: reconnect for ever, soon.
func (c *Cluster) Connect(tb testing.TB, k int, name string) *nats.Conn {
	tb.Helper()
	nc, err := ConnectURLs(c.URLs(k), name)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

// ConnectURLs connects to the servers of urls (comma-separated), the first
// first, reconnecting for ever: for the children a test starts.
func ConnectURLs(urls, name string) (*nats.Conn, error) {
	return nats.Connect(urls, nats.Name(name), nats.DontRandomize(),
		nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.Timeout(2*time.Second),
		nats.RetryOnFailedConnect(true))
}

// Leader is the name of the server leading stream, if it has one.
func Leader(js jetstream.JetStream, stream string) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil || s.CachedInfo().Cluster == nil || s.CachedInfo().Cluster.Leader == "" {
		return "", false
	}
	return s.CachedInfo().Cluster.Leader, true
}

// Child starts this test binary again as a child process with env added to
// its environment (the child's TestMain decides what it runs from it), and
// kills it when the test ends.
func Child(tb testing.TB, env ...string) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// FreePort is a loopback port free a moment ago.
func FreePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// WaitFor polls cond every 20 ms until it holds, for at most limit, and
// returns how long that took: the bound only stops a broken test, and
// should be minutes, not a measure of speed.
func WaitFor(tb testing.TB, what string, limit time.Duration, cond func() bool) time.Duration {
	tb.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			tb.Fatalf("gave up waiting for %s after %v", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// OpenRetrying calls open until it succeeds or ctx ends: for opening
// streams on a cluster that may still be electing its leaders.
func OpenRetrying[T any](ctx context.Context, open func() (T, error)) (T, error) {
	for {
		v, err := open()
		if err == nil || ctx.Err() != nil {
			return v, err
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// clockTicks is the unit of /proc/PID/stat's CPU times: USER_HZ, 100 on
// every Linux that Go supports.
const clockTicks = 100

// CPUTime is the user plus system CPU time the running servers have used
// so far, read from /proc (Linux only): what a benchmark adds to its own
// process's to count the servers' share.
func (c *Cluster) CPUTime() (time.Duration, error) {
	var total time.Duration
	for _, n := range c.Nodes {
		if n.cmd == nil || n.cmd.Process == nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(n.cmd.Process.Pid) + "/stat")
		if err != nil {
			return 0, fmt.Errorf("clustertest: CPU time of %s: %w", n.Name, err)
		}
		// The command name, in parentheses, may hold spaces: the fields
		// counted from the last ')' are state (3), ..., utime (14), stime (15).
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 13 {
			return 0, fmt.Errorf("clustertest: CPU time of %s: short /proc stat", n.Name)
		}
		for _, f := range fields[11:13] {
			ticks, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("clustertest: CPU time of %s: %w", n.Name, err)
			}
			total += time.Duration(ticks) * time.Second / clockTicks
		}
	}
	return total, nil
}
