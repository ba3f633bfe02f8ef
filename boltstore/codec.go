package boltstore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/batonhq/baton/engine"
)

// MaxIDLen is the longest instance id the store accepts, in bytes: bbolt's
// key limit less the room the history keys need.
const MaxIDLen = 32 << 10

// historyKey returns the key of an instance's history record seq:
// uvarint(len(id)) | id | big-endian seq. The length prefix keeps ids that
// are prefixes of one another ("a", "ab") apart, and the big-endian sequence
// sorts an instance's records in commit order. The id's bytes inside the key
// double as the instance's key in the instances bucket.
func historyKey(buf []byte, id string, seq uint64) (key, idKey []byte) {
	buf = binary.AppendUvarint(buf[:0], uint64(len(id)))
	start := len(buf)
	buf = append(buf, id...)
	buf = binary.BigEndian.AppendUint64(buf, seq)
	return buf, buf[start : start+len(id)]
}

// historyPrefix is the part of historyKey shared by all of id's records.
func historyPrefix(id string) []byte {
	buf := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(id)), uint64(len(id)))
	return append(buf, id...)
}

func setSeq(key []byte, seq uint64) { binary.BigEndian.PutUint64(key[len(key)-8:], seq) }

// encoder turns a StepRecord into the bytes one commit writes. Encoders are
// pooled: their buffers must outlive the transaction (bbolt keeps references
// to keys and values until it commits), so one is held for a whole Commit.
type encoder struct {
	snap, entries bytes.Buffer
	snapEnc       *json.Encoder
	entryEnc      *json.Encoder
	key           []byte
}

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.snapEnc = json.NewEncoder(&e.snap)
	e.entryEnc = json.NewEncoder(&e.entries)
	e.snapEnc.SetEscapeHTML(false)
	e.entryEnc.SetEscapeHTML(false)
	return e
}}

// maxPooled keeps the pool from holding on to the buffers of an occasional
// huge step.
const maxPooled = 256 << 10

func getEncoder() *encoder { return encoders.Get().(*encoder) }

func putEncoder(e *encoder) {
	if e.snap.Cap() > maxPooled || e.entries.Cap() > maxPooled {
		return
	}
	e.snap.Reset()
	e.entries.Reset()
	encoders.Put(e)
}

// encode writes the snapshot as one JSON object and the entries as one JSON
// array. Times are written in UTC, so a record reads back the same wherever
// it is decoded.
func (e *encoder) encode(rec engine.StepRecord) error {
	snap := rec.Snapshot
	snap.Created, snap.Updated = snap.Created.UTC(), snap.Updated.UTC()
	if err := e.snapEnc.Encode(&snap); err != nil {
		return &EncodeError{Instance: snap.ID, Field: "snapshot", Err: err}
	}
	if len(rec.Entries) == 0 {
		return nil
	}
	e.entries.WriteByte('[')
	for i := range rec.Entries {
		if i > 0 {
			e.entries.WriteByte(',')
		}
		en := rec.Entries[i]
		en.Time = en.Time.UTC()
		if err := e.entryEnc.Encode(&en); err != nil {
			return &EncodeError{Instance: snap.ID, Field: fmt.Sprintf("entries[%d]", i), Err: err}
		}
	}
	e.entries.WriteByte(']')
	return nil
}

func checkID(id string) error {
	switch {
	case id == "":
		return &IDError{ID: id, Reason: "empty"}
	case len(id) > MaxIDLen:
		return &IDError{ID: id, Reason: fmt.Sprintf("%d bytes, longer than %d", len(id), MaxIDLen)}
	}
	return nil
}

func decodeSnapshot(v []byte) (engine.Snapshot, error) {
	var s engine.Snapshot
	err := json.Unmarshal(v, &s)
	return s, err
}

// appendEntries decodes one history record onto out. It decodes into a new
// slice, never into out's spare capacity, so that no map of an entry already
// returned is merged into.
func appendEntries(out []engine.Entry, v []byte) ([]engine.Entry, error) {
	var step []engine.Entry
	if err := json.Unmarshal(v, &step); err != nil {
		return out, err
	}
	return append(out, step...), nil
}
