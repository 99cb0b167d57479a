package discovery_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// Sticky over no strategy is refused when the Provider is made, not by a
// panic in Instance.
func TestStickyOverNilStrategyIsRefused(t *testing.T) {
	cl := zktest.Standalone(t)
	d := newDiscovery(t, newClient(t, cl.Addrs()), "/services")
	p, err := d.NewProvider("svc", discovery.WithStrategy(discovery.Sticky(nil)))
	if p != nil {
		t.Cleanup(func() { _ = p.Close() })
		assert.NotPanics(t, func() { _, _ = p.Instance() })
	}
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
}

// An Instance literal with only a name and an id is enabled, as
// Curator's builder makes every instance.
func TestZeroValueInstanceIsRegisteredEnabled(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	d := newDiscovery(t, c, "/services")
	ctx := ctxT(t, 30*time.Second)
	require.NoError(t, d.Register(ctx, discovery.Instance{Name: "plain", ID: "one"}))
	data, _ := getNode(t, c, "/services/plain/one")
	assert.Contains(t, string(data), `"enabled":true`)

	p, err := d.NewProvider("plain")
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	require.NoError(t, p.Start(ctx))
	got, err := p.Instance()
	require.NoError(t, err)
	assert.Equal(t, "one", got.ID)
}
