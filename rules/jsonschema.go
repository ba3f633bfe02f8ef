package rules

// JSONSchema returns the declaration as a JSON Schema object: every
// declared field is a property, listed in required (an optional field
// also admits null), and no other property is allowed, the shape strict
// structured outputs of a model ask for. A nil *Schema, which declares
// nothing, is any object.
func (s *Schema) JSONSchema() map[string]any {
	if s == nil {
		return map[string]any{"type": "object"}
	}
	props := make(map[string]any, len(s.Fields))
	required := make([]any, 0, len(s.Fields))
	for _, f := range s.Fields {
		props[f.Name] = f.JSONSchema()
		required = append(required, f.Name)
	}
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

// jsonTypes are the JSON Schema types of the declared types; any has none.
var jsonTypes = map[string]string{
	TypeString: "string", TypeNumber: "number", TypeInt: "integer", TypeBool: "boolean", TypeList: "array", TypeMap: "object",
}

// JSONSchema returns the JSON Schema of the field's value: its type (an
// optional field also admits null); a field of type any is any value.
func (f Field) JSONSchema() map[string]any {
	t, ok := jsonTypes[f.Type]
	if !ok {
		return map[string]any{}
	}
	out := map[string]any{"type": t}
	if f.Optional {
		out["type"] = []any{t, "null"}
	}
	if f.Type == TypeList {
		out["items"] = map[string]any{}
	}
	return out
}
