package natsstore

import (
	"testing"

	"github.com/batonhq/baton/internal/puback"
)

// TestDecode_WrongLastSequenceIsFenced: the server's refusal of a commit
// whose expected revision is stale, as publishAcked returns it, is what
// Commit reads as another writer's (isWrongLastSeq).
func TestDecode_WrongLastSequenceIsFenced(t *testing.T) {
	_, err := puback.Decode([]byte(`{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 5"},"stream":"s","seq":0}`))
	if !isWrongLastSeq(err) {
		t.Fatalf("got %v, want the wrong last sequence API error", err)
	}
}
