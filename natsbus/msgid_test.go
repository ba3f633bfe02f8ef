package natsbus_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/wire"
)

// The work of an instance with a long id goes out under a short
// Nats-Msg-Id that still tells its keys apart: a second send of one key is
// a duplicate, a key that differs in its last byte is not.
func TestTransport_SendWork_LongKeysHaveShortMessageIDs(t *testing.T) {
	tr := newTestTransport(t)
	tr.open("a", 0)
	id := strings.Repeat("x", 3000)
	tr.send("a", id+":1", id+":1", id+":2", id+":1")
	tr.seen("a", 2)
	if s := tr.Metrics(); s.Duplicates != 2 || s.Accepted != 2 {
		t.Errorf("got %d duplicates, %d accepted, want 2 and 2", s.Duplicates, s.Accepted)
	}
	st, err := tr.jetStream().Stream(context.Background(), natsbus.WorkStream("a"))
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 2; seq++ {
		m, err := st.GetMsg(context.Background(), seq)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Header.Get(natsbus.HeaderMsgID); len(got) > 256 {
			t.Errorf("message %d: got a Nats-Msg-Id of %d bytes, want at most 256", seq, len(got))
		}
	}
	got := tr.take("a", 0)
	if len(got) != 2 {
		t.Fatalf("got %d messages, want 2", len(got))
	}
	keys := []string{got[0].Key(), got[1].Key()}
	slices.Sort(keys)
	if keys[0] != id+":1" || keys[1] != id+":2" {
		t.Errorf("got keys of %d and %d bytes, want the whole keys", len(keys[0]), len(keys[1]))
	}
}

// The work tells its agent the ack wait, in seconds, so that a plain client
// knows when to send in-progress acks without reading the consumer's
// configuration; with a backoff schedule, the first delivery's wait.
func TestTransport_SendWork_TheWorkCarriesItsAckWait(t *testing.T) {
	ns := startServer(t, false)
	for _, tt := range []struct {
		name   string
		change func(*natsbus.Config)
		want   float64
	}{
		{"ack wait", func(c *natsbus.Config) { c.AckWait = 1500 * time.Millisecond }, 1.5},
		{"backoff schedule", func(c *natsbus.Config) { c.Backoff = []time.Duration{2 * time.Second, 5 * time.Second} }, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := onServer(t, ns, tt.change)
			agent := "wait-" + strings.ReplaceAll(tt.name, " ", "-")
			tr.open(agent, 0)
			tr.send(agent, agent+":1")
			msgs := tr.take(agent, 1)
			if len(msgs) != 1 {
				t.Fatalf("TakeWork: got %d messages, want 1", len(msgs))
			}
			if got := msgs[0].Metadata[wire.KeyAckWait]; got != tt.want {
				t.Errorf("got metadata.ack_wait %v, want %v", got, tt.want)
			}
		})
	}
}
