package rules_test

import (
	"strings"
	"testing"

	"github.com/batonhq/baton/rules"
)

// TestLoad_TypedCorpus names each typed-data mistake with the corpus file
// that shows it and what must be said, at its position inside the file
// (inside the expression for type errors).
func TestLoad_TypedCorpus(t *testing.T) {
	kinds := []struct{ kind, file, want string }{
		{"unknown type with suggestion", "typed_declarations", `5:13: unknown type "strng" of input field "order_id" (did you mean "string"?)`},
		{"another language's type name", "typed_declarations", `6:11: unknown type "integer" of input field "amount" (did you mean "int"?)`},
		{"unknown optional type", "typed_declarations", `16:14: unknown type "numbr?" of result field "words" (did you mean "number"?)`},
		{"type not a name", "typed_declarations", `8:9: the type of input field "tags" must be a string, got a list`},
		{"declaration not a mapping", "typed_declarations", `12:13: result must be a mapping, got a list`},
		{"string input compared with a number", "typed_conditions", `17:42: condition: invalid operation: > (mismatched types string and int): input.confirmation_number is declared string`},
		{"field the declaration lacks", "typed_conditions", `22:24: condition: result has no field scor: its declaration lists score, approval, reasons (did you mean "score"?)`},
		{"declared field not bool", "typed_conditions", `27:16: condition: expected bool, but got string`},
		{"int field with %", "typed_conditions", `32:22: condition: % needs integers`},
		{"task adding an int to text", "typed_conditions", `37:21: task: invalid operation: + (mismatched types string and int)`},
		{"context value", "typed_conditions", `38:39: context "n": invalid operation: + (mismatched types int and string): input.note is declared string?`},
		{"input typed in rules of undeclared agents", "typed_conditions", `50:52: condition: invalid operation: > (mismatched types number and string)`},
	}
	for _, k := range kinds {
		got := diagnose(t, "testdata/invalid/"+k.file+".yaml")
		if !strings.Contains(got, k.want) {
			t.Errorf("%s: %s.yaml gave\n%s\nwant a diagnostic containing %q", k.kind, k.file, got, k.want)
		}
	}
	if got := diagnose(t, "testdata/invalid/typed_conditions.yaml"); strings.Count(got, "\n") != 7 {
		t.Errorf("got\n%s\nwant 7 diagnostics: the rule \"fine\" and undeclared results check clean", got)
	}
}

// TestLoad_UndeclaredDataStaysUntyped: without declarations any field may
// be read, as before; an empty declaration allows none.
func TestLoad_UndeclaredDataStaysUntyped(t *testing.T) {
	base := "workflow: w\ninitial: A\n%sagents: {a: {}}\nstates:\n  A: {agent: a}\n  B: {terminal: true}\nrules:\n  - {id: r, from: a, trigger: t, condition: 'input.anything > 1 && result.x == \"y\"', next: B}\n"
	if _, err := rules.Parse("w.yaml", []byte(strings.Replace(base, "%s", "", 1))); err != nil {
		t.Fatalf("got %v, want undeclared data untyped", err)
	}
	_, err := rules.Parse("w.yaml", []byte(strings.Replace(base, "%s", "input: {}\n", 1)))
	if err == nil || !strings.Contains(err.Error(), "w.yaml:9:52: condition: input has no field anything: its declaration lists no field") {
		t.Fatalf("got %v, want the empty declaration to refuse input.anything", err)
	}
}
