package rules_test

import (
	"strings"
	"testing"

	"github.com/batonhq/baton/rules"
)

func TestLoad_HTTPAgentKeys(t *testing.T) {
	const base = "workflow: w\ninitial: A\nagents:\n  a: %s\nstates:\n  A: {agent: a}\n  DONE: {terminal: true}\nrules:\n  - {id: r, from: a, trigger: t, next: DONE}\n"
	tests := []struct {
		spec    string
		wantErr string
		url     string
		env     string
	}{
		{"{url: 'https://seller.internal/baton', secret_env: SELLER_SECRET, concurrency: 8}", "", "https://seller.internal/baton", "SELLER_SECRET"},
		{"{url: 'ftp://x'}", "url must be an http or https URL", "", ""},
		{"{url: 'http://x', secret_env: 'not a name'}", "secret_env must name an environment variable", "", ""},
		{"{secret_env: SECRET}", "secret_env signs the calls of an HTTP agent: it needs url", "", ""},
		{"{concurrency: 0}", "concurrency must be at least 1", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			w, err := rules.Parse("w.yaml", []byte(strings.Replace(base, "%s", tt.spec, 1)))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a, _ := w.Agent("a")
			if a.URL != tt.url || a.SecretEnv != tt.env || a.Concurrency != 8 {
				t.Errorf("got url %q env %q concurrency %d, want %q %q 8", a.URL, a.SecretEnv, a.Concurrency, tt.url, tt.env)
			}
		})
	}
}

func TestParse_EmptyAgentsAllowedWhenNoStateRunsOne(t *testing.T) {
	src := `workflow: approval
initial: WAITING
agents: {}
states:
  WAITING: {wait: {signals: [approved, rejected]}, timeout: 1h}
  DONE: {terminal: true}
  REJECTED: {terminal: true}
rules:
  - {id: ok, from: WAITING, trigger: approved, next: DONE}
  - {id: no, from: WAITING, trigger: [rejected, timeout], next: REJECTED}
`
	if _, err := rules.Parse("w.yaml", []byte(src)); err != nil {
		t.Fatalf("got %v, want no error", err)
	}
}

func TestParse_EmptyAgentsRefusedWhenAStateRunsOne(t *testing.T) {
	src := `workflow: review
initial: REVIEW
agents: {}
states:
  REVIEW: {agent: reviewer}
  DONE: {terminal: true}
rules:
  - {id: ok, from: reviewer, trigger: done, next: DONE}
`
	_, err := rules.Parse("w.yaml", []byte(src))
	if err == nil || !strings.Contains(err.Error(), "w.yaml:3:9: agents must declare at least one agent") {
		t.Fatalf("got %v, want the empty agents map refused at 3:9", err)
	}
}
