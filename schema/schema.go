// Package schema holds the JSON Schemas (draft 2020-12) of Baton's two file
// formats, the workflow file and the scenario file. Editors that speak the
// YAML language server protocol check a file against them and complete its
// keys when a comment in the file names one, by a path relative to the file:
//
//	# yaml-language-server: $schema=../../schema/workflow.schema.json
//
// `wfrun schema workflow` and `wfrun schema scenario` print the same bytes,
// for a project that keeps its own copy.
// A test keeps each schema's properties equal to the loaders' key tables
// (rules.Keys, scenario.Keys), so a key added to a loader must be added here.
package schema

import _ "embed"

var (
	//go:embed workflow.schema.json
	workflow []byte
	//go:embed scenario.schema.json
	scenarioSchema []byte
)

// Workflow returns the JSON Schema of workflow files.
func Workflow() []byte { return clone(workflow) }

// Scenario returns the JSON Schema of scenario files.
func Scenario() []byte { return clone(scenarioSchema) }

func clone(b []byte) []byte { return append([]byte(nil), b...) }
