package schema_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/scenario"
	"github.com/batonhq/baton/schema"
)

func compile(t testing.TB, name string, src []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(src))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource(name, doc))
	sch, err := c.Compile(name)
	require.NoError(t, err)
	return sch
}

func decode(t testing.TB, src []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(src, &m))
	return m
}

// at walks a JSON document by object keys and array indexes.
func at(t *testing.T, doc any, path ...any) map[string]any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			doc = doc.(map[string]any)[k]
		case int:
			doc = doc.([]any)[k]
		}
	}
	m, ok := doc.(map[string]any)
	require.True(t, ok, "no object at %v", path)
	return m
}

// keysOf returns an object schema's property names and its required keys.
func keysOf(t *testing.T, obj map[string]any) (props, required []string) {
	t.Helper()
	for k := range obj["properties"].(map[string]any) {
		props = append(props, k)
	}
	if r, ok := obj["required"].([]any); ok {
		for _, k := range r {
			required = append(required, k.(string))
		}
	}
	slices.Sort(props)
	slices.Sort(required)
	return props, required
}

func TestSchema_PropertiesEqualTheLoadersKeyTables(t *testing.T) {
	wf := decode(t, schema.Workflow())
	sc := decode(t, schema.Scenario())
	type section struct {
		doc  any
		path []any
	}
	workflowSections := map[string]section{
		"workflow": {wf, nil},
		"agent":    {wf, []any{"$defs", "agent", "anyOf", 1}},
		"state":    {wf, []any{"$defs", "state"}},
		"retry":    {wf, []any{"$defs", "retry"}},
		"backoff":  {wf, []any{"$defs", "backoff"}},
		"wait":     {wf, []any{"$defs", "wait"}},
		"foreach":  {wf, []any{"$defs", "foreach"}},
		"join":     {wf, []any{"$defs", "join"}},
		"limits":   {wf, []any{"$defs", "limits"}},
		"rule":     {wf, []any{"$defs", "rule"}},
		"a2a":      {wf, []any{"$defs", "a2a"}},
		"mcp":      {wf, []any{"$defs", "mcp"}},
		"llm":      {wf, []any{"$defs", "llm"}},
		"price":    {wf, []any{"$defs", "price"}},
	}
	scenarioSections := map[string]section{
		"scenario":     {sc, nil},
		"reply":        {sc, []any{"$defs", "reply"}},
		"handoff":      {sc, []any{"$defs", "handoff"}},
		"signal":       {sc, []any{"$defs", "signal"}},
		"expect":       {sc, []any{"$defs", "expect"}},
		"usage":        {sc, []any{"$defs", "usage"}},
		"expect_usage": {sc, []any{"$defs", "expect_usage"}},
	}
	check := func(tables map[string]struct{ required, all []string }, sections map[string]section) {
		for name, tab := range tables {
			s, ok := sections[name]
			if !assert.True(t, ok, "section %q of the loader has no place in the schema test: add it to the schema and here", name) {
				continue
			}
			obj := at(t, s.doc, s.path...)
			props, required := keysOf(t, obj)
			assert.Equal(t, tab.all, props, "properties of section %q", name)
			assert.Equal(t, tab.required, required, "required keys of section %q", name)
			assert.Equal(t, false, obj["additionalProperties"], "section %q must refuse unknown keys, as the loader does", name)
		}
		assert.Len(t, sections, len(tables), "the schema test names a section the loader does not have")
	}
	flat := func(req, opt []string) struct{ required, all []string } {
		all := append(slices.Clone(req), opt...)
		slices.Sort(all)
		r := slices.Clone(req)
		slices.Sort(r)
		return struct{ required, all []string }{r, all}
	}
	wt := map[string]struct{ required, all []string }{}
	for k, v := range rules.Keys() {
		wt[k] = flat(v.Required, v.Optional)
	}
	st := map[string]struct{ required, all []string }{}
	for k, v := range scenario.Keys() {
		st[k] = flat(v.Required, v.Optional)
	}
	check(wt, workflowSections)
	check(st, scenarioSections)
}

// toJSON turns a YAML document into the JSON value an editor validates:
// aliases and merge keys resolved, keys as strings, non-finite numbers as
// their text (JSON has none).
func toJSON(t testing.TB, src []byte) (any, bool) {
	var v any
	if err := yaml.Unmarshal(src, &v); err != nil {
		return nil, false
	}
	data, err := json.Marshal(plain(v))
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	require.NoError(t, err)
	return doc, true
}

func plain(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = plain(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = plain(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return fmt.Sprint(x)
		}
	}
	return v
}

// yamlFiles lists every YAML file of the repository.
func yamlFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			out = append(out, path)
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// TestSchema_AcceptsEveryFileTheLoaderAccepts validates every workflow and
// scenario file of the repository that its loader accepts (the examples and
// every testdata file) against the schema: the schema must refuse none.
func TestSchema_AcceptsEveryFileTheLoaderAccepts(t *testing.T) {
	wf := compile(t, "workflow.schema.json", schema.Workflow())
	sc := compile(t, "scenario.schema.json", schema.Scenario())
	// The edge files hold the less common shapes of every value; they must
	// load, or the loop below would skip them silently.
	_, err := rules.Load("testdata/edge_workflow.yaml")
	require.NoError(t, err)
	_, err = scenario.Load("testdata/edge_scenario.yaml")
	require.NoError(t, err)
	workflows, scenarios := 0, 0
	for _, f := range yamlFiles(t) {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		if _, err := rules.Parse(f, src); err == nil {
			workflows++
			doc, ok := toJSON(t, src)
			require.True(t, ok, f)
			assert.NoError(t, wf.Validate(doc), "%s loads as a workflow but the schema refuses it", f)
		}
		if _, err := scenario.Parse(f, src); err == nil {
			scenarios++
			doc, ok := toJSON(t, src)
			require.True(t, ok, f)
			assert.NoError(t, sc.Validate(doc), "%s loads as a scenario but the schema refuses it", f)
		}
	}
	assert.GreaterOrEqual(t, workflows, 10, "workflow files checked")
	assert.GreaterOrEqual(t, scenarios, 10, "scenario files checked")
}

