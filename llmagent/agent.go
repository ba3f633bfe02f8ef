package llmagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"go.uber.org/zap"

	"github.com/batonhq/baton/registry"
)

// DefaultBaseURL is where calls go when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// MaxBody is the largest answer, in bytes, read from the model's API; a
// longer one is a transport failure.
const MaxBody = 8 << 20

// DefaultTimeout bounds a call whose run has no deadline of its own.
const DefaultTimeout = 2 * time.Minute

// schemaName names the response format in the request.
const schemaName = "outcome"

// Config describes an LLM agent.
type Config struct {
	// Model names the model; required.
	Model string
	// BaseURL is the API's base URL (default DefaultBaseURL); the agent
	// POSTs to BaseURL + "/chat/completions".
	BaseURL string
	// Key is the API key sent as a bearer token; empty sends none.
	Key string
	// System is the system message; empty sends none.
	System string
	// Prompt makes the user message of a run; nil uses the default prompt:
	// the task description, a blank line, then "Context:" and the context
	// as JSON.
	Prompt func(t *registry.Task) (string, error)
	// Temperature is the sampling temperature; nil leaves the model's
	// default.
	Temperature *float64
	// Price, when set, fills the usage's cost.
	Price *registry.Price
	// Triggers are the triggers the model may answer; the response
	// format's trigger is an enum of them (any string when empty).
	Triggers []string
	// Result is the JSON Schema of the result (default: any object).
	Result map[string]any
	// Client makes the calls (default: a client of its own).
	Client *http.Client
	// Logger logs each call (default zap.NewNop()).
	Logger *zap.Logger
}

// Agent is the registry.Handler of an LLM agent.
type Agent struct {
	cfg    Config
	chat   openai.ChatCompletionService
	format openai.ChatCompletionNewParamsResponseFormatUnion
	log    *zap.Logger
}

var _ registry.Handler = (*Agent)(nil)

// New returns the agent cfg describes.
func New(cfg Config) (*Agent, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, &ConfigError{Field: "model", Reason: "is required"}
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if u, err := url.Parse(cfg.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The URL is not quoted: a base URL may carry credentials.
		return nil, &ConfigError{Field: "base URL", Reason: "must be an http or https URL"}
	}
	client := &http.Client{}
	if cfg.Client != nil {
		c := *cfg.Client
		client = &c
	}
	client.Transport = limitBodies{next: client.Transport}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Result == nil {
		cfg.Result = map[string]any{"type": "object"}
	}
	trigger := map[string]any{"type": "string"}
	if len(cfg.Triggers) > 0 {
		trigger["enum"] = cfg.Triggers
	}
	schema := map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"trigger": trigger, "result": cfg.Result},
		"required":             []string{"trigger", "result"},
		"additionalProperties": false,
	}
	a := &Agent{cfg: cfg, log: cfg.Logger}
	// The service is built from these options alone: the SDK's client
	// would also read OPENAI_* variables from the environment, and this
	// agent's key and base URL are the workflow's, nothing else.
	a.chat = openai.NewChatCompletionService(
		option.WithBaseURL(cfg.BaseURL),
		option.WithAPIKey(cfg.Key),
		option.WithHTTPClient(client),
		option.WithMaxRetries(0), // the state's retry policy retries
	)
	a.format = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: schemaName, Strict: openai.Bool(true), Schema: schema},
	}}
	return a, nil
}

