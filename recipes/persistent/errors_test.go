package persistent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/persistent"
)

// Bad input fails with a typed error naming the recipe and its path,
// before anything is sent; the Node stays usable.
func TestBadInputIsRefusedBeforeAnythingIsSent(t *testing.T) {
	cl := zktest.Standalone(t)
	req := testkit.NewRequests(t)
	c := newClient(t, cl.Addrs(), req.Option())
	before := req.Count(t, "")
	big := []byte(strings.Repeat("x", 2<<20))
	n, err := persistent.New(c, "/pn/errs/ok", []byte("ok"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = n.Close() })
	var nilNode *persistent.Node
	var nilTTL *persistent.TTLNode
	var nilCtx context.Context
	ctx := ctxT(t, 10*time.Second)

	newErr := func(f func() error) func() error { return f }
	testkit.MatchSentinels(t, map[string]testkit.Failure{
		"nil client": testkit.Named("persistent node /pn/x: ", newErr(func() error {
			_, err := persistent.New(nil, "/pn/x", nil)
			return err
		}), zkrecipes.ErrInvalidArgument),
		"root": testkit.Named("persistent node /: ", func() error {
			_, err := persistent.New(c, "/", nil)
			return err
		}, zkrecipes.ErrInvalidPath),
		"bad path": testkit.Named("persistent node a/b: ", func() error {
			_, err := persistent.New(c, "a/b", nil)
			return err
		}, zkrecipes.ErrInvalidPath),
		"too large": testkit.Named("persistent node /pn/x: ", func() error {
			_, err := persistent.New(c, "/pn/x", big)
			return err
		}, zkrecipes.ErrTooLarge),
		"zero TTL": testkit.Named("persistent node /pn/x: ", func() error {
			_, err := persistent.New(c, "/pn/x", nil, persistent.WithTTL(0))
			return err
		}, zkrecipes.ErrInvalidArgument),
		"ttl node zero TTL": testkit.Named("persistent ttl node /pn/x: ", func() error {
			_, err := persistent.NewTTL(c, "/pn/x", nil, 0)
			return err
		}, zkrecipes.ErrInvalidArgument),
		"ttl node bad child": testkit.Named("persistent ttl node /pn/x: ", func() error {
			_, err := persistent.NewTTL(c, "/pn/x", nil, time.Second, persistent.WithChildName("a/b"))
			return err
		}, zkrecipes.ErrInvalidArgument),
		"ttl node bad factor": testkit.Named("persistent ttl node /pn/x: ", func() error {
			_, err := persistent.NewTTL(c, "/pn/x", nil, time.Second, persistent.WithTouchFactor(0))
			return err
		}, zkrecipes.ErrInvalidArgument),
		"nil ctx Start":   testkit.Named("persistent node /pn/errs/ok: ", func() error { return n.Start(nilCtx) }, zkrecipes.ErrInvalidArgument),
		"nil ctx Set":     testkit.Named("persistent node /pn/errs/ok: ", func() error { return n.Set(nilCtx, nil) }, zkrecipes.ErrInvalidArgument),
		"nil ctx Wait":    testkit.Named("persistent node /pn/errs/ok: ", func() error { return n.Wait(nilCtx) }, zkrecipes.ErrInvalidArgument),
		"Set too large":   testkit.Named("persistent node /pn/errs/ok: set: data of ", func() error { return n.Set(ctx, big) }, zkrecipes.ErrTooLarge),
		"Set not started": testkit.Named("persistent node /pn/errs/ok: ", func() error { return n.Set(ctx, []byte("x")) }, zkrecipes.ErrNotStarted),
		"Wait not started": testkit.Named("persistent node /pn/errs/ok: ", func() error { return n.Wait(ctx) },
			zkrecipes.ErrNotStarted),
		"nil node Start": testkit.Named("persistent node: ", func() error { return nilNode.Start(ctx) }, zkrecipes.ErrInvalidArgument),
		"zero node Set":  testkit.Named("persistent node: ", func() error { return (&persistent.Node{}).Set(ctx, nil) }, zkrecipes.ErrInvalidArgument),
		"nil node Close": testkit.Named("persistent node: ", func() error { return nilNode.Close() }, zkrecipes.ErrInvalidArgument),
		"nil ttl Start":  testkit.Named("persistent ttl node: ", func() error { return nilTTL.Start(ctx) }, zkrecipes.ErrInvalidArgument),
		"zero ttl Close": testkit.Named("persistent ttl node: ", func() error { return (&persistent.TTLNode{}).Close() }, zkrecipes.ErrInvalidArgument),
	})
	assert.Equal(t, before, req.Count(t, ""), "requests were sent")

	// Still usable.
	require.NoError(t, n.Start(ctx))
	require.ErrorIs(t, n.Start(ctx), zkrecipes.ErrStarted)
	require.NoError(t, n.Set(ctx, []byte("ok2")))
	require.NoError(t, n.Close())
	assert.ErrorIs(t, n.Set(ctx, []byte("x")), zkrecipes.ErrClosed)
	assert.ErrorIs(t, n.Start(ctx), zkrecipes.ErrClosed)
	assert.ErrorIs(t, n.Wait(ctx), zkrecipes.ErrClosed)
}
