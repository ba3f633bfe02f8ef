package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/rules"
)

// natsFixture is a NATS server listening on loopback with a store under
// prefix "wf" that a real engine wrote instances into.
type natsFixture struct {
	url   string
	store *natsstore.Store // the writer's store, open until the test ends
}

// natsStoreWithRuns starts a server, runs three scenarios through an engine
// on a natsstore under prefix "wf" (two refunds, and a document review
// with its kyc child), and adds a dead letter.
func natsStoreWithRuns(t *testing.T) natsFixture {
	t.Helper()
	// A long sync interval: the server's sync timer (racy in nats-server
	// 2.15) never fires during a test.
	srv, err := natsserver.Start(natsserver.Config{Dir: t.TempDir(), Listen: true, SyncInterval: time.Minute})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	require.NotEmpty(t, srv.URL())
	nc, err := srv.Connect()
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	ctx := context.Background()
	st, err := natsstore.Open(ctx, nc, natsstore.Config{Prefix: "wf", Shards: 2, Timeout: time.Minute})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })

	for _, sc := range []string{
		"../../examples/refund/scenarios/payment_fails.yaml",
		approved,
		"../../examples/document-review/scenarios/approved.yaml",
	} {
		rep, err := replayScenario(ctx, sc, rules.LoadBeside, time.Now().UTC(), engine.WithStore(st), engine.WithIDs(uuid.NewString))
		require.NoError(t, err, sc)
		require.True(t, rep.Passed(), sc)
	}
	at := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	require.NoError(t, st.AddDeadLetter(ctx, record.DeadLetter{
		MessageID: "m-1", Type: "HANDOFF", From: "seller", To: "payment", Reason: "queue_overflow",
		Instance: "i-1", Step: 3, Key: "i-1:3", At: at, Attempts: 1, LastError: "payment queue full",
	}))
	return natsFixture{url: srv.URL(), store: st}
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "nats://" + addr
}

