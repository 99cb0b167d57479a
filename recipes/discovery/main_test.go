package discovery_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }

func newClient(t *testing.T, addrs []string, opts ...framework.Option) *framework.Client {
	return testkit.Client(t, addrs, opts...)
}

func ctxT(t *testing.T, d time.Duration) context.Context { return testkit.Ctx(t, d) }

func newDiscovery(t *testing.T, c *framework.Client, base string) *discovery.Discovery {
	t.Helper()
	d, err := discovery.New(c, base)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func port(n int) *int { return &n }
