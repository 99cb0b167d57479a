package leader_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/leader"
)

// A nil context is bad input: every call of the package that takes one
// refuses it with ErrInvalidArgument, sends nothing, starts nothing, and
// the latch, the selector and Observe work as before.
func TestEveryCallRefusesANilContext(t *testing.T) {
	cl := zktest.Standalone(t)
	req := testkit.NewRequests(t)
	c := newClient(t, cl.Addrs(), req.Option())
	l := newLatch(t, c, "/nil/latch", "a")
	s, err := leader.NewSelector(c, "/nil/selector", func(ctx context.Context, _ *hold.Hold) error {
		<-ctx.Done()
		return nil
	})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	var nilCtx context.Context
	before := req.Count(t, "")
	testkit.RefusesNilContext(t, map[string]func() error{
		"Participants":          func() error { _, err := leader.Participants(nilCtx, c, "/nil/latch"); return err },
		"Leader":                func() error { _, err := leader.Leader(nilCtx, c, "/nil/latch"); return err },
		"Observe":               func() error { _, err := leader.Observe(nilCtx, c, "/nil/latch"); return err },
		"Latch.Await":           func() error { _, err := l.Await(nilCtx); return err },
		"Latch.Participants":    func() error { _, err := l.Participants(nilCtx); return err },
		"Selector.Participants": func() error { _, err := s.Participants(nilCtx); return err },
		"Latch.Start":           func() error { return l.Start(nilCtx) },
		"Selector.Start":        func() error { return s.Start(nilCtx) },
		"Selector.Requeue":      func() error { return s.Requeue(nilCtx) },
	})
	assert.Equal(t, before, req.Count(t, ""), "requests were sent")

	ctx := ctxT(t, 10*time.Second)
	require.NoError(t, l.Start(ctx))
	term, err := l.Await(ctx)
	require.NoError(t, err)
	id, err := leader.Leader(ctx, c, "/nil/latch")
	require.NoError(t, err)
	assert.Equal(t, "a", id)
	octx, stop := context.WithCancel(ctx)
	defer stop()
	o, err := leader.Observe(octx, c, "/nil/latch")
	require.NoError(t, err)
	select {
	case got := <-o.Changes():
		assert.Equal(t, term.Token(), got.Token)
	case <-ctx.Done():
		t.Fatal("the observer reported nothing")
	}
}
