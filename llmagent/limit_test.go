package llmagent

import (
	"io"
	"strings"
	"testing"
)

func TestLimitedBody_ReadsUpToTheLimit(t *testing.T) {
	for _, tt := range []struct {
		size int
		fail bool
	}{{10, false}, {MaxBody, false}, {MaxBody + 1, true}} {
		b := &limitedBody{body: io.NopCloser(strings.NewReader(strings.Repeat("x", tt.size))), left: MaxBody}
		data, err := io.ReadAll(b)
		if (err != nil) != tt.fail {
			t.Errorf("%d bytes: got %v, want failure %v", tt.size, err, tt.fail)
		}
		if !tt.fail && len(data) != tt.size {
			t.Errorf("%d bytes: read %d", tt.size, len(data))
		}
	}
}
