package rules

import (
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/batonhq/baton/registry"
	"go.yaml.in/yaml/v3"
)

// Agent kinds: how the engine reaches an agent. An agent with none of the
// keys that make a kind runs a Go handler or is external (it takes its work
// from the transport).
const (
	KindHTTP = "http" // url: the engine POSTs the work
	KindA2A  = "a2a"  // a2a: an Agent2Agent agent
	KindMCP  = "mcp"  // mcp: a tool of an MCP server
	KindLLM  = "llm"  // llm: one call of an OpenAI-compatible model
)

// kindKeys are the agent keys that each make a kind; an agent has at most
// one of them.
var kindKeys = []string{"url", KindA2A, KindMCP, KindLLM}

// A2A is an `a2a` agent: an Agent2Agent agent the engine sends each run to
// as a message.
type A2A struct {
	// URL is the agent's base URL (its card is under /.well-known).
	URL string
	// TokenEnv names the environment variable holding the bearer token;
	// empty for none.
	TokenEnv string
}

// A2ATriggers are the only outcomes an A2A agent reports (besides the
// engine's reserved ones).
var A2ATriggers = []string{"completed", "input_required"}

// MCP is an `mcp` agent: one tool of an MCP server, reached over streamable
// HTTP (URL) or started as a child process speaking stdio (Command).
type MCP struct {
	// URL is the server's streamable HTTP endpoint; empty with Command.
	URL string
	// Command is the server's command line, as written (a relative path is
	// relative to the workflow file's folder, see Dir); empty with URL.
	Command []string
	// Dir is the folder of the workflow file, where a stdio server starts.
	Dir string
	// Tool is the tool called on each run.
	Tool string
	// Arguments computes the tool's arguments from the hand-off (a map);
	// nil when the file gives none.
	Arguments *Expr
	// TokenEnv names the environment variable holding the bearer token of
	// an HTTP server; empty for none.
	TokenEnv string
}

// MCPTriggers are the only outcomes an MCP agent reports (besides the
// engine's reserved ones).
var MCPTriggers = []string{"done"}

// LLM is an `llm` agent: each run is one chat completion of an
// OpenAI-compatible model whose answer is the run's outcome.
type LLM struct {
	// Model is the model's name.
	Model string
	// BaseURLEnv names the environment variable holding the API's base URL;
	// empty for the default (DefaultLLMBaseURL).
	BaseURLEnv string
	// KeyEnv names the environment variable holding the API key; empty
	// for a server that needs none.
	KeyEnv string
	// System is the system message; empty for none.
	System string
	// Prompt computes the user message from the hand-off (a string); nil
	// for the default prompt.
	Prompt *Expr
	// Temperature is the sampling temperature; nil leaves the model's
	// default.
	Temperature *float64
	// Price fills the runs' usage cost; nil when the file sets none.
	Price *registry.Price
}

// DefaultLLMBaseURL is where an LLM agent without base_url_env sends its
// calls.
const DefaultLLMBaseURL = "https://api.openai.com/v1"

// Kind returns the agent's kind (KindHTTP, KindA2A, KindMCP, KindLLM), or
// "" for an agent that runs a Go handler or is external.
func (a *Agent) Kind() string {
	switch {
	case a.URL != "":
		return KindHTTP
	case a.A2A != nil:
		return KindA2A
	case a.MCP != nil:
		return KindMCP
	case a.LLM != nil:
		return KindLLM
	}
	return ""
}

