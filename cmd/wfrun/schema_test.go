package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/schema"
)

func TestSchema_PrintsTheEmbeddedSchemas(t *testing.T) {
	tests := []struct {
		args []string
		want []byte
	}{
		{[]string{"schema"}, schema.Workflow()},
		{[]string{"schema", "workflow"}, schema.Workflow()},
		{[]string{"schema", "scenario"}, schema.Scenario()},
	}
	for _, tt := range tests {
		out, errOut, code := wfrun(t, tt.args...)
		require.Equal(t, 0, code, errOut)
		assert.Equal(t, string(tt.want), out)
		var doc map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &doc))
		assert.Equal(t, "https://json-schema.org/draft/2020-12/schema", doc["$schema"])
	}
	_, _, code := wfrun(t, "schema", "workflows")
	assert.Equal(t, 2, code)
	_, _, code = wfrun(t, "schema", "workflow", "scenario")
	assert.Equal(t, 2, code)
}
