package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/batonhq/baton/record"
)

// MaxLineBytes is the longest line of a JSON-lines history ReadHistory
// accepts (16 MiB); a longer one is a *LineError matching ErrLineTooLong.
const MaxLineBytes = 16 << 20

// ReadHistory reads a history exported by `wfrun run --json` or `wfrun
// inspect --json`: JSON lines of history entries (lines of another kind, such
// as the run's verdict, are skipped), or one JSON array of entries. A line
// that cannot be read is a *LineError giving its number.
func ReadHistory(r io.Reader) ([]record.Entry, error) {
	if r == nil {
		return nil, fmt.Errorf("%w: reader", ErrNilArgument)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var entries []record.Entry
		if err := json.Unmarshal(trimmed, &entries); err != nil {
			return nil, fmt.Errorf("replay: history: %w", err)
		}
		return entries, nil
	}
	var entries []record.Entry
	sc := bufio.NewScanner(bytes.NewReader(data))
	// The scanner's limit counts the line's newline too.
	sc.Buffer(make([]byte, 0, 64*1024), MaxLineBytes+1)
	n := 1
	for ; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var e record.Entry
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, &LineError{Line: n, Err: err}
		}
		if !known(e.Kind) {
			continue
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &LineError{Line: n, Err: ErrLineTooLong}
		}
		return nil, fmt.Errorf("replay: %w", err)
	}
	return entries, nil
}

func known(k record.Kind) bool {
	switch k {
	case record.KindStarted, record.KindDispatch, record.KindHandoff, record.KindFinalNotice,
		record.KindAgentRun, record.KindOutcome, record.KindCondition, record.KindRuleFired,
		record.KindTransition, record.KindRetry, record.KindLimitHit, record.KindLateReply,
		record.KindReturned, record.KindSelected, record.KindJoined, record.KindCompleted,
		record.KindFailed, record.KindCanceled:
		return true
	}
	return false
}
