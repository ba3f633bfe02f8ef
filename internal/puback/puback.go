// Package puback reads JetStream's answer to a publish as jetstream's
// PublishMsg does, without reflection for the usual answer: natsbus (each
// work sent) and natsstore (each commit) read one per write, and
// encoding/json's decoding of it was a measurable part of both.
package puback

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/internal/jsonv"
)

// answer is a publish's answer as jetstream decodes it: an
// acknowledgement or an error.
type answer struct {
	Error *jetstream.APIError `json:"error,omitempty"`
	*jetstream.PubAck
}

// fields are the keys of an acknowledgement without an error.
var fields = []string{"stream", "seq", "duplicate", "domain"}

// Decode reads a publish's answer: the acknowledgement, the server's
// refusal as PublishMsg words it ("nats: " wrapping the
// *jetstream.APIError), or jetstream.ErrInvalidJSAck. An answer of the
// usual keys only, each once, is read by hand; any other goes through
// encoding/json (FuzzDecode holds the two equal).
func Decode(data []byte) (*jetstream.PubAck, error) {
	ack := &jetstream.PubAck{}
	d := jsonv.NewDecoder(data)
	d.Fields(fields, func(i int) {
		switch i {
		case 0:
			ack.Stream = d.String()
		case 1:
			n, err := strconv.ParseUint(string(d.Raw()), 10, 64)
			if err != nil {
				d.Fail()
			}
			ack.Sequence = n
		case 2:
			ack.Duplicate = d.Bool()
		case 3:
			ack.Domain = d.String()
		}
	})
	d.End()
	if d.OK() && ack.Stream != "" {
		return ack, nil
	}
	return decodeJSON(data)
}

// decodeJSON is Decode through encoding/json alone, as PublishMsg reads
// an answer.
func decodeJSON(data []byte) (*jetstream.PubAck, error) {
	var a answer
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, jetstream.ErrInvalidJSAck
	}
	if a.Error != nil {
		return nil, fmt.Errorf("nats: %w", a.Error)
	}
	if a.PubAck == nil || a.PubAck.Stream == "" {
		return nil, jetstream.ErrInvalidJSAck
	}
	return a.PubAck, nil
}