// TestSchema_RefusesWhatTheLoaderRefuses shows the schemas are not empty
// promises: files the loaders refuse for their keys or values are refused.
func TestSchema_RefusesWhatTheLoaderRefuses(t *testing.T) {
	wf := compile(t, "workflow.schema.json", schema.Workflow())
	sc := compile(t, "scenario.schema.json", schema.Scenario())
	workflows := []string{
		"unknown_keys", "near_miss_required", "missing_required_top", "missing_required_rule",
		"bad_names", "bad_durations", "bad_priorities", "bad_counts", "bad_types", "bad_fractions",
		"scenario_not_workflow", "typed_declarations",
	}
	for _, name := range workflows {
		src, err := os.ReadFile("../rules/testdata/invalid/" + name + ".yaml")
		require.NoError(t, err)
		doc, ok := toJSON(t, src)
		require.True(t, ok, name)
		assert.Error(t, wf.Validate(doc), "the workflow schema accepts %s", name)
	}
	for _, name := range []string{"unknown_keys", "bad_values", "missing_required", "workflow_not_scenario"} {
		src, err := os.ReadFile("../scenario/testdata/invalid/" + name + ".yaml")
		require.NoError(t, err)
		doc, ok := toJSON(t, src)
		require.True(t, ok, name)
		assert.Error(t, sc.Validate(doc), "the scenario schema accepts %s", name)
	}
}

// TestSchema_PatternsAreECMA262 keeps the patterns to the syntax that
// ECMA-262 and Go's RE2 read alike, since editors evaluate them in
// JavaScript: no named groups, inline flags, \A, \z, POSIX classes or
// Unicode classes.
func TestSchema_PatternsAreECMA262(t *testing.T) {
	forbidden := regexp.MustCompile(`\(\?P?<|\(\?[imsU-]|\\[AzZ]|\[\[:|\\[pP]\{`)
	for name, src := range map[string][]byte{"workflow": schema.Workflow(), "scenario": schema.Scenario()} {
		var walk func(v any)
		n := 0
		walk = func(v any) {
			switch x := v.(type) {
			case map[string]any:
				for k, e := range x {
					if p, ok := e.(string); ok && k == "pattern" {
						n++
						assert.False(t, forbidden.MatchString(p), "%s: pattern %q uses syntax ECMA-262 lacks", name, p)
						_, err := regexp.Compile(p)
						assert.NoError(t, err)
					}
					walk(e)
				}
			case []any:
				for _, e := range x {
					walk(e)
				}
			}
		}
		walk(decode(t, src))
		assert.Positive(t, n, "%s has patterns", name)
	}
}

// FuzzSchema_AcceptsWhatTheLoaderAccepts: whatever the workflow loader
// accepts, the schema must accept too.
func FuzzSchema_AcceptsWhatTheLoaderAccepts(f *testing.F) {
	for _, pattern := range []string{"../rules/testdata/valid/*.yaml", "../rules/testdata/invalid/lint_*.yaml", "../examples/*/workflow*.yaml", "../scenario/testdata/budget/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			if src, err := os.ReadFile(file); err == nil {
				f.Add(src)
			}
		}
	}
	wf := compile(f, "workflow.schema.json", schema.Workflow())
	f.Fuzz(func(t *testing.T, src []byte) {
		if _, err := rules.Parse("fuzz.yaml", src); err != nil {
			return
		}
		doc, ok := toJSON(t, src)
		if !ok {
			t.Fatal("the loader accepts YAML that yaml.Unmarshal refuses")
		}
		if err := wf.Validate(doc); err != nil {
			t.Fatalf("the loader accepts\n%s\nbut the schema refuses it: %v", src, err)
		}
	})
}

// FuzzSchema_AcceptsWhatTheScenarioLoaderAccepts: whatever the scenario
// loader accepts, the scenario schema must accept too.
func FuzzSchema_AcceptsWhatTheScenarioLoaderAccepts(f *testing.F) {
	for _, pattern := range []string{"testdata/edge_scenario.yaml", "../examples/*/scenarios/*.yaml", "../scenario/testdata/invalid/*.yaml", "../scenario/testdata/budget/scenarios/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			if src, err := os.ReadFile(file); err == nil {
				f.Add(src)
			}
		}
	}
	sc := compile(f, "scenario.schema.json", schema.Scenario())
	f.Fuzz(func(t *testing.T, src []byte) {
		if _, err := scenario.Parse("fuzz.yaml", src); err != nil {
			return
		}
		doc, ok := toJSON(t, src)
		if !ok {
			t.Fatal("the loader accepts YAML that yaml.Unmarshal refuses")
		}
		if err := sc.Validate(doc); err != nil {
			t.Fatalf("the loader accepts\n%s\nbut the schema refuses it: %v", src, err)
		}
	})
}
