package natscluster_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/batonhq/baton/natscluster"
)

func TestNode_Call_RunsOnTheOwner(t *testing.T) {
	srv := startServer(t)
	a := join(t, srv, "a")
	b := join(t, srv, "b")
	waitFor(t, "two engines to share the partitions", func() bool { return shared(a, b) })
	for _, m := range []*member{a, b} {
		name := m.node.Name()
		require.NoError(t, m.node.ServeCalls(func(_ context.Context, id string, data []byte) []byte {
			return []byte(name + " ran " + string(data) + " for " + id)
		}))
	}
	require.Error(t, a.node.ServeCalls(nil))

	// From either node, a call runs where its instance is owned.
	for _, owner := range []*member{a, b} {
		id := owner.node.NewID()
		for _, from := range []*member{a, b} {
			got, err := from.node.Call(context.Background(), id, []byte("x"))
			require.NoError(t, err)
			require.Equal(t, owner.node.Name()+" ran x for "+id, string(got), "called from %s", from.node.Name())
		}
	}

	// Once a hands its partitions over, b runs every call, a's too.
	id := a.node.NewID()
	require.NoError(t, a.node.Close())
	waitFor(t, "b to own every partition", func() bool { return len(b.node.Partitions()) == testPartitions })
	got, err := b.node.Call(context.Background(), id, []byte("y"))
	require.NoError(t, err)
	require.Equal(t, "b ran y for "+id, string(got))
}

func TestNode_TwoEnginesUnderOneNameAreReported(t *testing.T) {
	srv := startServer(t)
	core, logs := observer.New(zap.ErrorLevel)
	start := func() *natscluster.Node {
		return join(t, srv, "same", func(c *natscluster.Config) { c.Logger = zap.New(core) }).node
	}
	first := start()
	waitFor(t, "the first engine to own every partition", func() bool { return len(first.Partitions()) == testPartitions })
	require.Zero(t, logs.FilterMessageSnippet("another engine").Len(), "one engine alone is not reported")
	start()
	waitFor(t, "the second engine under the same name to be reported", func() bool {
		return logs.FilterMessageSnippet("another engine runs under this engine's name").Len() > 0
	})
}
