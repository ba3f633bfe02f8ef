package engine_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton/scenario"
)

func TestEngine_Determinism_ScenarioReplayedTwiceGivesTheSameHistory(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "examples", "*", "scenarios", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("got %d example scenarios, want at least 10", len(files))
	}
	for _, file := range files {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(file)))+"/"+filepath.Base(file), func(t *testing.T) {
			var traces [2][]byte
			for k := range traces {
				s, err := scenario.Load(file)
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				rep, err := scenario.Run(t.Context(), s, nil)
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if !rep.Passed() {
					t.Fatalf("scenario failed: %v", rep.Failures)
				}
				if len(rep.History) == 0 {
					t.Fatalf("got an empty history")
				}
				if traces[k], err = json.Marshal(rep.History); err != nil {
					t.Fatalf("marshal: %v", err)
				}
			}
			if !bytes.Equal(traces[0], traces[1]) {
				t.Errorf("the two replays differ:\nfirst  %s\nsecond %s", traces[0], traces[1])
			}
		})
	}
}
