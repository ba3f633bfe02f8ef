//go:build unix

package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/proctest"
)

// notRun marks a shell block of a page that the docs test does not run,
// with why (a NATS cluster of the reader's own, say).
const notRun = "<!-- docs test: not run"

var shellBlock = regexp.MustCompile("(?s)(<!-- docs test: not run[^\n]*-->\n)?```sh\n(.*?)```")

// docBlock is a fenced shell block of a page: its commands, continuation
// lines joined, comment lines left out.
type docBlock struct {
	commands []string
	skip     bool
}

// shellBlocks reads the shell blocks of a Markdown page, in order.
func shellBlocks(t *testing.T, page string) []docBlock {
	t.Helper()
	src, err := os.ReadFile(page)
	require.NoError(t, err)
	var out []docBlock
	for _, m := range shellBlock.FindAllStringSubmatch(string(src), -1) {
		b := docBlock{skip: m[1] != ""}
		var cur strings.Builder
		for _, l := range strings.Split(m[2], "\n") {
			if cur.Len() == 0 && (strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#")) {
				continue
			}
			if strings.HasSuffix(l, "\\") {
				cur.WriteString(strings.TrimSuffix(l, "\\") + " ")
				continue
			}
			cur.WriteString(l)
			b.commands = append(b.commands, cur.String())
			cur.Reset()
		}
		out = append(out, b)
	}
	return out
}

// docsShell is a bash session that runs a page's commands one at a time,
// as a reader typing them in one terminal would, and the programs the page
// leaves running (the server, the agents), each started as its own
// terminal would start it: from the session's directory, with its
// environment.
type docsShell struct {
	t       *testing.T
	home    string // the directory the page works in, once it has made it
	ports   map[string]string
	bash    *exec.Cmd
	stdin   io.WriteCloser
	lines   chan string
	log     strings.Builder
	running []*docsProgram
	server  *docsProgram // the wfrun serve running now
	token   string       // the server's API token, when it was given some
}

// docsProgram is a program the page leaves running.
type docsProgram struct {
	cmd    *exec.Cmd
	out    string // the file its output goes to
	exited chan struct{}
}

func newDocsShell(t *testing.T, dir string, env []string, ports map[string]string) *docsShell {
	t.Helper()
	sh := &docsShell{t: t, home: dir, ports: ports, lines: make(chan string, 256)}
	sh.bash = exec.Command("bash", "--noprofile", "--norc")
	sh.bash.Dir = dir
	sh.bash.Env = env
	var err error
	sh.stdin, err = sh.bash.StdinPipe()
	require.NoError(t, err)
	out, err := sh.bash.StdoutPipe()
	require.NoError(t, err)
	sh.bash.Stderr = sh.bash.Stdout
	require.NoError(t, sh.bash.Start())
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			sh.lines <- sc.Text()
		}
		close(sh.lines)
	}()
	t.Cleanup(func() {
		for k := len(sh.running) - 1; k >= 0; k-- {
			sh.running[k].stop()
		}
		_ = sh.stdin.Close()
		for range sh.lines {
			// Drained until bash exits.
		}
		<-read
		_ = sh.bash.Wait()
		if t.Failed() {
			t.Logf("the session:\n%s", sh.log.String())
			for _, p := range sh.running {
				data, _ := os.ReadFile(p.out)
				t.Logf("%s:\n%s", strings.Join(p.cmd.Args, " "), data)
			}
		}
	})
	return sh
}

// localize moves what the page fixes to ones this machine has free: its
// ports, the checkout's path, the address it listens on beyond loopback.
// curl fails on an HTTP error, as a reader reading its answer would.
func (sh *docsShell) localize(c string, root string) string {
	c = withoutComment(c)
	c = strings.ReplaceAll(c, "/path/to/baton", root)
	for fixed, free := range sh.ports {
		c = strings.ReplaceAll(c, fixed, free)
	}
	c = strings.ReplaceAll(c, "0.0.0.0:", "127.0.0.1:")
	c = regexp.MustCompile(`(^|[|&;]\s*)curl `).ReplaceAllString(c, "${1}curl --fail-with-body ")
	c = strings.ReplaceAll(c, "npm install ", "npm install --prefer-offline --no-audit --no-fund ")
	if strings.HasPrefix(c, "wfrun serve ") {
		if !strings.Contains(c, "--http ") {
			c += " --http 127.0.0.1:" + sh.ports["8080"]
		}
		if !strings.Contains(c, "--nats") {
			c += " --nats-listen 127.0.0.1:" + sh.ports["4222"]
		}
	}
	return c
}

