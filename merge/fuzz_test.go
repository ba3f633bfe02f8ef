package merge_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/batonhq/baton/merge"
)

// fuzzReplies decodes five bytes per reply: agent (a0..a5, so duplicates
// happen), option ("" abstains, x, y, z), confidence (-2.56 to 2.54, out of
// range on purpose), priority (-11 to 11) and order (0 to 3). Voters a0..a3
// are declared with levels that may tie.
func fuzzReplies(data []byte) ([]merge.Reply, map[string]merge.Voter) {
	voters := map[string]merge.Voter{}
	for i := range 4 {
		v := merge.Voter{Level: i / 2}
		if i < len(data) {
			v.Expertise = float64(int8(data[i])) / 60
			v.Accuracy = float64(data[i]) / 200
		}
		voters["a"+strconv.Itoa(i)] = v
	}
	var replies []merge.Reply
	for len(data) >= 5 {
		b := data[:5]
		data = data[5:]
		replies = append(replies, merge.Reply{
			Agent:      "a" + strconv.Itoa(int(b[0]%6)),
			Option:     []string{"", "x", "y", "z"}[b[1]%4],
			Confidence: float64(int8(b[2])) / 50,
			Priority:   int(int8(b[3])) % 12,
			Order:      int(b[4] % 4),
		})
	}
	return replies, voters
}

func FuzzDecide(f *testing.F) {
	for _, s := range merge.Strategies() {
		f.Add(string(s), []byte{0, 1, 40, 2, 0, 1, 2, 50, 2, 1, 2, 2, 10, 5, 2})
		f.Add(string(s), []byte{0, 0, 0, 0, 0, 1, 0, 0, 0, 0})
	}
	f.Add("weighted_vote", []byte{9, 1, 255, 0, 3, 3, 2, 127, 0, 3, 4, 3, 128, 250, 3})
	f.Add("majority", []byte{0, 1, 0, 0, 0, 0, 2, 0, 0, 0})
	f.Add("bogus", []byte{0, 1, 0, 0, 0})
	f.Add("first", []byte{})
	f.Fuzz(func(t *testing.T, strategy string, data []byte) {
		s := merge.Strategy(strategy)
		replies, voters := fuzzReplies(data)
		d, err := merge.Decide(s, replies, voters)
		if err != nil {
			if !errors.Is(err, merge.ErrUnknownStrategy) && !errors.Is(err, merge.ErrNoReplies) && !errors.Is(err, merge.ErrInvalidReply) {
				t.Fatalf("error: got %v, want one of the package's sentinels", err)
			}
			if s.Valid() && len(replies) > 0 && uniqueAgents(replies) {
				t.Fatalf("error: got %v, want nil for valid input", err)
			}
			return
		}
		if !s.Valid() || len(replies) == 0 || !uniqueAgents(replies) {
			t.Fatalf("error: got nil, want one for strategy %q and %d replies %v", s, len(replies), replies)
		}
		if d.Resolved != (d.Option != "") {
			t.Fatalf("got Resolved %v with Option %q, want Resolved exactly when an option won", d.Resolved, d.Option)
		}
		options := map[string]bool{}
		cast := 0
		for _, r := range replies {
			if r.Option != "" {
				options[r.Option] = true
				cast++
			}
		}
		if d.Option != "" && !options[d.Option] {
			t.Fatalf("Option: got %q, want one a reply chose", d.Option)
		}
		if d.Conflict != (len(options) > 1) {
			t.Fatalf("Conflict: got %v with options %v", d.Conflict, options)
		}
		if len(d.Votes) != len(options) {
			t.Fatalf("Votes: got %v, want one entry per option in %v", d.Votes, options)
		}
		if !d.Conflict && cast > 0 && !d.Resolved {
			t.Fatalf("got an unresolved agreement for %s", s)
		}
		if s == merge.WeightedVote {
			if len(d.Weights) != len(replies) {
				t.Fatalf("Weights: got %d agents, want %d", len(d.Weights), len(replies))
			}
			for a, w := range d.Weights {
				if !(w >= 0 && w <= 1) {
					t.Fatalf("Weights[%s]: got %v, want a value in [0, 1]", a, w)
				}
			}
		} else {
			total := 0.0
			for _, v := range d.Votes {
				total += v
			}
			if total != float64(cast) {
				t.Fatalf("Votes: got %v totalling %v, want %d votes cast", d.Votes, total, cast)
			}
		}
		if _, err := json.Marshal(d.Map()); err != nil {
			t.Fatalf("json.Marshal(Map()): got error %v, want nil", err)
		}
		reversed := slices.Clone(replies)
		slices.Reverse(reversed)
		again, err := merge.Decide(s, reversed, voters)
		if err != nil || !reflect.DeepEqual(again, d) {
			t.Fatalf("reversed replies: got %+v, %v, want %+v", again, err, d)
		}
	})
}

func uniqueAgents(rs []merge.Reply) bool {
	seen := map[string]bool{}
	for _, r := range rs {
		if r.Agent == "" || seen[r.Agent] {
			return false
		}
		seen[r.Agent] = true
	}
	return true
}
