package discovery_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// Bad input fails with a typed error naming the recipe and its path,
// before anything is sent; the Discovery stays usable.
func TestBadInputIsRefusedBeforeAnythingIsSent(t *testing.T) {
	cl := zktest.Standalone(t)
	req := testkit.NewRequests(t)
	c := newClient(t, cl.Addrs(), req.Option())
	d := newDiscovery(t, c, "/services")
	before := req.Count(t, "")
	ctx := ctxT(t, 10*time.Second)
	var nilCtx context.Context
	var nilD *discovery.Discovery
	good := discovery.NewInstance("svc")
	with := func(f func(*discovery.Instance)) discovery.Instance { i := good; f(&i); return i }
	reg := func(i discovery.Instance) func() error { return func() error { return d.Register(ctx, i) } }
	const prefix = "service discovery /services: "
	testkit.MatchSentinels(t, map[string]testkit.Failure{
		"nil client":  testkit.Named("service discovery /s: ", func() error { _, err := discovery.New(nil, "/s"); return err }, zkrecipes.ErrInvalidArgument),
		"root":        testkit.Named("service discovery /: ", func() error { _, err := discovery.New(c, "/"); return err }, zkrecipes.ErrInvalidPath),
		"empty name":  testkit.Named(prefix, reg(with(func(i *discovery.Instance) { i.Name = "" })), zkrecipes.ErrInvalidArgument),
		"name with /": testkit.Named(prefix, reg(with(func(i *discovery.Instance) { i.Name = "a/b" })), zkrecipes.ErrInvalidArgument),
		"id ..":       testkit.Named(prefix, reg(with(func(i *discovery.Instance) { i.ID = ".." })), zkrecipes.ErrInvalidPath),
		"bad type":    testkit.Named(prefix, reg(with(func(i *discovery.Instance) { i.ServiceType = "FOO" })), zkrecipes.ErrInvalidArgument),
		"bad payload": testkit.Named(prefix, reg(with(func(i *discovery.Instance) { i.Payload = json.RawMessage("{") })),
			zkrecipes.ErrInvalidArgument),
		"too large": testkit.Named(prefix, reg(with(func(i *discovery.Instance) {
			i.Payload = json.RawMessage(`"` + strings.Repeat("x", 2<<20) + `"`)
		})), zkrecipes.ErrTooLarge),
		"nil ctx Register":   testkit.Named(prefix, func() error { return d.Register(nilCtx, good) }, zkrecipes.ErrInvalidArgument),
		"nil ctx Query":      testkit.Named(prefix, func() error { _, err := d.QueryForInstances(nilCtx, "svc"); return err }, zkrecipes.ErrInvalidArgument),
		"bad query name":     testkit.Named(prefix, func() error { _, err := d.QueryForInstances(ctx, "a/b"); return err }, zkrecipes.ErrInvalidArgument),
		"update unknown":     testkit.Named(prefix, func() error { return d.Update(ctx, good) }, discovery.ErrNotRegistered),
		"unregister unknown": testkit.Named(prefix, func() error { return d.Unregister(good) }, discovery.ErrNotRegistered),
		"nil discovery":      testkit.Named("service discovery: ", func() error { return nilD.Register(ctx, good) }, zkrecipes.ErrInvalidArgument),
		"bad policy": testkit.Named("service provider /services/svc: ", func() error {
			_, err := d.NewProvider("svc", discovery.WithDownInstancePolicy(0, 1))
			return err
		}, zkrecipes.ErrInvalidArgument),
		"nil strategy": testkit.Named("service provider /services/svc: ", func() error {
			_, err := d.NewProvider("svc", discovery.WithStrategy(nil))
			return err
		}, zkrecipes.ErrInvalidArgument),
	})
	assert.Equal(t, before, req.Count(t, ""), "requests were sent")
	require.NoError(t, d.Register(ctx, good))
	require.NoError(t, d.Close())
	require.NoError(t, d.Close(), "idempotent")
	assert.ErrorIs(t, d.Register(ctx, good), zkrecipes.ErrClosed)
}

// A Provider's errors name the provider, not the cache inside it.
func TestProviderErrorsNameTheProvider(t *testing.T) {
	cl := zktest.Standalone(t)
	d := newDiscovery(t, newClient(t, cl.Addrs()), "/services")
	p, err := d.NewProvider("none")
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	named := func(err error, want error) {
		t.Helper()
		require.ErrorIs(t, err, want)
		assert.True(t, strings.HasPrefix(err.Error(), "service provider /services/none: "), err.Error())
	}
	_, err = p.Instances()
	named(err, zkrecipes.ErrNotStarted)
	require.NoError(t, p.Start(ctxT(t, 30*time.Second)))
	_, err = p.Instance()
	named(err, discovery.ErrNoInstance)
	assert.Equal(t, "service provider /services/none: no instance available", err.Error())
	require.NoError(t, p.Close())
	_, err = p.Instance()
	named(err, zkrecipes.ErrClosed)
}

// Unregister after Close says the Discovery is closed, not that the
// instance was never registered.
func TestUnregisterAfterCloseIsErrClosed(t *testing.T) {
	cl := zktest.Standalone(t)
	d := newDiscovery(t, newClient(t, cl.Addrs()), "/services")
	inst := discovery.NewInstance("svc")
	require.NoError(t, d.Register(ctxT(t, 30*time.Second), inst))
	require.NoError(t, d.Close())
	err := d.Unregister(inst)
	assert.ErrorIs(t, err, zkrecipes.ErrClosed)
	assert.NotErrorIs(t, err, discovery.ErrNotRegistered)
}
