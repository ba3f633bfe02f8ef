package puback

import (
	"errors"
	"reflect"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// answers are JetStream's answers to a publish, and forms they could take.
var answers = []string{
	`{"stream":"baton_steps_3","seq":42}`,
	`{"stream":"baton_steps_3","seq":42,"duplicate":true}`,
	`{"stream":"s","domain":"hub","seq":1}`,
	`{"stream":"BATON_WORK_a","seq":3,"val":"7"}`,
	`{"type":"io.nats.jetstream.api.v1.pub_ack","stream":"s","seq":2}`,
	`{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 5"},"stream":"s","seq":0}`,
	`{"error":{"code":503,"err_code":10077,"description":"maximum messages exceeded"}}`,
	`{"stream":"s","seq":-0}`, `{"stream":"s","seq":1.0}`, `{"stream":"s","seq":01}`, `{"seq":-1,"stream":"S"}`,
	`{"stream":"","seq":3}`, `{"Stream":"s","SEQ":3}`, `{"stream":"s","seq":3,"seq":4}`,
	`{"stream":"s\u00e9\ud800","seq":18446744073709551615}`, `{"stream":"s","seq":18446744073709551616}`,
	`{"stream":"s","seq":3,"batch":"b","count":2}`,
	`{"stream":"s","seq":3} `, `{"stream":"s","seq":3}x`, `{}`, `null`, ``, `[]`, `{"stream":`,
}

func TestDecode_MatchesEncodingJSON(t *testing.T) {
	for _, in := range answers {
		check(t, []byte(in))
	}
}

// FuzzDecode holds Decode equal to reading the answer with encoding/json,
// as jetstream's PublishMsg does, on every input.
func FuzzDecode(f *testing.F) {
	for _, in := range answers {
		f.Add([]byte(in))
	}
	f.Fuzz(check)
}

// check holds Decode to what jetstream's decoding gives for data: the
// same acknowledgement, or the same error.
func check(t *testing.T, data []byte) {
	got, gotErr := Decode(data)
	want, wantErr := decodeJSON(data)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: got %+v, want %+v", data, got, want)
	}
	if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
		t.Fatalf("%q: got error %v, want %v", data, gotErr, wantErr)
	}
	var gotAPI, wantAPI *jetstream.APIError
	if errors.As(gotErr, &gotAPI) != errors.As(wantErr, &wantAPI) || !reflect.DeepEqual(gotAPI, wantAPI) {
		t.Fatalf("%q: got API error %+v, want %+v", data, gotAPI, wantAPI)
	}
}

// TestDecode_ReadsTheUsualAnswerByHand: the answer the server sends for a
// write is read without encoding/json.
func TestDecode_ReadsTheUsualAnswerByHand(t *testing.T) {
	data := []byte(`{"stream":"baton_steps_3","seq":42,"duplicate":true}`)
	if n := testing.AllocsPerRun(100, func() { _, _ = Decode(data) }); n > 1 {
		t.Errorf("got %v allocations, want 1 (the acknowledgement)", n)
	}
}
