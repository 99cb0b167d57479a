package partition_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
)

// A worker that closes its client (on a fatal error, say): the client's
// Close returns, it does not wait for the worker that called it.
func TestClientCloseInsideWorkerReturns(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	closed := make(chan error, 1)
	p, err := partition.New(c, "/lifecycle/part", "m", partition.List("a"),
		partition.WithWorker(func(context.Context, string, *hold.Hold) { closed <- c.Close() }))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	require.NoError(t, p.Start(context.Background()))
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("the client's Close, called from a partitioner's worker, never returned")
	}
}

// A worker that closes its own partitioner: the Close returns, it does not
// wait for the worker that called it.
func TestPartitionerCloseInsideWorkerReturns(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	closed := make(chan error, 1)
	var p *partition.Partitioner
	p, err := partition.New(c, "/lifecycle/part-close", "m", partition.List("a"),
		partition.WithWorker(func(context.Context, string, *hold.Hold) { closed <- p.Close() }))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	require.NoError(t, p.Start(context.Background()))
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("the partitioner's Close, called from its own worker, never returned")
	}
}
