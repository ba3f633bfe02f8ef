package rules

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// The types a declaration may give a field; a trailing `?` marks the field
// optional.
const (
	TypeString = "string"
	TypeNumber = "number" // any number
	TypeInt    = "int"    // a number with no fraction (JSON 3.0 is an int)
	TypeBool   = "bool"
	TypeList   = "list"
	TypeMap    = "map"
	TypeAny    = "any"
)

// TypeNames lists the type names of declarations, in the order the
// documentation gives them.
var TypeNames = []string{TypeString, TypeNumber, TypeInt, TypeBool, TypeList, TypeMap, TypeAny}

// Schema declares the fields some data carries: a workflow's `input`, an
// agent's `result`. The data may carry fields the schema does not list;
// expressions may not read them. A nil *Schema declares nothing: the data
// is untyped.
type Schema struct {
	// Fields are the declared fields, in file order.
	Fields []Field
}

// Field is one declared field.
type Field struct {
	// Name is the field's key in the data.
	Name string
	// Type is one of TypeNames.
	Type string
	// Optional fields may be missing or null.
	Optional bool
	// Pos is the position of the field's key.
	Pos Pos
}

// Declared returns the field's type as written: `string`, `int?`.
func (f Field) Declared() string {
	if f.Optional {
		return f.Type + "?"
	}
	return f.Type
}

// Field returns the declared field with that name.
func (s *Schema) Field(name string) (Field, bool) {
	if s == nil {
		return Field{}, false
	}
	for _, f := range s.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// names returns the declared field names, for suggestions.
func (s *Schema) names() []string {
	out := make([]string, 0, len(s.Fields))
	for _, f := range s.Fields {
		out = append(out, f.Name)
	}
	return out
}

// FieldError is data that breaks its declaration: a required field missing,
// or a field of another type.
type FieldError struct {
	// Field is the declared field's name.
	Field string
	// Reason says what is wrong: "is missing", "must be an int, got 2.5".
	Reason string
}

func (e *FieldError) Error() string { return "rules: field " + e.Field + " " + e.Reason }

// Check reports the first declared field, in declaration order, that data
// breaks; nil when data fits (a nil schema fits everything). It reads data
// without allocating when it fits.
func (s *Schema) Check(data map[string]any) *FieldError {
	if s == nil {
		return nil
	}
	for _, f := range s.Fields {
		v, ok := data[f.Name]
		if !ok || v == nil {
			if f.Optional {
				continue
			}
			if !ok {
				return &FieldError{Field: f.Name, Reason: "is missing"}
			}
		}
		if !fits(f.Type, v) {
			return &FieldError{Field: f.Name, Reason: "must be " + article(f.Type) + ", got " + describe(v)}
		}
	}
	return nil
}

// fits reports whether v, a JSON-like value or a Go value a handler
// returned, has type t.
func fits(t string, v any) bool {
	switch t {
	case TypeAny:
		return true
	case TypeString:
		_, ok := v.(string)
		return ok
	case TypeBool:
		_, ok := v.(bool)
		return ok
	case TypeNumber:
		_, ok := number(v)
		return ok
	case TypeInt:
		f, ok := number(v)
		return ok && f == math.Trunc(f) && !math.IsInf(f, 0)
	case TypeList:
		switch v.(type) {
		case []any:
			return true
		case nil, string, []byte:
			return false
		}
		k := reflect.Indirect(reflect.ValueOf(v)).Kind()
		return k == reflect.Slice || k == reflect.Array
	case TypeMap:
		switch v.(type) {
		case map[string]any:
			return true
		case nil:
			return false
		}
		rv := reflect.Indirect(reflect.ValueOf(v))
		return (rv.Kind() == reflect.Map && rv.Type().Key().Kind() == reflect.String) || rv.Kind() == reflect.Struct
	}
	return false
}

// number returns v as a float64 when it is a number of any Go kind.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x)
	case int:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case nil, string, bool:
		return 0, false
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(rv.Uint()), true
	case reflect.Float32, reflect.Float64:
		return rv.Float(), !math.IsNaN(rv.Float())
	}
	return 0, false
}

func article(t string) string {
	switch t {
	case TypeInt, TypeAny:
		return "an " + t
	}
	return "a " + t
}

// describe renders a value for an error message, short.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if utf8.RuneCountInString(x) > 40 {
			x = string([]rune(x)[:40]) + "..."
		}
		return "the string " + strconv.Quote(x)
	case bool:
		return strconv.FormatBool(x)
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	}
	if f, ok := number(v); ok {
		return "the number " + strconv.FormatFloat(f, 'g', -1, 64)
	}
	if fits(TypeList, v) {
		return "a list"
	}
	if fits(TypeMap, v) {
		return "a map"
	}
	return fmt.Sprintf("a %T", v)
}

// typeAliases are other languages' names for the declared types.
var typeAliases = map[string]string{
	"str": TypeString, "text": TypeString, "integer": TypeInt, "long": TypeInt, "float": TypeNumber,
	"double": TypeNumber, "decimal": TypeNumber, "boolean": TypeBool, "array": TypeList,
	"object": TypeMap, "dict": TypeMap, "mapping": TypeMap,
}

// declaration decodes an `input` or `result` declaration: a mapping of
// field names to type names. Null declares nothing.
func (l *loader) declaration(n *yaml.Node, what string) *Schema {
	if isNull(n) {
		return nil
	}
	fs, ok := l.mapping(n, what)
	if !ok {
		return nil
	}
	s := &Schema{Fields: []Field{}}
	for _, f := range fs.ordered {
		name := deref(f.key).Value
		if name == "" {
			l.errorf(f.key, "%s field names must not be empty", what)
			continue
		}
		t, ok := l.scalar(f.val, "the type of "+what+" field "+quote(name))
		if !ok {
			continue
		}
		base, optional := strings.CutSuffix(t, "?")
		if !slices.Contains(TypeNames, base) {
			hint := didYouMean(base, TypeNames)
			if alias, ok := typeAliases[strings.ToLower(base)]; ok && hint == "" {
				hint = ` (did you mean "` + alias + `"?)`
			}
			l.errorf(f.val, "unknown type %q of %s field %q%s: want %s, with a trailing ? for an optional field",
				t, what, name, hint, strings.Join(TypeNames, ", "))
			continue
		}
		s.Fields = append(s.Fields, Field{Name: name, Type: base, Optional: optional, Pos: posOf(f.key)})
	}
	return s
}
