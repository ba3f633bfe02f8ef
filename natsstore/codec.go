package natsstore

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

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

// token turns an id into one subject token or key: ids may hold any byte,
// subjects only some. Base64 (URL alphabet, no padding) keeps ids that are
// prefixes of one another apart and is reversible.
func token(id string) string { return base64.RawURLEncoding.EncodeToString([]byte(id)) }

func untoken(tok string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return "", fmt.Errorf("subject token %q is not an encoded id: %w", tok, err)
	}
	return string(b), nil
}

func encodeStep(snap record.Snapshot, entries []record.Entry, outbox []record.Outgoing) ([]byte, error) {
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
	var r stepRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return r, err
	}
	if r.Format != format {
		return r, formatErr(r.Format)
	}
	if r.Snapshot.ID != id {
		return r, fmt.Errorf("holds a snapshot of instance %q", r.Snapshot.ID)
	}
	return r, nil
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
