package framework

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/zktest"
)

// A protected create whose caller gives up while an attempt is still on
// its way must leave nothing behind, even when that attempt would send its
// create after the cleanup first looked. The chaos suite found this as a
// node of a live session blocking a mutex's queue for a minute and a half:
// a retried create, abandoned across a server restart, landing late.
func TestAbandonedProtectedCreateLeavesNoNode(t *testing.T) {
	cl := zktest.Standalone(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, cl.Addrs(), WithSessionTimeout(4*time.Second))
	require.NoError(t, err)
	defer c.Close()

	release := make(chan struct{})
	var once sync.Once
	// Deferred after Close, so it runs first: an early failure must not
	// leave the attempt blocked while Close waits for it.
	defer once.Do(func() { close(release) })
	// The attempt is past its own ctx check when the caller gives up, so
	// its create really goes out afterwards, as a create queued inside
	// go-zookeeper would.
	testHookBeforeCreate = func(ctx context.Context) {
		<-ctx.Done() // the caller has given up on this attempt
		<-release
	}
	t.Cleanup(func() { testHookBeforeCreate = nil })

	short, stop := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = c.Create(short, "/abandoned/lock-", []byte("x"), WithMode(EphemeralSequential), WithParentContainers(), Protected())
	stop()
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// Let the cleanup run first if it does not wait for the attempt; it
	// must not finish before the attempt does.
	drained := make(chan error, 1)
	go func() { drained <- c.Drain(ctx) }()
	select {
	case <-drained:
		once.Do(func() { close(release) })
		t.Fatal("the cleanup finished while an attempt of the create was still going")
	case <-time.After(300 * time.Millisecond):
	}
	once.Do(func() { close(release) })
	require.NoError(t, <-drained)
	require.Never(t, func() bool {
		kids, _, err := c.Children(ctx, "/abandoned")
		return err == nil && len(kids) > 0
	}, time.Second, 50*time.Millisecond, "a node of the abandoned create was left")
}
