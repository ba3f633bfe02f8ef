package transport_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/batonhq/baton/transport"
)

// TestUnmarshal_TimestampOutsideTheWrittenYears refuses a timestamp whose
// offset moves it before the year 0000 or past 9999 in UTC, which the
// message, written again, could not be read back with; the edges are read.
func TestUnmarshal_TimestampOutsideTheWrittenYears(t *testing.T) {
	for ts, ok := range map[string]bool{
		"0000-01-01T00:00:00+01:00": false,
		"9999-12-31T23:30:00-01:00": false,
		"0000-01-01T00:00:00Z":      true,
		"0000-01-01T00:00:00-01:00": true,
		"9999-12-31T23:59:59Z":      true,
	} {
		var m transport.Message
		err := json.Unmarshal([]byte(`{"timestamp":"`+ts+`"}`), &m)
		var ve *transport.ValidationError
		if ok != (err == nil) || !ok && (!errors.As(err, &ve) || ve.Field != "timestamp") {
			t.Errorf("%s: got %v, want ok %v (else a ValidationError of the timestamp)", ts, err, ok)
			continue
		}
		if !ok {
			continue
		}
		data, err := json.Marshal(&m)
		if err != nil {
			t.Fatal(err)
		}
		var again transport.Message
		if err := json.Unmarshal(data, &again); err != nil || !again.Timestamp.Equal(m.Timestamp) {
			t.Errorf("%s: got %v, %v reading %s back, want the same time", ts, again.Timestamp, err, data)
		}
	}
}