// Handle asks the model for the outcome of t (see the package
// documentation).
func (a *Agent) Handle(ctx context.Context, t *registry.Task) (registry.Outcome, error) {
	prompt, err := a.prompt(t)
	if err != nil {
		return registry.Outcome{}, registry.Permanent(fmt.Errorf("llmagent: prompt: %w", err))
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	var msgs []openai.ChatCompletionMessageParamUnion
	if a.cfg.System != "" {
		msgs = append(msgs, openai.SystemMessage(a.cfg.System))
	}
	msgs = append(msgs, openai.UserMessage(prompt))
	params := openai.ChatCompletionNewParams{Model: a.cfg.Model, Messages: msgs, ResponseFormat: a.format}
	if a.cfg.Temperature != nil {
		params.Temperature = openai.Float(*a.cfg.Temperature)
	}
	res, err := a.chat.New(ctx, params)
	if err != nil {
		err = a.callError(ctx, err)
		a.log.Info("llmagent: call failed", zap.String("agent", t.Agent), zap.String("step", t.IdempotencyKey), zap.String("kind", registry.KindOf(err)), zap.Error(err))
		return registry.Outcome{}, err
	}
	usage := a.usage(res)
	if len(res.Choices) == 0 {
		return registry.Outcome{Usage: usage}, registry.Kind(errors.New("llmagent: the model's API answered without a choice"), KindTransport)
	}
	trigger, result, bad := decodeAnswer(res.Choices[0].Message.Content, a.cfg.Triggers)
	if bad != nil {
		bad.Answer = a.clean(bad.Answer)
		bad.Reason = a.clean(bad.Reason)
		a.log.Info("llmagent: answer refused", zap.String("agent", t.Agent), zap.String("step", t.IdempotencyKey), zap.String("reason", bad.Reason))
		return registry.Outcome{Usage: usage}, registry.Kind(bad, KindInvalidResult)
	}
	a.log.Debug("llmagent: answered", zap.String("agent", t.Agent), zap.String("step", t.IdempotencyKey), zap.String("trigger", trigger),
		zap.Int64("input_tokens", usage.InputTokens), zap.Int64("output_tokens", usage.OutputTokens))
	return registry.Outcome{Trigger: trigger, Result: result, Usage: usage}, nil
}

// prompt is the user message of t.
func (a *Agent) prompt(t *registry.Task) (string, error) {
	if a.cfg.Prompt != nil {
		return a.cfg.Prompt(t)
	}
	return DefaultPrompt(t)
}

// DefaultPrompt is the user message of an agent without a prompt: the task
// description, a blank line, then "Context:" and the context as JSON.
func DefaultPrompt(t *registry.Task) (string, error) {
	ctx := t.Context
	if ctx == nil {
		ctx = map[string]any{}
	}
	data, err := json.Marshal(ctx)
	if err != nil {
		return "", fmt.Errorf("the context is not JSON: %w", err)
	}
	return t.Description + "\n\nContext:\n" + string(data), nil
}

// usage is what the call used, priced.
func (a *Agent) usage(res *openai.ChatCompletion) registry.Usage {
	u := registry.Usage{InputTokens: max(res.Usage.PromptTokens, 0), OutputTokens: max(res.Usage.CompletionTokens, 0), Model: res.Model}
	if u.Model == "" {
		u.Model = a.cfg.Model
	}
	if p := a.cfg.Price; p != nil {
		u.Cost = p.Cost(u.InputTokens, u.OutputTokens)
	}
	return u
}

// callError gives a failed call its kind. The SDK's own errors are not
// passed on: they hold the request, whose header carries the key.
func (a *Agent) callError(ctx context.Context, err error) error {
	var api *openai.Error
	if errors.As(err, &api) {
		se := &StatusError{Status: api.StatusCode, Message: a.clean(quoted(api.Message))}
		switch {
		case api.StatusCode == http.StatusTooManyRequests:
			return registry.Kind(se, KindRateLimited)
		case api.StatusCode >= 500, api.StatusCode == http.StatusRequestTimeout:
			return registry.Kind(se, KindTransport)
		default:
			return registry.Permanent(registry.Kind(se, KindLLMError))
		}
	}
	if ctx.Err() != nil {
		return registry.Kind(fmt.Errorf("llmagent: no answer from the model's API: %w", ctx.Err()), KindTransport)
	}
	// A transport failure's text names the URL, never the header; the
	// key is cleaned out all the same, should a base URL hold it.
	return registry.Kind(errors.New("llmagent: no answer from the model's API: "+a.clean(rootCause(err))), KindTransport)
}

// rootCause is the text of the innermost error of err.
func rootCause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// clean removes the key from text quoted from elsewhere.
func (a *Agent) clean(s string) string {
	if a.cfg.Key == "" {
		return s
	}
	return strings.ReplaceAll(s, a.cfg.Key, "[key]")
}
