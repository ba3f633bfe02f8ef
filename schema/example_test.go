package schema_test

import (
	"encoding/json"
	"fmt"

	"github.com/batonhq/baton/schema"
)

// The schemas are plain JSON: an editor reads them from the repository's
// schema/ folder, a program from these functions.
func ExampleWorkflow() {
	var doc struct {
		Schema   string   `json:"$schema"`
		Title    string   `json:"title"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(schema.Workflow(), &doc); err != nil {
		panic(err)
	}
	fmt.Println(doc.Title)
	fmt.Println(doc.Schema)
	fmt.Println(doc.Required)
	// Output:
	// Baton workflow
	// https://json-schema.org/draft/2020-12/schema
	// [workflow initial states]
}
