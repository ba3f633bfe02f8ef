// The research example end to end, as real processes on 127.0.0.1: the
// fake model server and wfrun built from this repository, the A2A research
// agent and the MCP tool server on the official JavaScript SDKs (node). One
// test runs the README's commands; the other kills the server with SIGKILL
// while A2A tasks and MCP calls are under way and restarts it on the same
// data.
package research_test

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/jspeers"
	"github.com/batonhq/baton/internal/proctest"
)

// root is the repository's root, where the README's commands run.
const root = "../.."

// bin holds wfrun and fakellm, built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "research-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The tags build the A2A and MCP agent kinds into wfrun where they are
	// still optional; where they are always built, the tags change nothing.
	cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "./cmd/wfrun", "./examples/research/fakellm")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	bin = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// setup is what both tests share: node with this folder's modules, free
// addresses, and a copy of the workflow whose A2A agent is at the
// researcher's address (its MCP server, tools.mjs, linked beside it).
type setup struct {
	node           string
	llm, a2a, http string // addresses
	flows, data    string // directories
	env            []string
}

func newSetup(t *testing.T) *setup {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the example's programs")
	}
	addrs := proctest.FreeAddrs(t, 3)
	s := &setup{node: jspeers.Node(t), llm: addrs[0], a2a: addrs[1], http: addrs[2], flows: t.TempDir(), data: t.TempDir()}
	installModules(t)
	src, err := os.ReadFile("workflow.yaml")
	must(t, err)
	src = []byte(strings.Replace(string(src), "127.0.0.1:9301", s.a2a, 1))
	must(t, os.WriteFile(filepath.Join(s.flows, "workflow.yaml"), src, 0o600))
	abs, err := filepath.Abs("tools.mjs")
	must(t, err)
	// node resolves the modules of a linked script from where the script
	// really is: this folder's node_modules.
	must(t, os.Symlink(abs, filepath.Join(s.flows, "tools.mjs")))
	return s
}

// installModules runs the README's `npm ci` in this folder when its
// modules are missing.
func installModules(t *testing.T) {
	t.Helper()
	for _, m := range []string{"@a2a-js/sdk", "@modelcontextprotocol/sdk", "express"} {
		if _, err := os.Stat(filepath.Join("node_modules", m, "package.json")); err != nil {
			proctest.Run(t, ".", nil, "npm", "ci", "--no-audit", "--no-fund")
			return
		}
	}
}

// command is one command of the README, run as the README says with the
// addresses and directories of the test.
type command struct {
	env  []string
	name string
	args []string
}

// parse checks that line is in the README verbatim and splits it into its
// environment, program and arguments (words, or '...' quoted), the
// README's addresses and directories replaced by the test's.
func (s *setup) parse(t *testing.T, line string) command {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	must(t, err)
	if !strings.Contains(string(readme), "\n"+line+"\n") {
		t.Fatalf("README.md has no line %q", line)
	}
	line = strings.NewReplacer(
		"127.0.0.1:9300", s.llm, "PORT=9301", "PORT="+port(s.a2a), "127.0.0.1:8080", s.http,
		"/tmp/research-data", s.data, "--workflows examples/research", "--workflows "+s.flows,
		"cd examples/research && ", "",
	).Replace(line)
	var words []string
	for rest := strings.TrimSpace(line); rest != ""; rest = strings.TrimSpace(rest) {
		if rest[0] == '\'' {
			end := strings.IndexByte(rest[1:], '\'')
			if end < 0 {
				t.Fatalf("unbalanced quote in %q", line)
			}
			words, rest = append(words, rest[1:end+1]), rest[end+2:]
			continue
		}
		word, after, _ := strings.Cut(rest, " ")
		words, rest = append(words, word), after
	}
	var c command
	for len(words) > 0 && strings.Contains(words[0], "=") {
		c.env, words = append(c.env, words[0]), words[1:]
	}
	c.name, c.args = words[0], words[1:]
	switch c.name {
	case "wfrun", "fakellm":
		c.name = filepath.Join(bin, c.name)
	case "node":
		c.name = s.node
		abs, err := filepath.Abs(c.args[0]) // the README runs node in this folder
		must(t, err)
		c.args[0] = abs
	}
	return c
}

// start runs a README line as a long-running process, ready at a line
// starting with ready.
func (s *setup) start(t *testing.T, line, ready string, env ...string) *exec.Cmd {
	t.Helper()
	c := s.parse(t, line)
	return proctest.Start(t, append(append(s.env, c.env...), env...), ready, c.name, c.args...)
}