// Triggers returns the outcomes the rules leaving agent's states name, the
// engine's reserved outcomes excluded, in file order without repeats. An
// LLM agent's answers choose among them.
func (w *Workflow) Triggers(agent string) []string {
	var out []string
	for _, r := range w.Rules {
		if r.From != agent || len(r.Sources) == 0 {
			continue
		}
		for _, t := range r.Triggers {
			if !slices.Contains(reservedAny, t) && !slices.Contains(reservedParallel, t) && !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

var (
	a2aKeys   = keySpec{required: []string{"url"}, optional: []string{"token_env"}}
	mcpKeys   = keySpec{required: []string{"tool"}, optional: []string{"url", "command", "arguments", "token_env"}}
	llmKeys   = keySpec{required: []string{"model"}, optional: []string{"base_url_env", "key_env", "system", "prompt", "temperature", "price"}}
	priceKeys = keySpec{required: []string{"input", "output"}}
)

// agentKind decodes the key that gives the agent its kind, refusing a
// second one at its key.
func (l *loader) agentKind(a *Agent, spec fieldSet) {
	var first *yaml.Node
	for _, f := range spec.ordered {
		k := deref(f.key).Value
		if !slices.Contains(kindKeys, k) {
			continue
		}
		if first != nil {
			l.errorf(f.key, "agent %s has %s and %s: an agent has at most one of url, a2a, mcp and llm", quote(a.ID), deref(first).Value, k)
			continue
		}
		first = f.key
		switch k {
		case KindA2A:
			a.A2A = l.a2a(f.val)
		case KindMCP:
			a.MCP = l.mcp(f.val)
		case KindLLM:
			a.LLM = l.llm(f.val)
		}
	}
}

func (l *loader) a2a(n *yaml.Node) *A2A {
	fs, ok := l.mapping(n, "a2a")
	if !ok {
		return nil
	}
	l.checkKeys(fs, a2aKeys, " in a2a")
	out := &A2A{}
	if f, ok := fs.get("url"); ok {
		out.URL = l.httpURL(f.val, "a2a.url")
	}
	if f, ok := fs.get("token_env"); ok {
		out.TokenEnv = l.envVar(f.val, "a2a.token_env")
	}
	return out
}

func (l *loader) mcp(n *yaml.Node) *MCP {
	fs, ok := l.mapping(n, "mcp")
	if !ok {
		return nil
	}
	l.checkKeys(fs, mcpKeys, " in mcp")
	out := &MCP{Dir: dirOf(l.file)}
	u, hasURL := fs.get("url")
	c, hasCommand := fs.get("command")
	switch {
	case hasURL && hasCommand:
		l.errorf(c.key, "mcp has url and command: give the server's url, or the command that starts it, not both")
	case !hasURL && !hasCommand:
		l.errorf(fs.node, "mcp needs url (a server over HTTP) or command (a server the engine starts)")
	case hasURL:
		out.URL = l.httpURL(u.val, "mcp.url")
	default:
		items, _ := l.stringList(c.val, "mcp.command", false)
		for _, it := range items {
			if s, ok := l.scalar(it, "mcp.command item"); ok {
				out.Command = append(out.Command, s)
			}
		}
		if len(out.Command) > 0 && strings.TrimSpace(out.Command[0]) == "" {
			l.errorf(items[0], "mcp.command must start with the program to run")
		}
	}
	if f, ok := fs.get("tool"); ok {
		if s, ok := l.scalar(f.val, "mcp.tool"); ok {
			if s == "" {
				l.errorf(f.val, "mcp.tool must not be empty")
			}
			out.Tool = s
		}
	}
	if f, ok := fs.get("arguments"); ok {
		if _, ok := l.scalar(f.val, "mcp.arguments"); ok {
			out.Arguments = l.compileTaskExpr(f.val, kindArguments, "arguments")
		}
	}
	if f, ok := fs.get("token_env"); ok {
		out.TokenEnv = l.envVar(f.val, "mcp.token_env")
		if hasCommand && !hasURL {
			l.errorf(f.key, "mcp.token_env is the bearer token of a server over HTTP: it needs url")
		}
	}
	return out
}

func (l *loader) llm(n *yaml.Node) *LLM {
	fs, ok := l.mapping(n, "llm")
	if !ok {
		return nil
	}
	l.checkKeys(fs, llmKeys, " in llm")
	out := &LLM{}
	if f, ok := fs.get("model"); ok {
		if s, ok := l.scalar(f.val, "llm.model"); ok {
			if s == "" {
				l.errorf(f.val, "llm.model must not be empty")
			}
			out.Model = s
		}
	}
	if f, ok := fs.get("base_url_env"); ok {
		out.BaseURLEnv = l.envVar(f.val, "llm.base_url_env")
	}
	if f, ok := fs.get("key_env"); ok {
		out.KeyEnv = l.envVar(f.val, "llm.key_env")
	}
	if f, ok := fs.get("system"); ok && !isNull(f.val) {
		out.System, _ = l.scalar(f.val, "llm.system")
	}
	if f, ok := fs.get("prompt"); ok {
		if _, ok := l.scalar(f.val, "llm.prompt"); ok {
			out.Prompt = l.compileTaskExpr(f.val, kindTask, "prompt")
		}
	}
	if f, ok := fs.get("temperature"); ok {
		if v, ok := l.numberIn(f.val, "llm.temperature", 2); ok {
			out.Temperature = &v
		}
	}
	if f, ok := fs.get("price"); ok {
		out.Price = l.price(f.val)
	}
	return out
}

func (l *loader) price(n *yaml.Node) *registry.Price {
	fs, ok := l.mapping(n, "llm.price")
	if !ok {
		return nil
	}
	l.checkKeys(fs, priceKeys, " in llm.price")
	p := &registry.Price{}
	if f, ok := fs.get("input"); ok {
		p.Input, _ = l.numberIn(f.val, "llm.price.input", math.MaxFloat64)
	}
	if f, ok := fs.get("output"); ok {
		p.Output, _ = l.numberIn(f.val, "llm.price.output", math.MaxFloat64)
	}
	return p
}

// httpURL returns an http or https URL with a host, or reports it.
func (l *loader) httpURL(n *yaml.Node, what string) string {
	u, ok := l.scalar(n, what)
	if !ok {
		return ""
	}
	if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		l.errorf(n, "%s must be an http or https URL, got %s", what, quote(u))
		return ""
	}
	return u
}

// envVar returns the name of an environment variable, or reports it.
func (l *loader) envVar(n *yaml.Node, what string) string {
	v, ok := l.scalar(n, what)
	if !ok {
		return ""
	}
	if !envName.MatchString(v) {
		l.errorf(n, "%s must name an environment variable ([A-Za-z_][A-Za-z0-9_]*), got %s", what, quote(v))
		return ""
	}
	return v
}

// numberIn returns a finite number in [0, hi].
func (l *loader) numberIn(n *yaml.Node, what string, hi float64) (float64, bool) {
	d := deref(n)
	if d == nil || d.Kind != yaml.ScalarNode || (d.Tag != "!!float" && d.Tag != "!!int") {
		l.errorf(n, "%s must be a number, got %s", what, kindName(d))
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(d.Value, "_", ""), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > hi {
		if hi == math.MaxFloat64 {
			l.errorf(n, "%s must be a number of at least 0, got %s", what, d.Value)
		} else {
			l.errorf(n, "%s must be a number in [0, %g], got %s", what, hi, d.Value)
		}
		return 0, false
	}
	return v, true
}

// checkKindTriggers refuses, on a rule leaving an A2A or MCP agent's
// states, a trigger the agent never reports. The engine's reserved
// outcomes (error, timeout, rejected) stay allowed: they come from the
// engine, whatever the agent's kind.
func (l *loader) checkKindTriggers(r *Rule, rn *ruleNodes) {
	a, ok := l.w.agents[r.From]
	if !ok {
		return
	}
	var allowed []string
	switch a.Kind() {
	case KindA2A:
		allowed = A2ATriggers
	case KindMCP:
		allowed = MCPTriggers
	default:
		return
	}
	for i, t := range r.Triggers {
		if i >= len(rn.triggers) || slices.Contains(allowed, t) || slices.Contains(reservedAny, t) || slices.Contains(reservedParallel, t) {
			continue
		}
		l.errorf(rn.triggers[i], "%s agent %s only reports %s (and the engine's %s), not %s%s",
			strings.ToUpper(a.Kind()), quote(a.ID), strings.Join(allowed, ", "), strings.Join(reservedAny, ", "), quote(t), didYouMean(t, allowed))
	}
}