// withoutComment cuts a command's trailing comment: a # after a blank,
// outside quotes.
func withoutComment(c string) string {
	var quote rune
	for k, r := range c {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && k > 0 && (c[k-1] == ' ' || c[k-1] == '\t'):
			return strings.TrimSpace(c[:k])
		}
	}
	return strings.TrimSpace(c)
}

// run runs one command of the page in the session; it fails the test
// unless it exits 0.
func (sh *docsShell) run(c string) {
	sh.t.Helper()
	fmt.Fprintf(&sh.log, "$ %s\n", c)
	sh.exec(c)
}

// exec runs a command in the session; it fails the test unless it exits 0.
func (sh *docsShell) exec(c string) {
	sh.t.Helper()
	_, err := fmt.Fprintf(sh.stdin, "{ %s\n} </dev/null; echo \"__done__ $?\"\n", c)
	require.NoError(sh.t, err)
	limit := time.After(10 * time.Minute) // installs and builds on a busy machine; a bound, not a timing assertion
	for {
		select {
		case l, ok := <-sh.lines:
			require.True(sh.t, ok, "bash exited during %q", c)
			if code, done := strings.CutPrefix(l, "__done__ "); done {
				require.Equal(sh.t, "0", code, "the page's command failed: %s\n%s", c, sh.log.String())
				return
			}
			sh.log.WriteString(l + "\n")
		case <-limit:
			sh.t.Fatalf("the page's command did not end: %s", c)
		}
	}
}

// state is the session's working directory and environment now.
func (sh *docsShell) state() (dir string, env []string) {
	sh.t.Helper()
	tmp := sh.t.TempDir()
	sh.exec(fmt.Sprintf("pwd > %s/pwd && env -0 > %s/env", tmp, tmp))
	d, err := os.ReadFile(filepath.Join(tmp, "pwd"))
	require.NoError(sh.t, err)
	e, err := os.ReadFile(filepath.Join(tmp, "env"))
	require.NoError(sh.t, err)
	return strings.TrimSpace(string(d)), strings.Split(strings.TrimRight(string(e), "\x00"), "\x00")
}

// start starts a program the page leaves running, in a process group of
// its own (go run's program is its child), from the session's directory.
func (sh *docsShell) start(c string) *docsProgram {
	sh.t.Helper()
	fmt.Fprintf(&sh.log, "$ %s &\n", c)
	dir, env := sh.state()
	p := &docsProgram{out: filepath.Join(sh.t.TempDir(), "out"), exited: make(chan struct{})}
	f, err := os.Create(p.out)
	require.NoError(sh.t, err)
	defer f.Close()
	p.cmd = exec.Command("bash", "-c", "exec "+c)
	p.cmd.Dir, p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr = dir, env, f, f
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(sh.t, p.cmd.Start())
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	sh.running = append(sh.running, p)
	return p
}

// stop ends a program as Ctrl-C would, and kills it if it has not
// exited after a while.
func (p *docsProgram) stop() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

// until waits for a program to be ready: cond holds, within a bound.
func (sh *docsShell) until(p *docsProgram, what string, cond func() bool) {
	sh.t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for !cond() {
		select {
		case <-p.exited:
			data, _ := os.ReadFile(p.out)
			sh.t.Fatalf("%s: the program exited:\n%s", what, data)
		default:
		}
		require.True(sh.t, time.Now().Before(deadline), "%s: not ready in time", what)
		time.Sleep(5 * time.Millisecond)
	}
}

// said reports whether a program printed a line holding s.
func said(p *docsProgram, s string) bool {
	data, _ := os.ReadFile(p.out)
	return strings.Contains(string(data), s)
}

