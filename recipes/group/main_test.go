package group_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/group"
)

func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }

func newClient(t *testing.T, addrs []string, opts ...framework.Option) *framework.Client {
	return testkit.Client(t, addrs, opts...)
}

func ctxT(t *testing.T, d time.Duration) context.Context { return testkit.Ctx(t, d) }

func join(t *testing.T, c *framework.Client, path, id, payload string) *group.Member {
	t.Helper()
	m, err := group.New(c, path, id, []byte(payload))
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	require.NoError(t, m.Start(ctxT(t, 30*time.Second)))
	return m
}
