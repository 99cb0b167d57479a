package partition_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
)

func TestBadInputIsRefusedBeforeAnythingIsSent(t *testing.T) {
	cl := zktest.Standalone(t)
	req := testkit.NewRequests(t)
	c := newClient(t, cl.Addrs(), req.Option())
	before := req.Count(t, "")
	items := partition.List("a", "b")
	p, err := partition.New(c, "/part/e", "m", items)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	var nilCtx context.Context
	var nilP *partition.Partitioner
	newP := func(path, id string, items partition.Items, opts ...partition.Option) func() error {
		return func() error { _, err := partition.New(c, path, id, items, opts...); return err }
	}
	testkit.MatchSentinels(t, map[string]testkit.Failure{
		"nil client":       testkit.Named("partition /p: ", func() error { _, err := partition.New(nil, "/p", "m", items); return err }, zkrecipes.ErrInvalidArgument),
		"root":             testkit.Named("partition /: ", newP("/", "m", items), zkrecipes.ErrInvalidPath),
		"bad path":         testkit.Named("partition p: ", newP("p", "m", items), zkrecipes.ErrInvalidPath),
		"empty id":         testkit.Named("partition /p: ", newP("/p", "", items), zkrecipes.ErrInvalidArgument),
		"id with /":        testkit.Named("partition /p: ", newP("/p", "a/b", items), zkrecipes.ErrInvalidArgument),
		"id ..":            testkit.Named("partition /p: ", newP("/p", "..", items), zkrecipes.ErrInvalidPath),
		"zero items":       testkit.Named("partition /p: ", newP("/p", "m", partition.Items{}), zkrecipes.ErrInvalidArgument),
		"empty list":       testkit.Named("partition /p: ", newP("/p", "m", partition.List()), zkrecipes.ErrInvalidArgument),
		"duplicate item":   testkit.Named("partition /p: ", newP("/p", "m", partition.List("a", "a")), zkrecipes.ErrInvalidArgument),
		"item with /":      testkit.Named("partition /p: ", newP("/p", "m", partition.List("a/b")), zkrecipes.ErrInvalidArgument),
		"empty item":       testkit.Named("partition /p: ", newP("/p", "m", partition.List("")), zkrecipes.ErrInvalidArgument),
		"bad items path":   testkit.Named("partition /p: ", newP("/p", "m", partition.ChildrenOf("jobs")), zkrecipes.ErrInvalidPath),
		"nil worker":       testkit.Named("partition /p: ", newP("/p", "m", items, partition.WithWorker(nil)), zkrecipes.ErrInvalidArgument),
		"nil option":       testkit.Named("partition /p: ", newP("/p", "m", items, nil), zkrecipes.ErrInvalidArgument),
		"too large":        testkit.Named("partition /p: ", newP("/p", "m", items, partition.WithPayload([]byte(strings.Repeat("x", 2<<20)))), zkrecipes.ErrTooLarge),
		"nil partitioner":  testkit.Named("partition: ", func() error { return nilP.Start(context.Background()) }, zkrecipes.ErrInvalidArgument),
		"zero partitioner": testkit.Named("partition: ", func() error { return new(partition.Partitioner).Close() }, zkrecipes.ErrInvalidArgument),
		"not started":      testkit.Named("partition /part/e: ", func() error { _, err := p.Members(); return err }, zkrecipes.ErrNotStarted),
	})
	testkit.RefusesNilContext(t, map[string]func() error{
		"Start": func() error { return p.Start(nilCtx) },
	})
	assert.Equal(t, before, req.Count(t, ""), "requests were sent")
	assert.Empty(t, nilP.Owned())
	// Still usable after all that.
	ctx := ctxT(t, 30*time.Second)
	require.NoError(t, p.Start(ctx))
	assert.ErrorIs(t, p.Start(ctx), zkrecipes.ErrStarted)
	require.NoError(t, p.Close())
	require.NoError(t, p.Close())
	assert.ErrorIs(t, p.Start(ctx), zkrecipes.ErrClosed)
}

// Close gives every item back: its holds end, its lock nodes go, and a
// later Release of a hold says it was released already.
func TestCloseReleasesEveryItem(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	items := itemNames(5)
	p := start(t, c, "/part/close", "m", partition.List(items...), nil)
	waitStable(t, items, p)
	var held []*hold.Hold
	for _, h := range p.Owned() {
		held = append(held, h)
	}
	require.NoError(t, p.Close())
	for _, h := range held {
		testkit.WaitClosed(t, h.Done(), time.Second, "a hold after Close")
		assert.ErrorIs(t, h.Release(), zkrecipes.ErrReleased)
	}
	require.NoError(t, c.Drain(ctxT(t, 30*time.Second)))
	for _, it := range items {
		assert.Empty(t, testkit.Children(t, c, partition.ItemPath("/part/close", it)), it)
	}
	assert.Empty(t, testkit.Children(t, c, "/part/close/members"))
}

func TestCloseLeavesNoGoroutine(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	other := newClient(t, cl.Addrs())
	before := testkit.LeakBase()
	items := itemNames(6)
	worker := partition.WithWorker(func(ctx context.Context, _ string, _ *hold.Hold) { <-ctx.Done() })
	for _, state := range []string{"owning", "queued behind another", "link down", "children"} {
		t.Run(state, func(t *testing.T) {
			path := "/part/leak/" + strings.ReplaceAll(state, " ", "-")
			src := partition.List(items...)
			if state == "children" {
				src = partition.ChildrenOf("/part/leak-jobs")
				for _, it := range items {
					_, err := other.Create(ctxT(t, 10*time.Second), "/part/leak-jobs/"+it, nil, framework.WithParents())
					require.NoError(t, err)
				}
			}
			var o *partition.Partitioner
			if state == "queued behind another" {
				o = start(t, other, path, "o", src, nil)
				waitStable(t, items, o)
			}
			m, err := partition.New(c, path, "m", src, worker)
			require.NoError(t, err)
			sub := m.Subscribe()
			require.NoError(t, m.Start(ctxT(t, 30*time.Second)))
			if o == nil {
				waitStable(t, items, m)
			}
			if state == "link down" {
				p.Blackhole()
			}
			require.NoError(t, m.Close())
			for range sub.Changes() {
			}
			p.Heal()
			if o != nil {
				require.NoError(t, o.Close())
			}
			require.NoError(t, c.Drain(ctxT(t, 30*time.Second)))
			goleak.VerifyNone(t, before...)
		})
	}
}
