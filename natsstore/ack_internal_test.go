package natsstore

import (
	"errors"
	"reflect"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// FuzzDecodeAck holds decodeAck equal to reading the answer with
// encoding/json, as jetstream's PublishMsg does, on every input.
func FuzzDecodeAck(f *testing.F) {
	for _, s := range []string{
		`{"stream":"baton_steps_3","seq":42}`,
		`{"stream":"baton_steps_3","seq":42,"duplicate":true}`,
		`{"stream":"s","domain":"hub","seq":1}`,
		`{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 5"},"stream":"s","seq":0}`,
		`{"stream":"s","seq":-0}`, `{"stream":"s","seq":1.0}`, `{"stream":"s","seq":01}`,
		`{"stream":"","seq":3}`, `{"Stream":"s","seq":3}`, `{"stream":"s","seq":3,"seq":4}`,
		`{"stream":"s\u00e9\ud800","seq":18446744073709551615}`, `{"stream":"s","seq":18446744073709551616}`,
		`{"stream":"s","seq":3,"batch":"b","count":2}`, `{"type":"io.nats.jetstream.api.v1.pub_ack","stream":"s","seq":2}`,
		`{"stream":"s","seq":3} `, `{"stream":"s","seq":3}x`, `null`, ``, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, gotErr := decodeAck(data)
		want, wantErr := decodeAckJSON(data)
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
	})
}

// TestDecodeAck_ReadsTheUsualAnswerByHand: the answers the server sends
// for a write are read without encoding/json, and an error answer is
// the *jetstream.APIError that PublishMsg returns.
func TestDecodeAck_ReadsTheUsualAnswerByHand(t *testing.T) {
	data := []byte(`{"stream":"baton_steps_3","seq":42,"duplicate":true}`)
	if n := testing.AllocsPerRun(100, func() { _, _ = decodeAck(data) }); n > 1 {
		t.Errorf("got %v allocations, want 1 (the acknowledgement)", n)
	}
	_, err := decodeAck([]byte(`{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 5"},"stream":"s","seq":0}`))
	if !isWrongLastSeq(err) {
		t.Fatalf("got %v, want the wrong last sequence API error", err)
	}
}
