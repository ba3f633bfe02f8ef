package transport_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/batonhq/baton/transport"
)

// FuzzMessageJSON decodes and validates arbitrary bytes: it must never
// panic, its direct decoder and encoder must give what encoding/json gives
// (the same message or the same error; the same bytes), every refusal of a
// decoded message must be a *ValidationError, and a message that decodes
// must survive an encode/decode round trip unchanged.
func FuzzMessageJSON(f *testing.F) {
	for _, seed := range []string{
		`{"message_id":"m1","message_type":"REQUEST","from_agent":"a","to_agent":"b","priority":"HIGH","content":{"action":"x"},"ttl":60,"timestamp":"2025-11-16T10:00:00Z"}`,
		`{"message_type":"RESPONSE","from_agent":"a","to_agent":"b","content":{"action":"x"},"in_reply_to":"m1","correlation_id":"cor_123"}`,
		`{"message_type":"HANDOFF","from_agent":"a","to_agent":"topic:orders","priority":"urgent","content":{"action":"execute_handoff","context":{"k":[1,2,{"z":null}]}},"ttl":"90s","requires_ack":true,"sequence":7}`,
		`{"ttl":1.000000001,"timestamp":"2025-11-16T10:00:00+02:00","metadata":{"workflow_id":"wf"}}`,
		`{"ttl":-9.223372036854775808e9}`,
		`{"priority":3}`,
		`{"content":{"action":5}}`,
		`{"ttl":1e400}`,
		`{"message_type":"HANDOFF","from_agent":"a","to_agent":"b","content":{"action":"x"},"requires_ack":true,"ack_timeout":"2.5s","delivery_count":2,"idempotency_key":"wf:3"}`,
		`{"ack_timeout":-1,"delivery_count":-3}`,
		`{"message_id":"a\u00e9\ud83d\ude00\n\"<>&\u2028","Message_ID":"b","content":{"k":1,"k":[true,false,null,-0.5e-7,1e21]},"metadata":{}}`,
		`{"message_id":"\ud800","content":null,"ttl":null,"sequence":1.0,"delivery_count":9223372036854775808}`,
		`{"content":{"a":{"b":{}}},"metadata":{"x":"y"},"ttl":"1m","ack_timeout":0.5,"requires_ack":false,"timestamp":"2025-11-16T10:00:00.5Z"} `,
		`{"content":{},"content":{"b":2}}`, `{"to_agent":"a"}x`, `{"priority":"bogus"}`, `{"ttl":{}}`,
		`[]`, `null`, `{`, `"x"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var direct, reflected transport.Message
		derr, rerr := direct.UnmarshalJSON(data), transport.UnmarshalReflect(&reflected, data)
		if (derr == nil) != (rerr == nil) || derr != nil && derr.Error() != rerr.Error() {
			t.Fatalf("got error %v decoding %q, want encoding/json's %v", derr, data, rerr)
		}
		if !reflect.DeepEqual(direct, reflected) {
			t.Fatalf("got %+v decoding %q, want encoding/json's %+v", direct, data, reflected)
		}
		var m transport.Message
		if err := json.Unmarshal(data, &m); err != nil {
			return
		}
		denc, derr := m.MarshalJSON()
		renc, rerr := transport.MarshalReflect(m)
		if (derr == nil) != (rerr == nil) || derr != nil && derr.Error() != rerr.Error() || string(denc) != string(renc) {
			t.Fatalf("got %s, %v encoding %+v, want encoding/json's %s, %v", denc, derr, m, renc, rerr)
		}
		if err := m.Validate(); err != nil {
			var ve *transport.ValidationError
			if !errors.As(err, &ve) || ve.Field == "" {
				t.Fatalf("got %v, want a *ValidationError naming a field", err)
			}
		}
		enc, err := json.Marshal(&m)
		if err != nil {
			if m.Priority.Valid() {
				t.Fatalf("got %v encoding a decoded message, want success", err)
			}
			return
		}
		var again transport.Message
		if err := json.Unmarshal(enc, &again); err != nil {
			t.Fatalf("got %v decoding %s, want success", err, enc)
		}
		if !reflect.DeepEqual(m, again) {
			t.Fatalf("got %+v after a round trip, want %+v", again, m)
		}
	})
}
