package rules_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/batonhq/baton/rules"
)

func TestSchema_Check(t *testing.T) {
	type point struct{ X, Y int }
	decl := func(typ string, optional bool) *rules.Schema {
		return &rules.Schema{Fields: []rules.Field{{Name: "f", Type: typ, Optional: optional}}}
	}
	tests := []struct {
		name     string
		typ      string
		optional bool
		data     map[string]any
		want     string // the FieldError's reason; "" fits
	}{
		{"string", rules.TypeString, false, map[string]any{"f": "x"}, ""},
		{"string given a number", rules.TypeString, false, map[string]any{"f": 12}, "must be a string, got the number 12"},
		{"required field missing", rules.TypeString, false, map[string]any{"g": "x"}, "is missing"},
		{"required field null", rules.TypeString, false, map[string]any{"f": nil}, "must be a string, got null"},
		{"optional field missing", rules.TypeString, true, map[string]any{}, ""},
		{"optional field null", rules.TypeString, true, map[string]any{"f": nil}, ""},
		{"optional field of another type", rules.TypeString, true, map[string]any{"f": true}, "must be a string, got true"},
		{"number from JSON", rules.TypeNumber, false, map[string]any{"f": 2.5}, ""},
		{"number from Go", rules.TypeNumber, false, map[string]any{"f": uint8(3)}, ""},
		{"number as json.Number", rules.TypeNumber, false, map[string]any{"f": json.Number("1e3")}, ""},
		{"number given a string", rules.TypeNumber, false, map[string]any{"f": "12"}, `must be a number, got the string "12"`},
		{"int from JSON (3.0 is an int)", rules.TypeInt, false, map[string]any{"f": 3.0}, ""},
		{"int from Go", rules.TypeInt, false, map[string]any{"f": int64(-7)}, ""},
		{"int as json.Number", rules.TypeInt, false, map[string]any{"f": json.Number("42")}, ""},
		{"int with a fraction", rules.TypeInt, false, map[string]any{"f": 3.5}, "must be an int, got the number 3.5"},
		{"int as a fractional json.Number", rules.TypeInt, false, map[string]any{"f": json.Number("0.5")}, "must be an int, got the number 0.5"},
		{"bool", rules.TypeBool, false, map[string]any{"f": false}, ""},
		{"bool given a string", rules.TypeBool, false, map[string]any{"f": "true"}, `must be a bool, got the string "true"`},
		{"list from JSON", rules.TypeList, false, map[string]any{"f": []any{1, "a"}}, ""},
		{"list from Go", rules.TypeList, false, map[string]any{"f": []string{"a"}}, ""},
		{"list given a map", rules.TypeList, false, map[string]any{"f": map[string]any{}}, "must be a list, got a map"},
		{"list given text", rules.TypeList, false, map[string]any{"f": "a,b"}, `must be a list, got the string "a,b"`},
		{"map from JSON", rules.TypeMap, false, map[string]any{"f": map[string]any{"a": 1}}, ""},
		{"map from a Go struct", rules.TypeMap, false, map[string]any{"f": point{1, 2}}, ""},
		{"map from a Go map", rules.TypeMap, false, map[string]any{"f": map[string]int{"a": 1}}, ""},
		{"map given a list", rules.TypeMap, false, map[string]any{"f": []any{}}, "must be a map, got a list"},
		{"any", rules.TypeAny, false, map[string]any{"f": []any{}}, ""},
		{"any required and missing", rules.TypeAny, false, map[string]any{}, "is missing"},
		{"long strings are cut", rules.TypeInt, false, map[string]any{"f": strings.Repeat("x", 100)}, `must be an int, got the string "` + strings.Repeat("x", 40) + `..."`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := decl(tt.typ, tt.optional).Check(tt.data)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("got %v, want the data to fit", err)
			case tt.want != "" && err == nil:
				t.Fatalf("got no error, want %q", tt.want)
			case err != nil && (err.Field != "f" || err.Reason != tt.want):
				t.Fatalf("got field %q reason %q, want field f reason %q", err.Field, err.Reason, tt.want)
			}
		})
	}
}