// run runs a README line to its end and returns its output; a failure
// fails the test.
func (s *setup) run(t *testing.T, line string) string {
	t.Helper()
	c := s.parse(t, line)
	if _, err := exec.LookPath(c.name); err != nil && c.name == "curl" {
		return post(t, c.args)
	}
	out, code := proctest.Output(t, append(s.env, c.env...), c.name, c.args...)
	if code != 0 {
		t.Fatalf("%s: exit %d\n%s", line, code, out)
	}
	return out
}

func (s *setup) get(t *testing.T, id string) proctest.Instance {
	t.Helper()
	return proctest.GetInstance(t, append(s.env, "BATON_SERVER=http://"+s.http), filepath.Join(bin, "wfrun"), id)
}

// waitFor polls the instance until ok says it is there (at most two
// minutes: the bound only stops a broken test).
func (s *setup) waitFor(t *testing.T, id, what string, ok func(proctest.Instance) bool) proctest.Instance {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		in := s.get(t, id)
		if ok(in) {
			return in
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: status %s in %s (context %v), want %s", id, in.Status, in.State, in.Context, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitingIn(state string) func(proctest.Instance) bool {
	return func(in proctest.Instance) bool { return in.Status == "waiting" && in.State == state }
}

// message is one message the researcher was sent.
type message struct {
	MessageID string `json:"messageId"`
	TaskID    string `json:"taskId"`
	ContextID string `json:"contextId"`
	Data      string `json:"data"` // the data part, as JSON
}

func (s *setup) messages(t *testing.T) []message {
	t.Helper()
	var ms []message
	getJSON(t, "http://"+s.a2a+"/_test/messages", &ms)
	return ms
}

func TestResearch_READMECommands(t *testing.T) {
	s := newSetup(t)
	// TestMain built these, and newSetup installed the modules.
	s.parse(t, "go install ./cmd/wfrun ./examples/research/fakellm")
	s.parse(t, "(cd examples/research && npm ci)")
	s.start(t, "fakellm --addr 127.0.0.1:9300", "fakellm: listening")
	s.start(t, "cd examples/research && RESEARCH_A2A_TOKEN=research-secret PORT=9301 node researcher.mjs", "researcher: listening")
	s.start(t, "RESEARCH_LLM_URL=http://127.0.0.1:9300/v1 RESEARCH_LLM_KEY=offline RESEARCH_A2A_TOKEN=research-secret wfrun serve --workflows examples/research --data /tmp/research-data --nats none --http 127.0.0.1:8080", "wfrun: serving the HTTP API")

	out := s.run(t, `curl -s -X POST http://127.0.0.1:8080/v1/workflows/research/instances -H 'Content-Type: application/json' -d '{"id": "q-1", "input": {"question": "How fast do glaciers move?"}}'`)
	var started struct{ ID, Status string }
	if err := json.Unmarshal([]byte(out), &started); err != nil || started.ID != "q-1" {
		t.Fatalf("curl started %q (%v), want q-1", out, err)
	}

	s.env = append(s.env, "BATON_SERVER=http://"+s.http) // the README's export
	s.run(t, "wfrun get q-1")
	in := s.waitFor(t, "q-1", "waiting in CLARIFY", waitingIn("CLARIFY"))
	if in.Context["question_asked"] != "Which period or scope should the research cover?" {
		t.Fatalf("q-1 waits with context %v, want the researcher's question", in.Context)
	}

	s.run(t, `wfrun signal q-1 clarify --data '{"scope": "since 2000"}'`)
	s.run(t, "wfrun get q-1")
	in = s.waitFor(t, "q-1", "waiting in REVIEW", waitingIn("REVIEW"))
	if f := fmt.Sprint(in.Context["findings"]); !strings.Contains(f, "since 2000") {
		t.Fatalf("findings %q, want the scope the person gave", f)
	}
	if facts, _ := in.Context["facts"].([]any); len(facts) != 2 {
		t.Fatalf("facts %v, want the two the tool knows of glaciers", in.Context["facts"])
	}

	s.run(t, `wfrun signal q-1 revise --data '{"by": "ana", "note": "shorter"}'`)
	s.run(t, "wfrun get q-1")
	in = s.waitFor(t, "q-1", "a revised draft in REVIEW", func(in proctest.Instance) bool {
		return waitingIn("REVIEW")(in) && strings.HasPrefix(fmt.Sprint(in.Context["draft"]), "Revised (shorter): ")
	})

	s.run(t, `wfrun signal q-1 approve --data '{"by": "ana"}'`)
	if out := s.run(t, "wfrun watch q-1"); !strings.Contains(out, "PUBLISHED") {
		t.Fatalf("wfrun watch: %s, want PUBLISHED", out)
	}
	if in = s.get(t, "q-1"); in.Outcome != "PUBLISHED" || in.Context["approved_by"] != "ana" {
		t.Fatalf("q-1: %+v, want PUBLISHED approved by ana", in)
	}

	if out := s.run(t, `wfrun start research --id q-2 --input '{"question": "Can you book a table?"}' --wait`); !strings.Contains(out, "completed") {
		t.Fatalf("wfrun start --wait: %s, want completed", out)
	}
	if in = s.get(t, "q-2"); in.Outcome != "DECLINED" || in.Step != 1 {
		t.Fatalf("q-2: %+v, want DECLINED after the triage alone", in)
	}

	// The researcher was sent two messages: the question, then the scope
	// on the same task (the conversation went on).
	ms := s.messages(t)
	if len(ms) != 2 || ms[0].TaskID != "" || ms[1].TaskID == "" || ms[0].ContextID != "q-1" || ms[0].MessageID == ms[1].MessageID {
		t.Fatalf("the researcher was sent %+v, want a first message of q-1 and a second on its task", ms)
	}
}

// TestResearch_ServerKilledMidRun kills wfrun serve with SIGKILL while two
// A2A tasks and two MCP calls are under way and a third instance waits for
// a person, restarts it on the same data, and checks that every instance
// ends right and that no run reached the researcher under two message ids.
func TestResearch_ServerKilledMidRun(t *testing.T) {
	for _, store := range []struct {
		name string
		args func(t *testing.T) []string
	}{
		{"bolt", func(*testing.T) []string { return []string{"--nats", "none"} }},
		{"jetstream", func(t *testing.T) []string { return []string{"--nats-listen", proctest.FreeAddr(t)} }},
	} {
		t.Run(store.name, func(t *testing.T) {
			s := newSetup(t)
			gate := filepath.Join(t.TempDir(), "gate")
			s.env = []string{"RESEARCH_LLM_URL=http://" + s.llm + "/v1", "RESEARCH_LLM_KEY=offline", "RESEARCH_A2A_TOKEN=research-secret", "RESEARCH_TOOLS_GATE=" + gate}
			s.start(t, "fakellm --addr 127.0.0.1:9300", "fakellm: listening")
			s.start(t, "cd examples/research && RESEARCH_A2A_TOKEN=research-secret PORT=9301 node researcher.mjs", "researcher: listening")
			serve := append([]string{"serve", "--workflows", s.flows, "--data", s.data}, store.args(t)...)
			wfrun := filepath.Join(bin, "wfrun")
			srv := proctest.Start(t, s.env, "wfrun: serving the HTTP API", wfrun, append(serve, "--http", s.http)...)
			s.env = append(s.env, "BATON_SERVER=http://"+s.http)

			questions := map[string]string{
				"a2a-1": `{"question": "Hold research one?", "scope": "all"}`,
				"a2a-2": `{"question": "Hold research two?", "scope": "all"}`,
				"mcp-1": `{"question": "Hold facts on the sky?", "scope": "all"}`,
				"mcp-2": `{"question": "Hold facts on glaciers?", "scope": "all"}`,
				"ask-1": `{"question": "How fast do glaciers move?"}`,
			}
			for id, input := range questions {
				if out, code := proctest.Output(t, s.env, wfrun, "start", "research", "--id", id, "--input", input); code != 0 {
					t.Fatalf("start %s: exit %d\n%s", id, code, out)
				}
			}
			s.waitFor(t, "ask-1", "waiting in CLARIFY", waitingIn("CLARIFY"))
			waitUntil(t, "two A2A tasks held", func() bool {
				var held []string
				getJSON(t, "http://"+s.a2a+"/_test/held", &held)
				return len(held) == 2
			})
			waitUntil(t, "two MCP calls held", func() bool { return lines(gate+".calls") == 2 })

			must(t, srv.Process.Kill())
			waitGone(t, srv.Process.Pid)
			// The stdio MCP server the killed engine started ends with it
			// (its stdin closed), held call and all: no orphan is left.
			for _, pid := range pids(t, gate+".calls") {
				waitGone(t, pid)
			}
			// Only now may the held work end: the killed server saw none of it.
			must(t, os.WriteFile(gate, nil, 0o600))
			var released map[string]int
			postJSON(t, "http://"+s.a2a+"/_test/release", &released)

			s.http = proctest.FreeAddr(t)
			s.env[len(s.env)-1] = "BATON_SERVER=http://" + s.http
			proctest.Start(t, s.env, "wfrun: serving the HTTP API", wfrun, append(serve, "--http", s.http)...)
			for _, id := range []string{"a2a-1", "a2a-2", "mcp-1", "mcp-2"} {
				in := s.waitFor(t, id, "waiting in REVIEW", waitingIn("REVIEW"))
				if in.Context["findings"] == nil || in.Context["draft"] == nil {
					t.Fatalf("%s reached REVIEW with context %v, want findings and a draft", id, in.Context)
				}
				if out, code := proctest.Output(t, s.env, wfrun, "signal", id, "approve", "--data", `{"by": "ana"}`); code != 0 {
					t.Fatalf("signal %s: exit %d\n%s", id, code, out)
				}
			}
			if in := s.get(t, "ask-1"); in.Status != "waiting" || in.State != "CLARIFY" {
				t.Fatalf("ask-1 after the restart: %s in %s, want waiting in CLARIFY", in.Status, in.State)
			}
			if out, code := proctest.Output(t, s.env, wfrun, "signal", "ask-1", "clarify", "--data", `{"scope": "since 2000"}`); code != 0 {
				t.Fatalf("signal ask-1: exit %d\n%s", code, out)
			}
			s.waitFor(t, "ask-1", "waiting in REVIEW", waitingIn("REVIEW"))
			if out, code := proctest.Output(t, s.env, wfrun, "signal", "ask-1", "approve", "--data", `{"by": "ana"}`); code != 0 {
				t.Fatalf("signal ask-1: exit %d\n%s", code, out)
			}
			for id := range questions {
				in := s.waitFor(t, id, "completed", func(in proctest.Instance) bool { return in.Status != "running" && in.Status != "waiting" })
				if in.Status != "completed" || in.Outcome != "PUBLISHED" {
					t.Fatalf("%s: %s with outcome %q, want completed PUBLISHED", id, in.Status, in.Outcome)
				}
			}

			// One message id per run. A run's message is the same message
			// however often it is sent: the same instance (contextId) and the
			// same data part (input, context, previous result). Two ids for
			// one of them would be one run sent as two. (The clarified
			// question of ask-1 is a new run, with the scope in its context;
			// it starts a new task, as the server restarted while ask-1
			// waited: the task id it was left on is kept in memory only.)
			ids := map[string]map[string]bool{}
			sent := 0
			for _, m := range s.messages(t) {
				run := m.ContextID + " " + m.Data
				if ids[run] == nil {
					ids[run] = map[string]bool{}
				}
				ids[run][m.MessageID] = true
				sent++
			}
			for run, set := range ids {
				if len(set) != 1 {
					t.Errorf("one run under %d message ids %v: %s", len(set), set, run)
				}
			}
			if len(ids) != len(questions)+1 {
				t.Errorf("the researcher was sent %d runs, want %d (one per instance, and ask-1's clarified question)", len(ids), len(questions)+1)
			}
			t.Logf("the researcher was sent %d messages for %d runs", sent, len(ids))
		})
	}
}

// waitUntil polls ok for at most two minutes (the bound only stops a
// broken test).
func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within two minutes", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitGone waits until the process pid is gone: no more, or a zombie
// (the server is reaped by proctest; a killed server's child by whoever
// adopted it, which in a container may never reap it).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("end of process %d", pid), func() bool {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return syscall.Kill(pid, 0) != nil
		}
		// The state follows the command's name in parentheses.
		_, after, _ := strings.Cut(string(stat), ") ")
		return strings.HasPrefix(after, "Z")
	})
}

// pids reads the process ids the held calls noted.
func pids(t *testing.T, path string) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	must(t, err)
	var ps []int
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		pid, err := strconv.Atoi(strings.Fields(l)[0])
		must(t, err)
		ps = append(ps, pid)
	}
	return ps
}

// lines counts the lines of a file (0 while it does not exist).
func lines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		n++
	}
	return n
}

// post does what the README's curl line does, on a machine without curl:
// POST -d's body to the URL with the -H header.
func post(t *testing.T, args []string) string {
	t.Helper()
	var url, body, header string
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-s":
		case "-X":
			i++ // POST, as the body says
		case "-H":
			i++
			header = args[i]
		case "-d":
			i++
			body = args[i]
		default:
			url = args[i]
		}
	}
	k, v, _ := strings.Cut(header, ": ")
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	must(t, err)
	req.Header.Set(k, v)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	must(t, err)
	return string(out)
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	must(t, err)
	defer resp.Body.Close()
	must(t, json.NewDecoder(resp.Body).Decode(v))
}

func postJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", nil)
	must(t, err)
	defer resp.Body.Close()
	must(t, json.NewDecoder(resp.Body).Decode(v))
}

func port(addr string) string {
	_, p, _ := strings.Cut(addr, ":")
	return p
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
