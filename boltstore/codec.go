package boltstore

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/batonhq/baton/record"
	bolt "go.etcd.io/bbolt"
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

// outboxKey appends to buf the key of an instance's outbox item:
// historyPrefix(id) | key. Keying by the item's own key lets a commit replace
// or settle an item with one Put or Delete; Outbox sorts the few items an
// instance has by step on reading.
func outboxKey(buf, prefix []byte, key string) []byte {
	return append(append(buf, prefix...), key...)
}

// encoder turns a record.Step into the bytes one commit writes. Encoders are
// pooled: their buffers must outlive the transaction (bbolt keeps references
// to keys and values until it commits), so one is held for a whole Commit.
type encoder struct {
	snap, entries, outbox bytes.Buffer
	snapEnc               *json.Encoder
	entryEnc              *json.Encoder
	outEnc                *json.Encoder
	key                   []byte

	// The outbox keys, the Outbox items' and then the Settled ones, one
	// after another in keys; keyEnds[i] is where key i ends. outEnds[i] is
	// where Outbox item i's value ends in outbox. Both stay empty for a step
	// that neither sends nor settles anything.
	keys    []byte
	keyEnds []int
	outEnds []int
}

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.snapEnc = json.NewEncoder(&e.snap)
	e.entryEnc = json.NewEncoder(&e.entries)
	e.outEnc = json.NewEncoder(&e.outbox)
	e.snapEnc.SetEscapeHTML(false)
	e.entryEnc.SetEscapeHTML(false)
	e.outEnc.SetEscapeHTML(false)
	return e
}}

// maxPooled keeps the pool from holding on to the buffers of an occasional
// huge step.
const maxPooled = 256 << 10

func getEncoder() *encoder { return encoders.Get().(*encoder) }

func putEncoder(e *encoder) {
	if e.snap.Cap() > maxPooled || e.entries.Cap() > maxPooled || e.outbox.Cap() > maxPooled || cap(e.keys) > maxPooled {
		return
	}
	e.snap.Reset()
	e.entries.Reset()
	e.outbox.Reset()
	e.keys, e.keyEnds, e.outEnds = e.keys[:0], e.keyEnds[:0], e.outEnds[:0]
	encoders.Put(e)
}

// encode writes the snapshot as one JSON object, the entries as one JSON
// array and each outbox item as a JSON object, and lays out the outbox keys
// under prefix (historyPrefix of the instance). Times are written in UTC, so
// a record reads back the same wherever it is decoded.
func (e *encoder) encode(rec record.Step, prefix []byte) error {
	snap := rec.Snapshot
	snap.Created, snap.Updated = snap.Created.UTC(), snap.Updated.UTC()
	if err := e.snapEnc.Encode(&snap); err != nil {
		return &EncodeError{Instance: snap.ID, Field: "snapshot", Err: err}
	}
	if len(rec.Entries) > 0 {
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
	}
	return e.encodeOutbox(rec, prefix)
}

// encodeOutbox lays out the keys and values of the step's outbox changes.
func (e *encoder) encodeOutbox(rec record.Step, prefix []byte) error {
	for i := range rec.Outbox {
		o := rec.Outbox[i]
		o.Created = o.Created.UTC()
		if err := e.outEnc.Encode(&o); err != nil {
			return &EncodeError{Instance: rec.Snapshot.ID, Field: fmt.Sprintf("outbox[%d]", i), Err: err}
		}
		e.outEnds = append(e.outEnds, e.outbox.Len())
		e.keys = outboxKey(e.keys, prefix, o.Key)
		e.keyEnds = append(e.keyEnds, len(e.keys))
	}
	for _, k := range rec.Settled {
		e.keys = outboxKey(e.keys, prefix, k)
		e.keyEnds = append(e.keyEnds, len(e.keys))
	}
	return nil
}

// writeOutbox applies the step's outbox changes in tx: the settled items go
// first, so that an item the step both settles and sends again is kept, as
// record.MemStore does. A settled key with no item is no error.
func (e *encoder) writeOutbox(tx *bolt.Tx) error {
	if len(e.keyEnds) == 0 {
		return nil
	}
	b := tx.Bucket(bucketOutbox)
	keyAt := func(i int) []byte {
		start := 0
		if i > 0 {
			start = e.keyEnds[i-1]
		}
		return e.keys[start:e.keyEnds[i]]
	}
	for i := len(e.outEnds); i < len(e.keyEnds); i++ {
		if err := b.Delete(keyAt(i)); err != nil {
			return err
		}
	}
	values := e.outbox.Bytes()
	start := 0
	for i, end := range e.outEnds {
		if err := b.Put(keyAt(i), values[start:end]); err != nil {
			return err
		}
		start = end
	}
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

func decodeSnapshot(v []byte) (record.Snapshot, error) {
	var s record.Snapshot
	err := json.Unmarshal(v, &s)
	return s, err
}

// appendEntries decodes one history record onto out. It decodes into a new
// slice, never into out's spare capacity, so that no map of an entry already
// returned is merged into.
func appendEntries(out []record.Entry, v []byte) ([]record.Entry, error) {
	var step []record.Entry
	if err := json.Unmarshal(v, &step); err != nil {
		return out, err
	}
	return append(out, step...), nil
}

func decodeOutgoing(v []byte) (record.Outgoing, error) {
	var o record.Outgoing
	err := json.Unmarshal(v, &o)
	return o, err
}

// compareOutgoing orders outbox items as Outbox returns them: by step, then
// key.
func compareOutgoing(a, b record.Outgoing) int {
	if c := cmp.Compare(a.Step, b.Step); c != 0 {
		return c
	}
	return strings.Compare(a.Key, b.Key)
}

// deadLetterKey is the key of dead letter seq: big-endian, so that the
// bucket keeps them in the order added.
func deadLetterKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

// encodeDeadLetter is d as the deadletters bucket keeps it.
func encodeDeadLetter(d record.DeadLetter) ([]byte, error) {
	d.At = d.At.UTC()
	b, err := marshal(&d)
	if err != nil {
		return nil, &EncodeError{Instance: d.Instance, Field: "dead_letter", Err: err}
	}
	return b, nil
}

func decodeDeadLetter(v []byte) (record.DeadLetter, error) {
	var d record.DeadLetter
	err := json.Unmarshal(v, &d)
	return d, err
}

// encodeWorkflow is w as the workflows bucket keeps it.
func encodeWorkflow(w record.WorkflowSource) ([]byte, error) {
	w.Saved = w.Saved.UTC()
	b, err := marshal(&w)
	if err != nil {
		return nil, &EncodeError{Field: "workflow", Err: err}
	}
	return b, nil
}

func decodeWorkflow(v []byte) (record.WorkflowSource, error) {
	var w record.WorkflowSource
	err := json.Unmarshal(v, &w)
	return w, err
}

// marshal is json.Marshal without HTML escaping, as the encoder writes.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
