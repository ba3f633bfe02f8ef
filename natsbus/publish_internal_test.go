package natsbus

import (
	"errors"
	"reflect"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// pubAcks are JetStream's answers to a publish, and forms they could take.
var pubAcks = []string{
	`{"stream":"BATON_WORK_a","seq":12}`,
	`{"stream":"BATON_WORK_a","seq":12,"duplicate":true}`,
	`{"stream":"BATON_WORK_a","domain":"hub","seq":1}`,
	`{"stream":"BATON_WORK_a","seq":3,"val":"7"}`,
	`{"type":"io.nats.jetstream.api.v1.pub_ack","stream":"S","seq":3}`,
	`{"error":{"code":503,"err_code":10077,"description":"maximum messages exceeded"},"stream":"BATON_WORK_a","seq":0}`,
	`{"error":{"code":503,"err_code":10077,"description":"maximum messages exceeded"}}`,
	`{"Stream":"S","SEQ":4}`,
	`{"stream":"S","seq":4,"seq":5}`,
	`{"stream":"S\u0041","seq":4}`,
	`{"stream":"","seq":4}`,
	`{"seq":-1,"stream":"S"}`,
	`{"seq":18446744073709551615,"stream":"S"}`,
	`{"stream":"S","seq":1.5}`,
	`{"stream":"S","seq":4} x`,
	`{}`, `null`, `[]`, ``, `{"stream":`,
}

func TestDecodePubAck_MatchesEncodingJSON(t *testing.T) {
	for _, in := range pubAcks {
		checkPubAck(t, []byte(in))
	}
}

func FuzzDecodePubAck(f *testing.F) {
	for _, in := range pubAcks {
		f.Add([]byte(in))
	}
	f.Fuzz(checkPubAck)
}

// checkPubAck holds decodePubAck to what jetstream's decoding gives for
// data: the same acknowledgement, or the same error.
func checkPubAck(t *testing.T, data []byte) {
	got, gerr := decodePubAck(data)
	want, werr := decodePubAckReflect(data)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: got %+v, want %+v", data, got, want)
	}
	if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
		t.Fatalf("%s: got error %v, want %v", data, gerr, werr)
	}
	var api *jetstream.APIError
	if errors.As(werr, &api) && !errors.As(gerr, &api) {
		t.Fatalf("%s: got error %v, want a *jetstream.APIError", data, gerr)
	}
}
