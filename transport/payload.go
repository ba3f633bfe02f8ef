package transport

import "github.com/batonhq/baton/internal/jsonvalue"

// maxPayloadDepth bounds the nesting of a message's content and metadata;
// deeper values (or cycles) are refused rather than followed. It leaves
// room above the engine's own bound on data (jsonvalue.MaxDepth), which
// work nests a level or two deeper.
const maxPayloadDepth = 256

// validatePayload refuses content and metadata that cannot be encoded as
// JSON or whose combined size passes MaxPayloadBytes, with one walk of
// each by the repository's one JSON walker (a second, exact one only for a
// payload near the limit).
func validatePayload(content, metadata map[string]any) error {
	n, err := jsonvalue.Measure(content, MaxPayloadBytes, maxPayloadDepth)
	if err != nil {
		return &ValidationError{Field: "content" + err.Field, Reason: err.Reason}
	}
	if metadata == nil {
		if n > MaxPayloadBytes {
			return &ValidationError{Field: "content", Reason: "exceeds the 1 MiB payload limit"}
		}
		return nil
	}
	k, err := jsonvalue.Measure(metadata, MaxPayloadBytes, maxPayloadDepth)
	if err != nil {
		return &ValidationError{Field: "metadata" + err.Field, Reason: err.Reason}
	}
	if n+k > MaxPayloadBytes {
		// Two bounds may add up past the limit where the sizes do not.
		n, k = jsonvalue.Size(content), jsonvalue.Size(metadata)
	}
	if n+k > MaxPayloadBytes {
		return &ValidationError{Field: "content", Reason: "exceeds the 1 MiB payload limit"}
	}
	return nil
}
