package natsbus

import (
	"encoding/json"
	"testing"
)

// streamInfos are JetStream's answers about a stream, and forms they could
// take.
var streamInfos = []string{
	`{"type":"io.nats.jetstream.api.v1.stream_info_response","total":0,"offset":0,"limit":0,"config":{"name":"BATON_WORK_a","description":"Baton work of agent a","subjects":["baton.work.a.*"],"retention":"workqueue","max_consumers":-1,"max_msgs":1000,"max_bytes":-1,"max_age":0,"max_msgs_per_subject":-1,"max_msg_size":-1,"discard":"new","storage":"memory","num_replicas":1,"duplicate_window":600000000000,"compression":"none","allow_direct":false,"mirror_direct":false,"sealed":false,"deny_delete":false,"deny_purge":false,"allow_rollup_hdrs":false,"consumer_limits":{}},"created":"2026-11-27T16:00:00.000000001Z","state":{"messages":12,"bytes":14400,"first_seq":3,"first_ts":"2026-11-27T16:00:01Z","last_seq":14,"last_ts":"2026-11-27T16:00:02Z","num_subjects":2,"consumer_count":4},"cluster":{"leader":"NDX"},"ts":"2026-11-27T16:00:03Z"}`,
	`{"state":{"messages":0}}`,
	`{"state":{"messages":3},"state":{"bytes":1}}`,
	`{"state":{"Messages":3}}`,
	`{"State":{"messages":3}}`,
	`{"state":{"messages":-1}}`,
	`{"state":{"messages":1.5}}`,
	`{"state":null}`,
	`{"config":{"description":"a \"quoted\" \u00e9 name"},"state":{"messages":7}}`,
	`{"error":{"code":404,"err_code":10059,"description":"stream not found"}}`,
	`{"config":{}}`, `{}`, `[]`, ``, `{"state":{"messages":3}} x`,
}

func TestHeldFast_MatchesEncodingJSON(t *testing.T) {
	for _, in := range streamInfos {
		checkHeld(t, []byte(in))
	}
	// The server's usual answer is read directly.
	if n, ok := heldFast([]byte(streamInfos[0])); !ok || n != 12 {
		t.Errorf("got %d, %v, want 12, true", n, ok)
	}
}

func FuzzHeldFast(f *testing.F) {
	for _, in := range streamInfos {
		f.Add([]byte(in))
	}
	f.Fuzz(checkHeld)
}

// checkHeld holds heldFast to json.Unmarshal: where it reads a count, the
// answer decodes without error to the same count.
func checkHeld(t *testing.T, data []byte) {
	n, ok := heldFast(data)
	if !ok {
		return
	}
	var info streamHeld
	if err := json.Unmarshal(data, &info); err != nil || info.Error != nil || info.State.Msgs != n {
		t.Fatalf("%s: got %d, want encoding/json's %d (%v, %v)", data, n, info.State.Msgs, err, info.Error)
	}
}
