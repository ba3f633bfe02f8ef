package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPrune(t *testing.T) {
	store := filepath.Join(t.TempDir(), "baton.db")
	if _, errOut, code := wfrun(t, "run", "--store", store, approved); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	before, _, _ := wfrun(t, "inspect", "--store", store)
	if !strings.Contains(before, "completed") {
		t.Fatalf("got\n%s\nwant a completed instance to prune", before)
	}
	out, errOut, code := wfrun(t, "prune", "--store", store, "--before", "1970-01-01T00:00:00Z")
	if code != 0 || !strings.HasPrefix(out, "pruned 0 ") {
		t.Errorf("prune before 1970: got exit %d, %q %q, want 0 pruned", code, out, errOut)
	}
	out, errOut, code = wfrun(t, "prune", "--store", store, "--before", "-24h")
	if code != 2 {
		t.Errorf("negative duration: got exit %d (%s%s), want 2", code, out, errOut)
	}
	future := time.Now().Add(1000 * 24 * time.Hour).UTC().Format(time.RFC3339)
	out, errOut, code = wfrun(t, "prune", "--store", store, "--before", future)
	if code != 0 || !strings.HasPrefix(out, "pruned 1 ") {
		t.Errorf("prune before %s: got exit %d, %q %q, want 1 pruned", future, code, out, errOut)
	}
	after, _, _ := wfrun(t, "inspect", "--store", store)
	if strings.Contains(after, "completed") {
		t.Errorf("got\n%s\nafter prune, want no instance", after)
	}

	tests := []struct {
		name string
		args []string
		want int
	}{
		{"no store", []string{"prune", "--before", "1h"}, 2},
		{"no before", []string{"prune", "--store", store}, 2},
		{"bad before", []string{"prune", "--store", store, "--before", "yesterday"}, 2},
		{"missing file", []string{"prune", "--store", filepath.Join(t.TempDir(), "typo.db"), "--before", "1h"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, errOut, code := wfrun(t, tt.args...); code != tt.want {
				t.Errorf("got exit %d (%s), want %d", code, errOut, tt.want)
			}
		})
	}
}
