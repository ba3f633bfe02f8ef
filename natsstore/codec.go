package natsstore

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/batonhq/baton/record"
)

// format is the version of the records this package writes; a record of
// another version is refused as corrupt rather than misread.
const format = 1

// stepRecord is one step as one message: the snapshot after the step, the
// history entries the step added, and the whole unsettled outbox after it.
// Keeping the whole outbox (usually one item) makes the last message of an
// instance all that Instance and Outbox read.
type stepRecord struct {
	Format   int               `json:"format"`
	Snapshot record.Snapshot   `json:"snapshot"`
	Entries  []record.Entry    `json:"entries,omitempty"`
	Outbox   []record.Outgoing `json:"outbox,omitempty"`
}

type deadRecord struct {
	Format     int               `json:"format"`
	DeadLetter record.DeadLetter `json:"dead_letter"`
}

type workflowRecord struct {
	Format   int                   `json:"format"`
	Workflow record.WorkflowSource `json:"workflow"`
}

// maxPlainToken is the longest token that is an id's base64 form: that of
// an id of record.MaxIDLen bytes, so that every id a caller may choose
// keeps the subject earlier releases wrote it on.
var maxPlainToken = base64.RawURLEncoding.EncodedLen(record.MaxIDLen)

// hashedMark starts the token of a longer id; base64 (URL alphabet, no
// padding) never holds '='.
const hashedMark = "="

// token turns an id into one subject token or key: ids may hold any byte,
// subjects only some. Base64 (URL alphabet, no padding) keeps ids that are
// prefixes of one another apart and is reversible. An id longer than
// record.MaxIDLen (a child workflow's instance under a long parent id, say)
// is hashed instead, so that no id makes a subject too long for the NATS
// protocol (its control lines stop at 4 KiB); its records hold the whole
// id, which every read checks.
func token(id string) string {
	if base64.RawURLEncoding.EncodedLen(len(id)) <= maxPlainToken {
		return base64.RawURLEncoding.EncodeToString([]byte(id))
	}
	sum := sha256.Sum256([]byte(id))
	return hashedMark + base64.RawURLEncoding.EncodeToString(sum[:])
}

// untoken is the id of a token; hashed is true for the token of a long id,
// which only its records name.
func untoken(tok string) (id string, hashed bool, err error) {
	if strings.HasPrefix(tok, hashedMark) {
		return "", true, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return "", false, fmt.Errorf("subject token %q is not an encoded id: %w", tok, err)
	}
	return string(b), false, nil
}

// encodeStep is the message of a step: json.Marshal's form of its
// stepRecord, written by appendStep when it can.
func encodeStep(snap record.Snapshot, entries []record.Entry, outbox []record.Outgoing) ([]byte, error) {
	if b, ok := appendStep(make([]byte, 0, stepSizeHint), snap, entries, outbox); ok {
		return b, nil
	}
	b, err := json.Marshal(stepRecord{Format: format, Snapshot: snap, Entries: entries, Outbox: outbox})
	if err == nil {
		return b, nil
	}
	// Name the field that has no JSON form.
	enc := &EncodeError{Instance: snap.ID, Field: "step", Err: err}
	if _, e := json.Marshal(snap); e != nil {
		enc.Field, enc.Err = "snapshot", e
	}
	for i, en := range entries {
		if _, e := json.Marshal(en); e != nil {
			enc.Field, enc.Err = fmt.Sprintf("entries[%d]", i), e
		}
	}
	for i, o := range outbox {
		if _, e := json.Marshal(o); e != nil {
			enc.Field, enc.Err = fmt.Sprintf("outbox[%d]", i), e
		}
	}
	return nil, enc
}

// decodeStep reads a step message of instance id.
func decodeStep(id string, data []byte) (stepRecord, error) {
	r, ok := decodeStepDirect(data)
	if !ok {
		r = stepRecord{}
		if err := json.Unmarshal(data, &r); err != nil {
			return r, err
		}
	}
	if r.Format != format {
		return r, formatErr(r.Format)
	}
	if r.Snapshot.ID != id {
		return r, fmt.Errorf("holds a snapshot of instance %q", short(r.Snapshot.ID))
	}
	return r, nil
}

// decodeLast reads the step message on the subject whose last token is tok,
// as a list of the instances meets it: the id is the token's, or for a
// hashed token the record's own, which must hash to it. A record of an id
// no read by id would find (an id over record.MaxIDLen that an earlier
// release wrote in full) is an error too.
func decodeLast(tok string, data []byte) (string, stepRecord, error) {
	id, hashed, err := untoken(tok)
	if err != nil {
		return "", stepRecord{}, err
	}
	if hashed {
		var probe struct {
			Snapshot struct {
				ID string `json:"id"`
			} `json:"snapshot"`
		}
		if err := json.Unmarshal(data, &probe); err != nil {
			return "", stepRecord{}, err
		}
		id = probe.Snapshot.ID
	}
	if token(id) != tok {
		return id, stepRecord{}, fmt.Errorf("the record of instance %q is not on its subject (token %q)", short(id), token(id))
	}
	r, err := decodeStep(id, data)
	return id, r, err
}

// short is an id cut to its first 64 bytes, for messages.
func short(id string) string {
	if len(id) > 64 {
		return id[:64] + "..."
	}
	return id
}

func decodeDead(data []byte) (record.DeadLetter, error) {
	var r deadRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return r.DeadLetter, err
	}
	if r.Format != format {
		return r.DeadLetter, formatErr(r.Format)
	}
	return r.DeadLetter, nil
}

func decodeWorkflow(hash string, data []byte) (record.WorkflowSource, error) {
	var r workflowRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return r.Workflow, err
	}
	if r.Format != format {
		return r.Workflow, formatErr(r.Format)
	}
	if r.Workflow.Hash != hash {
		return r.Workflow, fmt.Errorf("holds the workflow of hash %q", r.Workflow.Hash)
	}
	return r.Workflow, nil
}

func formatErr(got int) error {
	if got == 0 {
		return errors.New("no format version: not a record of this store")
	}
	return fmt.Errorf("format version %d, want %d", got, format)
}
