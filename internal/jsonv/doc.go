// Package jsonv writes and reads JSON as encoding/json does, without
// reflection, for the messages on Baton's hot paths (a work message, a
// report): Append writes what json.Marshal writes for the plain values
// decoded JSON holds (maps, slices, strings, numbers, booleans), and a
// Decoder reads a document into such values the way json.Unmarshal does.
//
// The Decoder is a fast path, not a second JSON implementation: it takes
// only the regular forms (exact keys, no duplicates, strings of valid
// UTF-8) and gives up on anything else, after which the caller decodes
// the same bytes with encoding/json, which then decides, and words its
// errors, as it always did. Fuzz tests of the callers hold the two equal.
package jsonv