// api reads a path of the server's API into out; false without an answer
// of 200.
func (sh *docsShell) api(path string, out any) bool {
	req, err := http.NewRequest("GET", "http://127.0.0.1:"+sh.ports["8080"]+path, nil)
	require.NoError(sh.t, err)
	if sh.token != "" {
		req.Header.Set("Authorization", "Bearer "+sh.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return false
	}
	if out == nil {
		return true
	}
	return json.NewDecoder(resp.Body).Decode(out) == nil
}

// longRunning is how the page's programs that keep running are told
// ready, by the start of their command.
func (sh *docsShell) longRunning(c string) (ready func(p *docsProgram) bool, ok bool) {
	switch {
	case strings.HasPrefix(c, "wfrun serve "):
		return func(*docsProgram) bool { return sh.api("/readyz", nil) }, true
	case c == "python3 agent.py":
		return func(*docsProgram) bool {
			conn, err := net.Dial("tcp", "127.0.0.1:"+sh.ports["9000"])
			if err == nil {
				conn.Close()
			}
			return err == nil
		}, true
	case c == "node responder.mjs":
		return func(p *docsProgram) bool { return said(p, "responder: taking work") }, true
	case c == "go run .":
		return func(p *docsProgram) bool { return said(p, "escalator: taking work") }, true
	}
	return nil, false
}

// waitSignalable waits, before a command that signals an instance, until
// the instance waits for a signal: a reader typing the commands gives the
// agents the moments they take, and the page says a signal sent earlier
// is refused.
func (sh *docsShell) waitSignalable(c string) {
	sh.t.Helper()
	m := regexp.MustCompile(`wfrun signal (\S+)|/v1/instances/([^/\s]+)/signals/`).FindStringSubmatch(c)
	if m == nil {
		return
	}
	id := m[1] + m[2]
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var in struct{ Status string }
		if sh.api("/v1/instances/"+id, &in) && in.Status == "waiting" {
			return
		}
		require.True(sh.t, time.Now().Before(deadline), "instance %s never waited for a signal", id)
		time.Sleep(5 * time.Millisecond)
	}
}

