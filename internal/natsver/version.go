package natsver

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
)

// Min is the oldest NATS server Baton works with: 2.10 brought the consumer
// API (named consumers with filter subjects) that nats.go's jetstream
// package relies on, and every JetStream feature Baton uses (per-subject
// compare-and-swap, rollups, key-value buckets, purge by subject) is older.
const Min = "2.10.0"

// TooOldError is a server older than the version needed.
type TooOldError struct {
	Got  string // the version the server announced
	Need string
}

func (e *TooOldError) Error() string {
	return fmt.Sprintf("nats server %s or newer is needed (connected to %s)", e.Need, e.Got)
}

// ErrNotConnected means the connection has no server version to check: it
// is closed or has not reached a server yet.
var ErrNotConnected = errors.New("nats: not connected, no server version to check")

// CheckConn checks the version of the server nc is connected to against Min.
func CheckConn(nc *nats.Conn) error {
	if nc == nil || !nc.IsConnected() {
		return ErrNotConnected
	}
	return Check(nc.ConnectedServerVersion(), Min)
}

// Check returns a *TooOldError when version got is older than need. A
// version that cannot be read is refused too: the server's features are then
// unknown.
func Check(got, need string) error {
	g, err := parse(got)
	if err != nil {
		return err
	}
	n, err := parse(need)
	if err != nil {
		return err
	}
	for i := range g {
		if g[i] != n[i] {
			if g[i] < n[i] {
				return &TooOldError{Got: got, Need: need}
			}
			return nil
		}
	}
	return nil
}

// parse reads "2.10.3", "v2.11.0-RC.1" or "2.12.0+build" as its three
// numbers. A pre-release counts as its release: the features are there.
func parse(v string) ([3]int, error) {
	var out [3]int
	s := strings.TrimPrefix(strings.TrimSpace(v), "v")
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return out, fmt.Errorf("nats: cannot read server version %q", v)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return out, fmt.Errorf("nats: cannot read server version %q", v)
		}
		out[i] = n
	}
	return out, nil
}
