package discovery_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// Curator's node kinds per service type: Static and Permanent are
// persistent, DynamicSequential is ephemeral-sequential under id+sequence
// (protected, so that a lost reply never registers it twice).
func TestServiceTypesMakeCuratorsNodeKinds(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	d := newDiscovery(t, c, "/services")
	ctx := ctxT(t, 30*time.Second)

	static := discovery.NewInstance("kinds")
	static.ID, static.ServiceType = "static", discovery.Static
	require.NoError(t, d.Register(ctx, static))
	_, st := getNode(t, c, "/services/kinds/static")
	assert.Zero(t, st.EphemeralOwner, "a Static instance's node is persistent")

	seq := discovery.NewInstance("kinds")
	seq.ID, seq.ServiceType = "seq-", discovery.DynamicSequential
	require.NoError(t, d.Register(ctx, seq))
	var seqNode string
	for _, name := range testkit.Children(t, c, "/services/kinds") {
		if strings.HasPrefix(framework.StripProtected(name), "seq-") {
			seqNode = name
		}
	}
	assert.Regexp(t, `^_c_[0-9a-f-]{36}-seq-\d{10}$`, seqNode)
	_, st = getNode(t, c, "/services/kinds/"+seqNode)
	assert.Equal(t, c.Session().ID, st.EphemeralOwner)

	got, err := d.QueryForInstances(ctx, "kinds")
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, discovery.Static, got[1].ServiceType)
	assert.Equal(t, discovery.DynamicSequential, got[0].ServiceType)

	require.NoError(t, d.Close())
	require.NoError(t, c.Drain(ctx))
	assert.Empty(t, testkit.Children(t, c, "/services/kinds"), "Close unregisters every kind, as Curator's")
}
