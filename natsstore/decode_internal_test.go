package natsstore

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/record"
)

// requireAsUnmarshal checks that decodeStepDirect reads data as
// json.Unmarshal reads it into a stepRecord, or leaves it to it, and
// reports which.
func requireAsUnmarshal(t *testing.T, data []byte) bool {
	t.Helper()
	got, ok := decodeStepDirect(data)
	if !ok {
		return false
	}
	var want stepRecord
	require.NoError(t, json.Unmarshal(data, &want), "decodeStepDirect read what json.Unmarshal refuses: %s", data)
	require.Equal(t, want, got, "%s", data)
	return true
}

func TestDecodeStepDirect_ReadsWhatAppendStepWrites(t *testing.T) {
	snap, entries, outbox := fullStep()
	for name, data := range map[string][]byte{
		"every field": must(appendStep(nil, snap, entries, outbox)),
		"no entries":  must(appendStep(nil, snap, nil, outbox)),
		"empty":       must(appendStep(nil, record.Snapshot{}, nil, nil)),
	} {
		require.True(t, requireAsUnmarshal(t, data), name)
	}
	// Local times read back in time.Local, as json.Unmarshal reads them.
	snap.Created = time.Date(2026, 1, 2, 3, 4, 5, 6, time.Local)
	require.True(t, requireAsUnmarshal(t, must(appendStep(nil, snap, nil, nil))), "a local time")
}

func TestDecodeStepDirect_LeavesTheRestToUnmarshal(t *testing.T) {
	for _, data := range []string{
		`{"format":1,"format":1}`,
		`{"Format":1}`,
		`{"format":1,"other":2}`,
		`{"format":1,"snapshot":{"id":"i","created":null}}`,
		`{"format":1,"snapshot":{"id":"i","created":"2026-01-01T00:00:00\u005a"}}`,
		`{"format":1,"snapshot":{"id":"i","step":1.5}}`,
		`{"format":1,"snapshot":{"id":"i","state":null}}`,
		`{"format":1,"snapshot":{"id":"\xff"}}`,
		`{"format":1,"entries":null}`,
		`{"format":1,"entries":[{"seq":1,"result":null}]}`,
		`{"format":1,"snapshot":{"usage":{"agents":{"b":{},"a":{}}}}}`,
		`{"format":1} x`,
	} {
		require.False(t, requireAsUnmarshal(t, []byte(data)), data)
	}
}

func must(b []byte, ok bool) []byte {
	if !ok {
		panic("appendStep left the step to json.Marshal")
	}
	return b
}

// FuzzDecodeStepDirect holds decodeStepDirect equal to json.Unmarshal on
// any bytes it takes.
func FuzzDecodeStepDirect(f *testing.F) {
	snap, entries, outbox := fullStep()
	f.Add(must(appendStep(nil, snap, entries, outbox)))
	f.Add(must(appendStep(nil, record.Snapshot{}, nil, nil)))
	f.Add([]byte(`{"format":1,"snapshot":{"id":"i","visits":{"A":1,"A":2}},"entries":[{"seq":1,"kind":"started","delay":-5}],"outbox":[{"key":"k","payload":{"x":[1,{"y":null}]}}]}`))
	f.Add([]byte(`{"snapshot":{"usage":{"agents":{"a":{"cost":1e308},"b":{"tokens":-1}},"visit":{"cost":-0}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		requireAsUnmarshal(t, data)
	})
}

// BenchmarkDecodeStep decodes a typical step with json.Unmarshal
// (reflection) and with decodeStep.
func BenchmarkDecodeStep(b *testing.B) {
	snap, entries, outbox := typicalStep()
	data := must(appendStep(nil, snap, entries, outbox))
	b.Run("unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r stepRecord
			if err := json.Unmarshal(data, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeStep(snap.ID, data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestDecodeSnapshotOf_ReadsDecodeStepsSnapshot: the snapshot alone, as
// decodeStep reads it, from what appendStep writes; the id and the format
// checked as decodeStep checks them.
func TestDecodeSnapshotOf_ReadsDecodeStepsSnapshot(t *testing.T) {
	snap, entries, outbox := fullStep()
	data := must(appendStep(nil, snap, entries, outbox))
	want, err := decodeStep(snap.ID, data)
	require.NoError(t, err)
	got, ok := decodeSnapshotOf(snap.ID, data)
	require.True(t, ok)
	require.Equal(t, want.Snapshot, got)

	_, ok = decodeSnapshotOf("another", data)
	require.False(t, ok, "another instance's record")
	_, ok = decodeSnapshotOf(snap.ID, []byte(`{"format":2,"snapshot":{"id":"`+snap.ID+`"}}`))
	require.False(t, ok, "another format")
	_, ok = decodeSnapshotOf(snap.ID, data[:len(data)-1])
	require.False(t, ok, "a cut record")
}

func BenchmarkDecodeSnapshotOf(b *testing.B) {
	snap, entries, outbox := typicalStep()
	data := must(appendStep(nil, snap, entries, outbox))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := decodeSnapshotOf(snap.ID, data); !ok {
			b.Fatal("not read")
		}
	}
}
