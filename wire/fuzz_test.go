package wire_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/transport"
	"github.com/batonhq/baton/wire"
)

// checkInvalid fails unless err is a *wire.FieldError naming a field and
// matching wire.ErrInvalid.
func checkInvalid(t *testing.T, err error) {
	t.Helper()
	var fe *wire.FieldError
	if !errors.As(err, &fe) || fe.Field == "" || !errors.Is(err, wire.ErrInvalid) {
		t.Fatalf("got %T %v, want a *wire.FieldError naming a field and matching ErrInvalid", err, err)
	}
}

// FuzzDecode reads arbitrary bytes as a bus message's JSON and decodes the
// work in it: Decode must never panic, must refuse with a *FieldError, and
// a task it returns must come back equal from Encode, through JSON and in
// process.
func FuzzDecode(f *testing.F) {
	for _, task := range roundTripTasks() {
		data, err := json.Marshal(wire.Encode(task.task))
		if err != nil {
			f.Fatalf("json.Marshal: %v", err)
		}
		f.Add(data)
	}
	// More seeds, among them the inputs of fixed bugs, are in
	// testdata/fuzz/FuzzDecode.
	for _, seed := range []string{
		`{"message_type":"HANDOFF","from_agent":"engine","to_agent":"seller","content":{"action":"run"},"metadata":{"instance_id":"i","step":1}}`,
		`{"message_type":"HANDOFF","from_agent":"a","to_agent":"b","priority":"URGENT","content":{"action":"notice","item":null,"index":0,"return_control":false,"payload":null},"metadata":{"instance_id":"i","step":2,"heartbeat":0.5,"deadline":"2026-11-24T07:00:00+01:00","handoff_id":"h"}}`,
		`{"message_type":"HANDOFF","content":{"action":"run","context":[]},"metadata":{"instance_id":"i","step":1.5}}`,
		`{"message_type":"REQUEST","content":{"action":"run"}}`,
		`{}`, `null`, `[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m transport.Message
		if err := json.Unmarshal(data, &m); err != nil {
			return
		}
		task, err := wire.Decode(&m)
		if err != nil {
			checkInvalid(t, err)
			return
		}
		if task.InstanceID == "" || task.Step < 1 || task.Heartbeat < 0 {
			t.Fatalf("got instance %q, step %d, heartbeat %v, want an id, a step from 1 and no negative heartbeat",
				task.InstanceID, task.Step, task.Heartbeat)
		}
		enc, err := json.Marshal(wire.Encode(task))
		if err != nil {
			t.Fatalf("got %v encoding a decoded task, want success", err)
		}
		var again transport.Message
		if err := json.Unmarshal(enc, &again); err != nil {
			t.Fatalf("got %v reading %s, want success", err, enc)
		}
		for name, m := range map[string]*transport.Message{"through JSON": &again, "in process": wire.Encode(task)} {
			back, err := wire.Decode(m)
			if err != nil {
				t.Fatalf("%s: got %v decoding %s, want the task back", name, err, enc)
			}
			for _, d := range taskDiff(back, task) {
				t.Errorf("%s: %s", name, d)
			}
		}
	})
}

// normalReport is r as it reads back from its JSON: omitempty drops an
// empty result or payload.
func normalReport(r wire.Report) wire.Report {
	if len(r.Result) == 0 {
		r.Result = nil
	}
	if r.Handoff != nil && len(r.Handoff.Payload) == 0 {
		h := *r.Handoff
		h.Payload = nil
		r.Handoff = &h
	}
	if r.Progress != nil && len(r.Progress.Data) == 0 {
		p := *r.Progress
		p.Data = nil
		r.Progress = &p
	}
	return r
}

// FuzzDecodeReport decodes arbitrary bytes as a report: DecodeReport must
// never panic, must refuse with a *FieldError, must refuse bad usage and
// progress beside an outcome, and a report it returns must read back equal
// from its JSON and from ReportOf(Outcome()).
func FuzzDecodeReport(f *testing.F) {
	// More seeds, among them the inputs of fixed bugs, are in
	// testdata/fuzz/FuzzDecodeReport.
	for _, seed := range []string{
		`{` + id + `,"trigger":"reviewed","result":{"approval":"APPROVED","n":[1,2.5,null,true,{}]}}`,
		`{` + id + `,"error":{"message":"rate limited","retryable":true,"kind":"rate_limited"}}`,
		`{` + id + `,"reject":"queue busy"}`,
		`{` + id + `,"reject":""}`,
		`{` + id + `,"handoff":{"to":"rag","reason":"capability_match","task":"t","payload":{},"return_control":true}}`,
		`{` + id + `,"result":{},"handoff":{"to":"rag","explanation":"why"}}`,
		`{` + id + `,"heartbeat":true}`,
		`{"instance_id":"i","step":"3","agent":"a","trigger":"t"}`,
		`{"INSTANCE_ID":"i","Step":1,"agent":"a","trigger":"\ud800"}`,
		`{` + id + `,"trigger":"done","usage":{"input_tokens":1200,"output_tokens":350,"cost":0.0123,"model":"m-1"}}`,
		`{` + id + `,"error":{"message":"x"},"usage":{"cost":1e-300}}`,
		`{` + id + `,"reject":"busy","usage":{}}`,
		`{` + id + `,"trigger":"done","usage":{"input_tokens":-1}}`,
		`{` + id + `,"trigger":"done","usage":{"cost":1e400}}`,
		`{` + id + `,"trigger":"done","usage":{"output_tokens":9223372036854775807}}`,
		`{` + id + `,"progress":{"message":"searching","delta":"par","data":{"k":[1]}}}`,
		`{` + id + `,"progress":{}}`,
		`{` + id + `,"progress":{"message":"m"},"trigger":"done"}`,
		`{` + id + `,"progress":{"message":"m"},"usage":{"cost":1}}`,
		`{` + id + `,"trigger":"a\u00e9\ud83d\ude00\"<>&","result":{"k":1,"k":{"z":[1e21,1e-7,-0]}}} `,
		`{` + id + `,"trigger":"t","trigger":"u"}`,
		`{` + id + `,"error":{"message":"m","message":"n"}}`,
		`{` + id + `,"trigger":"t","result":null}`,
		`{` + id + `,"trigger":"t","usage":{"cost":-0,"input_tokens":1.0}}`,
		`{` + id + `,"handoff":{"to":"x","payload":{"a":"\u2028"},"return_control":false,"reason":"","task":"t"}}`,
		`{` + id + `,"progress":{"delta":"d","data":{}}}`,
		`{"ok":true,"code":"stale","message":"m"}`, `{"ok":false}`, `{"OK":true}`, `{"ok":1}`,
		`null`, `[]`, `{`, "\xff",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := wire.DecodeReport(data)
		viaJSON, jerr := wire.DecodeReportReflect(data)
		if (err == nil) != (jerr == nil) || err != nil && err.Error() != jerr.Error() || !reflect.DeepEqual(r, viaJSON) {
			t.Fatalf("got %s, %v decoding %q, want encoding/json's %s, %v", asJSON(r), err, data, asJSON(viaJSON), jerr)
		}
		ans, aerr := wire.DecodeAnswer(data)
		var wantAns wire.Answer
		waerr := json.Unmarshal(data, &wantAns)
		if (aerr == nil) != (waerr == nil) || aerr != nil && aerr.Error() != waerr.Error() || ans != wantAns {
			t.Fatalf("got answer %+v, %v decoding %q, want encoding/json's %+v, %v", ans, aerr, data, wantAns, waerr)
		}
		if aerr == nil && string(wire.EncodeAnswer(ans)) != string(mustMarshal(t, ans)) {
			t.Fatalf("got %s encoding %+v, want encoding/json's %s", wire.EncodeAnswer(ans), ans, mustMarshal(t, ans))
		}
		if err != nil {
			checkInvalid(t, err)
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("got %v validating a decoded report, want nil", err)
		}
		if !json.Valid(data) {
			t.Fatalf("got report %s from %q, which is not one JSON value", asJSON(r), data)
		}
		if r.Heartbeat && r.Result != nil {
			t.Fatalf("got a heartbeat with result %v, want it refused", r.Result)
		}
		if r.Usage.Validate() != nil {
			t.Fatalf("got usage %+v, want negative or non-finite usage refused", r.Usage)
		}
		if r.Progress != nil && (r.Trigger != "" || r.Error != nil || r.Reject != nil || r.Handoff != nil || r.Heartbeat) {
			t.Fatalf("got progress beside an outcome in %s, want it refused", asJSON(r))
		}
		enc, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("got %v encoding a decoded report, want success", err)
		}
		if direct, err := wire.EncodeReport(&r); err != nil || string(direct) != string(enc) {
			t.Fatalf("got %s, %v from EncodeReport, want encoding/json's %s", direct, err, enc)
		}
		again, err := wire.DecodeReport(enc)
		if err != nil {
			t.Fatalf("got %v decoding %s, want the report back", err, enc)
		}
		if want := normalReport(r); !reflect.DeepEqual(again, want) {
			t.Fatalf("got %s after a JSON round trip, want %s", asJSON(again), asJSON(want))
		}
		if r.Heartbeat || r.Progress != nil {
			return
		}
		out, runErr := r.Outcome()
		// Ending of a report DecodeReport took reads the same outcome, or
		// refuses data JSON can carry but a store cannot keep (nested too
		// deep), naming it.
		if eout, erunErr, err := r.Ending(); err != nil {
			var fe *wire.FieldError
			if !errors.As(err, &fe) || !strings.HasPrefix(fe.Field, "result") && !strings.HasPrefix(fe.Field, "handoff.payload") {
				t.Fatalf("got %v from Ending of a decoded report, want only its data refused", err)
			}
		} else if !reflect.DeepEqual(eout, out) || fmt.Sprint(erunErr) != fmt.Sprint(runErr) {
			t.Fatalf("got %s, %v from Ending, want Outcome's %s, %v", asJSON(eout), erunErr, asJSON(out), runErr)
		}
		back := wire.ReportOf(&registry.Task{InstanceID: r.InstanceID, Step: r.Step, Agent: r.Agent}, out, runErr)
		want := r
		if want.Error != nil && want.Error.Kind == "error" {
			e := *want.Error
			e.Kind = "" // the default kind, which ReportOf leaves out
			want.Error = &e
		}
		if !reflect.DeepEqual(back, want) {
			t.Fatalf("got %s from ReportOf(Outcome()), want %s", asJSON(back), asJSON(want))
		}
	})
}

// mustMarshal is json.Marshal that fails the test on an error.
func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// workJSON is the JSON of task's work as a transport with acks sends it:
// an id, a timestamp and the ack wait filled in.
func workJSON(tb testing.TB, task *registry.Task) []byte {
	tb.Helper()
	m := wire.Encode(task)
	m.Fill(time.Unix(1_800_000_000, 5), func() string { return "0193f1c2-bbbb-7bbb-8ccc-123456789abc" })
	m.Metadata[wire.KeyAckWait] = 30.0
	data, err := m.MarshalJSON()
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// FuzzDecodeWork holds DecodeWork equal to UnmarshalJSON and then Decode
// on every input it takes: the same message (less its content and
// metadata) and the same task; what it leaves, they read.
func FuzzDecodeWork(f *testing.F) {
	for _, task := range roundTripTasks() {
		f.Add(workJSON(f, task.task))
	}
	for _, seed := range []string{
		`{"message_id":"m","message_type":"HANDOFF","from_agent":"engine","to_agent":"seller","priority":"NORMAL","content":{"action":"run"},"metadata":{"instance_id":"i","step":1},"timestamp":"2026-11-24T07:00:00Z"}`,
		`{"message_id":"m","message_type":"HANDOFF","from_agent":"a","to_agent":"b","priority":"HIGH","content":{"action":"notice","item":null,"index":0,"return_control":false,"payload":null},"metadata":{"instance_id":"i","step":2,"heartbeat":0.5,"deadline":"2026-11-24T07:00:00+01:00","handoff_id":"h"},"timestamp":"2026-11-24T07:00:00Z"}`,
		`{"message_id":"m","message_type":"HANDOFF","from_agent":"a","to_agent":"b","priority":"LOW","content":{"action":"run","item":"x","index":2.0,"task_description":null,"input":null},"metadata":{"instance_id":"i","step":1.0,"attempt":null,"version":3,"ack_wait":1e1},"ttl":60,"requires_ack":true,"timestamp":"2026-11-24T07:00:00Z"}`,
		`{"message_id":"m","message_type":"HANDOFF","from_agent":"a","to_agent":"b","priority":"LOW","content":{"action":"run","action":"run"},"metadata":{"instance_id":"i","step":1},"timestamp":""}`,
		`{"message_id":"m","message_type":"HANDOFF","from_agent":"a","to_agent":"b","priority":"LOW","content":{"action":"run","return_control":"yes"},"metadata":{"instance_id":"i","step":1,"state":7},"timestamp":""}`,
		`{"message_id":"m","message_type":"HANDOFF","from_agent":"a","to_agent":"b","priority":"LOW","content":{"action":"run","context":[]},"metadata":{"instance_id":"i","step":1.5,"extra":1},"timestamp":""}`,
		`{"message_id":"m","message_type":"HANDOFF","from_agent":"a","to_agent":"b","priority":"LOW","content":{"action":"run"},"metadata":{"instance_id":"","step":1},"timestamp":""}`,
		`{"message_id":"m","message_type":"REQUEST","content":{"action":"run"},"metadata":{"instance_id":"i","step":1}}`,
		`{}`, `null`, `[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, task, ok := wire.DecodeWork(data)
		if !ok {
			return
		}
		var want transport.Message
		if err := want.UnmarshalJSON(data); err != nil {
			t.Fatalf("DecodeWork took %q, which UnmarshalJSON refuses: %v", data, err)
		}
		wantTask, err := wire.Decode(&want)
		if err != nil {
			t.Fatalf("DecodeWork took %q, whose work Decode refuses: %v", data, err)
		}
		if m.Content != nil || m.Metadata != nil {
			t.Fatalf("got content %v and metadata %v, want neither", m.Content, m.Metadata)
		}
		m.Content, m.Metadata = want.Content, want.Metadata
		if !reflect.DeepEqual(*m, want) {
			t.Fatalf("got message %+v from %q, want %+v", *m, data, want)
		}
		if !reflect.DeepEqual(task, wantTask) {
			t.Fatalf("got task %s from %q, want %s", asJSON(task), data, asJSON(wantTask))
		}
	})
}

// TestDecodeWork_TakesWhatTransportsWrite holds the work the engine sends
// on DecodeWork's direct path.
func TestDecodeWork_TakesWhatTransportsWrite(t *testing.T) {
	for _, task := range roundTripTasks() {
		if _, _, ok := wire.DecodeWork(workJSON(t, task.task)); !ok {
			t.Errorf("%s: DecodeWork left the work to Decode, want it read directly", task.name)
		}
	}
}