func TestSchema_CheckNilAndExtraFields(t *testing.T) {
	var none *rules.Schema
	if err := none.Check(map[string]any{"x": 1}); err != nil {
		t.Fatalf("got %v, want a nil schema to fit everything", err)
	}
	s := &rules.Schema{Fields: []rules.Field{{Name: "a", Type: rules.TypeInt}, {Name: "b", Type: rules.TypeString}}}
	if err := s.Check(map[string]any{"a": 1, "b": "x", "c": []any{}}); err != nil {
		t.Fatalf("got %v, want undeclared fields to pass", err)
	}
	// The first broken field in declaration order is the one named.
	err := s.Check(map[string]any{"a": "one", "b": 2})
	if err == nil || err.Field != "a" || err.Error() != `rules: field a must be an int, got the string "one"` {
		t.Fatalf("got %v, want field a named", err)
	}
}

func TestSchema_CheckDoesNotAllocate(t *testing.T) {
	w := loadValid(t, "typed.yaml")
	a, _ := w.Agent("seller")
	data := map[string]any{"approval": "APPROVED", "score": 4.0, "reasons": []any{"ok"}, "extra": map[string]any{}}
	if n := testing.AllocsPerRun(100, func() {
		if err := a.Result.Check(data); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("got %v allocations per check, want 0", n)
	}
}

func TestLoad_Declarations(t *testing.T) {
	w := loadValid(t, "typed.yaml")
	if len(w.Warnings) != 0 {
		t.Errorf("got warnings %v, want none", w.Warnings)
	}
	want := []rules.Field{
		{Name: "order_id", Type: rules.TypeString, Pos: rules.Pos{Line: 4, Col: 3}},
		{Name: "amount", Type: rules.TypeNumber, Pos: rules.Pos{Line: 5, Col: 3}},
		{Name: "note", Type: rules.TypeString, Optional: true, Pos: rules.Pos{Line: 6, Col: 3}},
		{Name: "tags", Type: rules.TypeList, Optional: true, Pos: rules.Pos{Line: 7, Col: 3}},
	}
	if w.Input == nil || len(w.Input.Fields) != len(want) {
		t.Fatalf("got input %+v, want %d fields", w.Input, len(want))
	}
	for i, f := range want {
		if w.Input.Fields[i] != f {
			t.Errorf("input field %d: got %+v, want %+v", i, w.Input.Fields[i], f)
		}
	}
	seller, _ := w.Agent("seller")
	if f, ok := seller.Result.Field("score"); !ok || f.Type != rules.TypeInt || f.Optional {
		t.Errorf("got seller's score %+v, %v, want a required int", f, ok)
	}
	if f, ok := seller.Result.Field("extra"); !ok || f.Type != rules.TypeMap || !f.Optional {
		t.Errorf("got seller's extra %+v, %v, want an optional map", f, ok)
	}
	if payment, _ := w.Agent("payment"); payment.Result != nil {
		t.Errorf("got payment's result %+v, want nil: it declares none", payment.Result)
	}
}

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

// TestLoad_OptionalTypeInFlowMapping: YAML refuses `{note: string?}`; the
// error says to quote it.
func TestLoad_OptionalTypeInFlowMapping(t *testing.T) {
	src := "workflow: w\ninitial: A\ninput: {id: string, note: string?}\nstates:\n  A: {terminal: true}\n"
	_, err := rules.Parse("w.yaml", []byte(src))
	want := "w.yaml:3:33: malformed yaml: a value that ends in '?' inside { } must be in quotes ('string?')"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
	src = strings.Replace(src, "string?}", "'string?'}", 1)
	w, err := rules.Parse("w.yaml", []byte(src))
	if err != nil {
		t.Fatalf("got %v, want the quoted type to load", err)
	}
	if f, ok := w.Input.Field("note"); !ok || !f.Optional {
		t.Fatalf("got %+v, want note optional", f)
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

// FuzzSchemaCheck checks arbitrary JSON data against a declaration of
// every type: it never panics, and a failure names a declared field.
func FuzzSchemaCheck(f *testing.F) {
	for _, seed := range []string{
		`{"s":"x","n":1.5,"i":3,"b":true,"l":[1],"m":{"a":1},"a":null}`,
		`{"s":1,"i":3.5}`, `{}`, `{"i":1e308,"n":-0}`, `{"l":"x","m":[]}`,
	} {
		f.Add([]byte(seed))
	}
	s := &rules.Schema{}
	for _, typ := range rules.TypeNames {
		s.Fields = append(s.Fields, rules.Field{Name: typ[:1], Type: typ, Optional: typ == rules.TypeAny})
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m map[string]any
		if json.Unmarshal(data, &m) != nil {
			return
		}
		err := s.Check(m)
		if err == nil {
			return
		}
		if _, ok := s.Field(err.Field); !ok || err.Reason == "" {
			t.Fatalf("got %v, want a declared field and a reason", err)
		}
	})
}
