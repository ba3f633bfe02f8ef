package replay_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/batonhq/baton/replay"
)

// FuzzReadHistory reads arbitrary bytes as a history: an error or entries,
// never a panic; a line error names a line that exists.
func FuzzReadHistory(f *testing.F) {
	f.Add([]byte(`{"seq":1,"kind":"started","result":{"amount":50}}` + "\n" + `{"kind":"verdict","passed":true}` + "\n"))
	f.Add([]byte(`[{"seq":1,"kind":"started"},{"seq":2,"kind":"transition","from":"A","next":"B"}]`))
	f.Add([]byte("{\"seq\":1,\"kind\":\"outcome\",\"delay\":\"1s\"}\n{broken"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := replay.ReadHistory(bytes.NewReader(data))
		if err != nil {
			var le *replay.LineError
			if errors.As(err, &le) && (le.Line < 1 || le.Line > bytes.Count(data, []byte("\n"))+1) {
				t.Fatalf("got line %d of %d lines", le.Line, bytes.Count(data, []byte("\n"))+1)
			}
			return
		}
		// What was read encodes again: it is a history a tool can export.
		if _, err := json.Marshal(entries); err != nil {
			t.Fatalf("got entries that do not encode: %v", err)
		}
	})
}
