package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/batonhq/baton/record"
)

// ReadHistory reads a history exported by `wfrun run --json` or `wfrun
// inspect --json`: JSON lines of history entries (lines of another kind, such
// as the run's verdict, are skipped), or one JSON array of entries.
func ReadHistory(r io.Reader) ([]record.Entry, error) {
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
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var e record.Entry
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("replay: history line %d: %w", n, err)
		}
		if !known(e.Kind) {
			continue
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
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
