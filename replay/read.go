package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/batonhq/baton/engine"
)

// ReadHistory reads a history exported by `wfrun run --json` or `wfrun
// inspect --json`: JSON lines of history entries (lines of another kind, such
// as the run's verdict, are skipped), or one JSON array of entries.
func ReadHistory(r io.Reader) ([]engine.Entry, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var entries []engine.Entry
		if err := json.Unmarshal(trimmed, &entries); err != nil {
			return nil, fmt.Errorf("replay: history: %w", err)
		}
		return entries, nil
	}
	var entries []engine.Entry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var e engine.Entry
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

func known(k engine.Kind) bool {
	switch k {
	case engine.KindStarted, engine.KindDispatch, engine.KindHandoff, engine.KindFinalNotice,
		engine.KindAgentRun, engine.KindOutcome, engine.KindCondition, engine.KindRuleFired,
		engine.KindTransition, engine.KindRetry, engine.KindLimitHit, engine.KindLateReply,
		engine.KindReturned, engine.KindSelected, engine.KindJoined, engine.KindCompleted,
		engine.KindFailed, engine.KindCanceled:
		return true
	}
	return false
}
