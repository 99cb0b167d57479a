package group_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/group"
)

func TestBadInputIsRefusedBeforeAnythingIsSent(t *testing.T) {
	cl := zktest.Standalone(t)
	req := testkit.NewRequests(t)
	c := newClient(t, cl.Addrs(), req.Option())
	before := req.Count(t, "")
	m, err := group.New(c, "/groups/e", "a", nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	var nilCtx context.Context
	var nilM *group.Member
	ctx := ctxT(t, 10*time.Second)
	testkit.MatchSentinels(t, map[string]testkit.Failure{
		"nil client":  testkit.Named("group member /g: ", func() error { _, err := group.New(nil, "/g", "a", nil); return err }, zkrecipes.ErrInvalidArgument),
		"root":        testkit.Named("group member /: ", func() error { _, err := group.New(c, "/", "a", nil); return err }, zkrecipes.ErrInvalidPath),
		"empty id":    testkit.Named("group member /g: ", func() error { _, err := group.New(c, "/g", "", nil); return err }, zkrecipes.ErrInvalidArgument),
		"id with /":   testkit.Named("group member /g: ", func() error { _, err := group.New(c, "/g", "a/b", nil); return err }, zkrecipes.ErrInvalidArgument),
		"id ..":       testkit.Named("group member /g: ", func() error { _, err := group.New(c, "/g", "..", nil); return err }, zkrecipes.ErrInvalidPath),
		"too large":   testkit.Named("group member /g: ", func() error { _, err := group.New(c, "/g", "a", []byte(strings.Repeat("x", 2<<20))); return err }, zkrecipes.ErrTooLarge),
		"nil ctx":     testkit.Named("group member /groups/e: ", func() error { return m.Start(nilCtx) }, zkrecipes.ErrInvalidArgument),
		"not started": testkit.Named("group member /groups/e: ", func() error { _, err := m.Members(); return err }, zkrecipes.ErrNotStarted),
		"nil member":  testkit.Named("group member: ", func() error { return nilM.Start(ctx) }, zkrecipes.ErrInvalidArgument),
	})
	assert.Equal(t, before, req.Count(t, ""), "requests were sent")
	require.NoError(t, m.Start(ctx))
	assert.ErrorIs(t, m.Start(ctx), zkrecipes.ErrStarted)
	require.NoError(t, m.Close())
	require.NoError(t, m.Close())
	_, err = m.Members()
	assert.ErrorIs(t, err, zkrecipes.ErrClosed)
}

func TestCloseLeavesNoGoroutine(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	before := testkit.LeakBase()
	for _, state := range []string{"joined", "link down", "start waiting"} {
		t.Run(state, func(t *testing.T) {
			m, err := group.New(c, "/groups/leak", "a", nil)
			require.NoError(t, err)
			sub := m.Subscribe()
			switch state {
			case "start waiting":
				p.Blackhole()
				go func() { _ = m.Start(ctxT(t, time.Minute)) }()
			default:
				require.NoError(t, m.Start(ctxT(t, 30*time.Second)))
				if state == "link down" {
					p.Blackhole()
				}
			}
			require.NoError(t, m.Close())
			for range sub.Changes() {
			}
			p.Heal()
			require.NoError(t, c.Drain(ctxT(t, 30*time.Second)))
			goleak.VerifyNone(t, before...)
		})
	}
}