func TestInspect_NATS(t *testing.T) {
	fx := natsStoreWithRuns(t)
	ctx := context.Background()
	nats := []string{"inspect", "--nats", fx.url, "--prefix", "wf"}
	want, err := fx.store.Instances(ctx)
	require.NoError(t, err)
	require.Len(t, want, 4, "two refunds, a document review and its kyc child")

	t.Run("list", func(t *testing.T) {
		out, errOut, code := wfrun(t, nats...)
		require.Equal(t, 0, code, errOut)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.Len(t, lines, 5, "a header and one line per instance: %s", out)
		assert.Regexp(t, `refund\s+1\s+REJECTED\s+completed\s+6`, out)
		assert.Regexp(t, `refund\s+1\s+COMPLETED\s+completed\s+4`, out)
		assert.Regexp(t, `kyc\s+\d+\s+VERIFIED\s+completed\s+2`, out)

		out, errOut, code = wfrun(t, append(slices.Clone(nats), "-o", "json")...)
		require.Equal(t, 0, code, errOut)
		var got []record.Snapshot
		require.NoError(t, json.Unmarshal([]byte(out), &got))
		newestFirst(want)
		require.Len(t, got, len(want))
		for i := range want {
			assert.Equal(t, want[i].ID, got[i].ID)
			assert.Equal(t, want[i].State, got[i].State)
			assert.Equal(t, want[i].Step, got[i].Step)
		}

		out, errOut, code = wfrun(t, append(slices.Clone(nats), "--workflow", "refund", "--status", "completed", "--limit", "1")...)
		require.Equal(t, 0, code, errOut)
		assert.Len(t, ids(out), 1)
		assert.Contains(t, out, "1 more; next page: --after ")
	})

	var rejected, parent, child string
	for _, s := range want {
		switch {
		case s.Workflow == "refund" && s.State == "REJECTED":
			rejected = s.ID
		case s.Workflow == "kyc":
			child = s.ID
		case s.Workflow == "document-review":
			parent = s.ID
		}
	}
	require.NotEmpty(t, rejected)
	require.Equal(t, parent+"/KYC/1", child)

	t.Run("one instance", func(t *testing.T) {
		out, errOut, code := wfrun(t, append(slices.Clone(nats), rejected[:8])...)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, "instance "+rejected+" of refund v1: completed in REJECTED after 6 steps")
		assert.Contains(t, out, "STEP  STATE")
		assert.Regexp(t, `(?m)^\s*6\s+`, out, "a row per step, up to the sixth")

		out, errOut, code = wfrun(t, append(slices.Clone(nats), parent)...)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, "children:\n  "+child+"  workflow kyc, from state KYC: completed in VERIFIED after 2 steps")
		out, errOut, code = wfrun(t, append(slices.Clone(nats), child)...)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, "child of "+parent+" (workflow document-review), started by its state KYC")

		_, errOut, code = wfrun(t, append(slices.Clone(nats), "no-such-instance")...)
		assert.Equal(t, 1, code)
		assert.Contains(t, errOut, "unknown instance: no-such-instance")
	})

	t.Run("history as JSON lines", func(t *testing.T) {
		history, errOut, code := wfrun(t, append(slices.Clone(nats), "--json", rejected)...)
		require.Equal(t, 0, code, errOut)
		wantHistory, err := fx.store.History(ctx, rejected)
		require.NoError(t, err)
		var got []record.Entry
		sc := bufio.NewScanner(strings.NewReader(history))
		for sc.Scan() {
			var e record.Entry
			require.NoError(t, json.Unmarshal(sc.Bytes(), &e), "line %q", sc.Text())
			got = append(got, e)
		}
		require.Len(t, got, len(wantHistory))
		for i := range wantHistory {
			assert.Equal(t, wantHistory[i].Seq, got[i].Seq)
			assert.Equal(t, wantHistory[i].Kind, got[i].Kind)
			assert.Equal(t, wantHistory[i].State, got[i].State)
		}

		file := filepath.Join(t.TempDir(), "history.jsonl")
		require.NoError(t, os.WriteFile(file, []byte(history), 0o644))
		out, errOut, code := wfrun(t, "replay", file, "../../examples/refund/workflow.yaml")
		assert.Equal(t, 0, code, out+errOut)
		assert.Contains(t, out, "no divergence")
	})

	t.Run("dead letters", func(t *testing.T) {
		out, errOut, code := wfrun(t, append(slices.Clone(nats), "--dead-letters")...)
		require.Equal(t, 0, code, errOut)
		assert.Regexp(t, `1\s+2026-11-21T09:00:00Z\s+queue_overflow\s+HANDOFF\s+seller\s+payment\s+i-1\s+3\s+payment queue full`, out)

		out, errOut, code = wfrun(t, append(slices.Clone(nats), "--dead-letters", "--json")...)
		require.Equal(t, 0, code, errOut)
		var got []record.DeadLetter
		require.NoError(t, json.Unmarshal([]byte(out), &got))
		require.Len(t, got, 1)
		assert.Equal(t, "m-1", got[0].MessageID)
	})

	t.Run("several URLs", func(t *testing.T) {
		out, errOut, code := wfrun(t, "inspect", "--nats", closedPort(t)+","+fx.url, "--prefix", "wf")
		require.Equal(t, 0, code, errOut)
		assert.Len(t, ids(out), 4)
	})

	t.Run("unknown prefix", func(t *testing.T) {
		_, errOut, code := wfrun(t, "inspect", "--nats", fx.url, "--prefix", "nope")
		assert.Equal(t, 1, code, "as the other errors reading a store")
		assert.Contains(t, errOut, `no store under prefix "nope"`)
		_, errOut, code = wfrun(t, "inspect", "--nats", fx.url, rejected)
		assert.Equal(t, 1, code)
		assert.Contains(t, errOut, `no store under prefix "baton"`, "the default prefix")

		raw, err := fx.store.Instances(ctx)
		require.NoError(t, err)
		assert.Len(t, raw, 4, "the writer's store is as it was")
	})

	t.Run("completion", func(t *testing.T) {
		out, errOut, code := wfrun(t, "__complete", "inspect", "--nats", fx.url, "--prefix", "wf", rejected[:4])
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, rejected+"\trefund REJECTED completed")
		out, _, _ = wfrun(t, "__complete", "inspect", "--nats", fx.url, "--prefix", "wf", "--workflow", "")
		assert.Equal(t, []string{"document-review", "kyc", "refund"}, strings.Split(strings.TrimSpace(out), "\n")[:3])
		out, _, _ = wfrun(t, "__complete", "inspect", "--nats", fx.url, "--prefix", "nope", "")
		assert.NotContains(t, out, rejected, "no store, no ids")
	})
}

func TestInspect_StoreOrNATS(t *testing.T) {
	file := listStore(t)
	url := closedPort(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"neither", []string{"inspect"}, "inspect needs --store FILE or --nats URL"},
		{"both", []string{"inspect", "--store", file, "--nats", url}, "--store FILE or --nats URL, not both"},
		{"prefix with a file", []string{"inspect", "--store", file, "--prefix", "wf"}, "--prefix applies to --nats"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := wfrun(t, tt.args...)
			assert.Equal(t, 2, code, out)
			assert.Contains(t, errOut, tt.want)
		})
	}

	_, errOut, code := wfrun(t, "inspect", "--nats", url)
	assert.Equal(t, 1, code, "a server that does not answer is an error reading the store")
	assert.Contains(t, errOut, "connect to "+url)
}