// waitReloaded waits, after a command that changed a workflow file, until
// the running server has made each file's source current, as the page
// says it does within two seconds.
func (sh *docsShell) waitReloaded() {
	sh.t.Helper()
	if sh.server == nil {
		return
	}
	files, _ := filepath.Glob(filepath.Join(sh.home, "workflows", "*.yaml"))
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(sh.t, err)
		sum := sha256.Sum256(src)
		want := hex.EncodeToString(sum[:])
		deadline := time.Now().Add(time.Minute)
		for {
			var got struct {
				Workflows []struct {
					Versions []struct {
						Hash    string
						Current bool
					}
				}
			}
			current := false
			if sh.api("/v1/workflows", &got) {
				for _, w := range got.Workflows {
					for _, v := range w.Versions {
						current = current || (v.Hash == want && v.Current)
					}
				}
			}
			if current {
				break
			}
			require.True(sh.t, time.Now().Before(deadline), "%s was not reloaded", f)
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// workflowsSum sums the workflow files the page works with.
func (sh *docsShell) workflowsSum() string {
	files, _ := filepath.Glob(filepath.Join(sh.home, "workflows", "*.yaml"))
	h := sha256.New()
	for _, f := range files {
		data, _ := os.ReadFile(f)
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// moveFixedPorts rewrites the files the page copied that name a fixed
// port (the sorter's), as localize does for the commands.
func (sh *docsShell) moveFixedPorts() {
	for _, f := range []string{filepath.Join(sh.home, "workflows", "triage.yaml"), filepath.Join(sh.home, "agent.py")} {
		data, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(data), "9000") {
			continue
		}
		require.NoError(sh.t, os.WriteFile(f, []byte(strings.ReplaceAll(string(data), "9000", sh.ports["9000"])), 0o600))
	}
}

// freePort is a loopback port free a moment ago.
func freePort(t *testing.T) string {
	_, port, _ := strings.Cut(proctest.FreeAddr(t), ":")
	return port
}

// TestServerDocs_QuickstartRunsAsWritten follows docs/server.md from its
// first command to its last, as a newcomer would with a checkout of Baton,
// Python, Node.js and Go: every command of every shell block runs, in
// order, and must succeed; the server and the agents the page starts keep
// running, each as in a terminal of its own. What the test changes is
// only what a machine shared with other tests needs: free ports instead
// of 8080, 4222 and 9000, this checkout for /path/to/baton, loopback for
// 0.0.0.0, the wfrun of this checkout, Python packages in a virtual
// environment, and the moments a reader leaves between commands (an
// instance is signalled once it waits, a changed file is used once the
// server has reloaded it).
func TestServerDocs_QuickstartRunsAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("installs the SDKs and builds the agents of the server's quickstart")
	}
	for _, tool := range []string{"bash", "python3", "node", "npm", "curl", "openssl", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the quickstart of docs/server.md needs it", tool)
		}
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	self, err := os.Executable()
	require.NoError(t, err)
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "wfrun"), []byte("#!/bin/sh\n"+childEnv+"=1 exec "+strconv.Quote(self)+" \"$@\"\n"), 0o700))
	venv := filepath.Join(t.TempDir(), "venv")
	proctest.Run(t, root, nil, "python3", "-m", "venv", venv)

	ports := map[string]string{"8080": freePort(t), "4222": freePort(t), "9000": freePort(t)}
	work := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "BATON_") && k != "NATS_URL" && k != "PATH" {
			env = append(env, kv)
		}
	}
	// The agents take NATS_URL, and the CLI BATON_SERVER, where the page
	// relies on their defaults (the fixed ports).
	env = append(env,
		"PATH="+bin+string(os.PathListSeparator)+filepath.Join(venv, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"VIRTUAL_ENV="+venv, "PYTHONDONTWRITEBYTECODE=1", "GOWORK=off",
		"BATON_SERVER=http://127.0.0.1:"+ports["8080"], "NATS_URL=nats://127.0.0.1:"+ports["4222"],
	)
	sh := newDocsShell(t, work, env, ports)

	blocks := shellBlocks(t, filepath.Join(root, "docs", "server.md"))
	skipped := 0
	for k, b := range blocks {
		if b.skip {
			skipped++
			continue
		}
		if k > 0 {
			// Each block is typed in the quickstart's directory (a block
			// that moves elsewhere, the escalator's, is its own terminal).
			sh.run("cd " + strconv.Quote(sh.home))
		}
		for _, c := range b.commands {
			c = sh.localize(c, root)
			parts := strings.Split(c, " && ")
			last := strings.TrimSpace(parts[len(parts)-1])
			ready, long := sh.longRunning(last)
			if long && len(parts) > 1 {
				sh.run(strings.Join(parts[:len(parts)-1], " && "))
			}
			if !long {
				sh.waitSignalable(c)
				before := sh.workflowsSum()
				sh.run(c)
				if k == 0 {
					sh.home, _ = sh.state()
				}
				sh.moveFixedPorts()
				if sh.workflowsSum() != before {
					sh.waitReloaded()
				}
				continue
			}
			if strings.HasPrefix(last, "wfrun serve ") && sh.server != nil {
				sh.server.stop() // the page restarts it with other flags
				sh.server = nil
			}
			p := sh.start(last)
			if strings.HasPrefix(last, "wfrun serve ") {
				sh.server = p
				sh.token = ""
				if strings.Contains(last, "--token-file ") {
					data, err := os.ReadFile(filepath.Join(sh.home, "tokens"))
					require.NoError(t, err)
					sh.token = strings.TrimSpace(strings.SplitN(string(data), "\n", 2)[0])
				}
			}
			sh.until(p, last, func() bool { return ready(p) })
		}
	}
	assert.Equal(t, 1, skipped, "only the cluster's block needs what a reader must bring (a NATS cluster)")

	// The instances the page started ended as it says.
	for id, want := range map[string][2]string{
		"ticket-1": {"completed", "ANSWERED"}, "ticket-2": {"completed", "ESCALATED"},
		"ticket-3": {"completed", "ESCALATED"}, "ticket-4": {"cancelled", ""},
	} {
		var in struct{ Status, Outcome string }
		require.True(t, sh.api("/v1/instances/"+id, &in), "instance %s", id)
		assert.Equal(t, want, [2]string{in.Status, in.Outcome}, "instance %s", id)
	}
}
