package mcpserver

import (
	"github.com/batonhq/baton/ops"
	"github.com/batonhq/baton/rules"
)

// MaxWait bounds a start's wait, in seconds.
const MaxWait = 60

// startArgs names a start tool's own arguments: id and wait, or baton_id
// and baton_wait when the input declares a field id or wait.
type startArgs struct{ id, wait string }

func startArgsOf(in *rules.Schema) startArgs {
	a := startArgs{id: "id", wait: "wait"}
	if _, ok := in.Field("id"); ok {
		a.id = "baton_id"
	}
	if _, ok := in.Field("wait"); ok {
		a.wait = "baton_wait"
	}
	// A workflow that declares baton_id as well keeps its own: the start
	// arguments never hide a declared field.
	if _, ok := in.Field(a.id); ok && a.id == "baton_id" {
		a.id = ""
	}
	if _, ok := in.Field(a.wait); ok && a.wait == "baton_wait" {
		a.wait = ""
	}
	return a
}

// InputSchema is the input schema of the start tool of a workflow whose
// input declaration is in: its fields at the top level (the ones not
// optional required), other fields allowed as the engine allows them, and
// the start's own arguments, the instance's id and the wait.
func InputSchema(in *rules.Schema) map[string]any {
	props := map[string]any{}
	required := []string{}
	if in != nil {
		for _, f := range in.Fields {
			p := f.JSONSchema()
			p["description"] = "declared as " + f.Declared()
			props[f.Name] = p
			if !f.Optional {
				required = append(required, f.Name)
			}
		}
	}
	a := startArgsOf(in)
	if a.id != "" {
		props[a.id] = map[string]any{"type": "string", "description": "the instance's id; a start with an id already used answers that instance (the same input) or is refused"}
	}
	if a.wait != "" {
		props[a.wait] = map[string]any{"type": "number", "minimum": 0, "maximum": MaxWait,
			"description": "seconds to wait for the instance to finish or to wait for a signal; the answer is then the instance"}
	}
	return map[string]any{"type": "object", "properties": props, "required": required}
}

// instanceSchema is the JSON Schema of an instance (GET /v1/instances/{id});
// required lists the fields always present: a start answers the summary
// alone unless it waits.
func instanceSchema(required ...string) map[string]any {
	str := map[string]any{"type": "string"}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"id": str, "workflow": str, "version": map[string]any{"type": "integer"},
			"status":        map[string]any{"type": "string", "enum": ops.Statuses},
			"state":         str,
			"step":          map[string]any{"type": "integer"},
			"outcome":       str,
			"error":         map[string]any{"type": []string{"string", "null"}},
			"cancel_reason": str,
			"usage":         map[string]any{"type": "object"},
			"context":       map[string]any{"type": "object"},
			"created":       map[string]any{"type": "string", "format": "date-time"},
			"updated":       map[string]any{"type": "string", "format": "date-time"},
		},
		"required": required,
	}
}

var summaryFields = []string{"id", "workflow", "version", "status"}

var (
	summarySchema = instanceSchema(summaryFields...)
	fullSchema    = instanceSchema("id", "workflow", "version", "status", "state", "step", "outcome", "error", "usage", "context", "created", "updated")
	pageSchema    = map[string]any{
		"type": "object",
		"properties": map[string]any{
			"instances": map[string]any{"type": "array", "items": fullSchema},
			"next":      map[string]any{"type": []string{"string", "null"}, "description": "the cursor of the next page; null on the last"},
		},
		"required": []string{"instances", "next"},
	}
	workflowsSchema = map[string]any{
		"type": "object",
		"properties": map[string]any{
			"workflows": map[string]any{"type": "array", "items": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name": map[string]any{"type": "string"}, "description": map[string]any{"type": "string"},
					"versions": map[string]any{"type": "array", "items": map[string]any{
						"type": "object",
						"properties": map[string]any{
							"version": map[string]any{"type": "integer"}, "hash": map[string]any{"type": "string"},
							"file": map[string]any{"type": "string"}, "current": map[string]any{"type": "boolean"},
						},
						"required": []string{"version", "hash", "file", "current"},
					}},
				},
				"required": []string{"name", "description", "versions"},
			}},
		},
		"required": []string{"workflows"},
	}
)

func object(props map[string]any, required ...string) map[string]any {
	if required == nil {
		required = []string{}
	}
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

func describe(t, d string) map[string]any { return map[string]any{"type": t, "description": d} }
