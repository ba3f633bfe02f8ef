// Package usagejson writes and reads a registry.Usage as encoding/json does
// for its struct tags (every field omitempty), without reflection: a work
// report (package wire) and a step of the NATS store (package natsstore)
// both carry one, on their hot paths.
package usagejson

import (
	"strconv"

	"github.com/batonhq/baton/internal/jsonv"
	"github.com/batonhq/baton/registry"
)

// fields are the JSON names of registry.Usage's fields, in Decode's order.
var fields = []string{"input_tokens", "output_tokens", "cost", "model"}

// Append writes u as a JSON object. ok is false when u has a cost with no
// JSON form (NaN or an infinity), as json.Marshal refuses it.
func Append(b []byte, u registry.Usage) (_ []byte, ok bool) {
	b = append(b, '{')
	n := len(b)
	if u.InputTokens != 0 {
		b = append(b, `,"input_tokens":`...)
		b = strconv.AppendInt(b, u.InputTokens, 10)
	}
	if u.OutputTokens != 0 {
		b = append(b, `,"output_tokens":`...)
		b = strconv.AppendInt(b, u.OutputTokens, 10)
	}
	if u.Cost != 0 {
		b = append(b, `,"cost":`...)
		if b, ok = jsonv.AppendFloat(b, u.Cost); !ok {
			return b, false
		}
	}
	if u.Model != "" {
		b = append(b, `,"model":`...)
		b = jsonv.AppendString(b, u.Model)
	}
	if len(b) > n {
		b = append(b[:n], b[n+1:]...) // the first field's comma
	}
	return append(b, '}'), true
}

// Decode reads a usage object from d, its known fields once each.
func Decode(d *jsonv.Decoder) registry.Usage {
	var u registry.Usage
	d.Fields(fields, func(i int) {
		switch i {
		case 0:
			u.InputTokens = d.Int()
		case 1:
			u.OutputTokens = d.Int()
		case 2:
			u.Cost = d.Float()
		case 3:
			u.Model = d.String()
		}
	})
	return u
}
