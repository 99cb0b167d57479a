package framework_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A recipe's Close ends its background work by cancelling the task's life
// context, a context with no deadline. A task in a request on a link that
// has just stopped answering must give it up at once, as it did when every
// request was handed to a worker and raced against the context: Close is
// to return within the release timeout (integration/closebound_test.go),
// never after a request's wait.
func TestRuntimeCloseDoesNotWaitForATasksRequest(t *testing.T) {
	cl := zktest.Standalone(t)
	c, p := dialFault(t, cl, framework.WithSessionTimeout(12*time.Second), framework.WithReleaseTimeout(time.Second))
	_, err := c.Create(t.Context(), "/r", nil)
	require.NoError(t, err)

	r := framework.NewRuntime(c, "widget", "/r")
	p.DropRepliesFrom(zktest.OpGetData) // the task's read reaches the server; no reply comes back
	inRead := make(chan struct{})
	require.True(t, r.Go(func(life context.Context) {
		close(inRead)
		_, _, _ = c.Get(life, "/r")
	}))
	<-inRead
	require.Eventually(t, func() bool { return p.RequestsOf(zktest.OpGetData) > 0 }, 5*time.Second, time.Millisecond)

	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- r.Close(nil) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return in 30s")
	}
	took := time.Since(start)
	assert.Less(t, took, 2*time.Second, "Runtime.Close waited %v for its task's request (the receive timeout is 8s)", took)
	p.Heal()
}

// A read Into w that fails must unroute its own watch, not another's. Read
// B is on its way (held by the proxy) when an older watch of the node
// fires: the event takes every route of the node's data watches into w,
// B's with it, and the reader, told, reads again (C). B then fails (its
// caller gave up). Its remove finds C's route, the only one of w's data
// watches left, and takes it: C's watch is set on the server with nothing
// routed to it, so the next change is told to nobody, and the reader,
// waiting for w, never reads the node again.
func TestFailedReadIntoLeavesTheRereadsWatchRouted(t *testing.T) {
	cl := zktest.Standalone(t)
	c, p := dialFault(t, cl)
	obs := observer(t, cl)
	_, err := obs.Create(t.Context(), "/n", []byte("0"))
	require.NoError(t, err)

	// An older watch on the node: a plain GetW's (a lister, another recipe).
	_, _, _, err = c.GetW(t.Context(), "/n")
	require.NoError(t, err)

	w := framework.NewWatches()
	p.StallRequestsFrom(zktest.OpGetData)
	ctxB, cancelB := context.WithTimeout(t.Context(), time.Minute) // a deadline: handed off, returns at cancel
	bDone := make(chan error, 1)
	go func() {
		_, _, _, err := c.GetW(ctxB, "/n", framework.Into(w))
		bDone <- err
	}()
	require.Eventually(t, p.Stalled, 5*time.Second, time.Millisecond)

	_, err = obs.Set(t.Context(), "/n", []byte("1"), -1) // fires the older watch: routed into w
	require.NoError(t, err)
	waitFired(t, w, "the older watch's event")

	cDone := make(chan error, 1)
	go func() { // the reader reads again, as told
		_, _, _, err := c.GetW(t.Context(), "/n", framework.Into(w))
		cDone <- err
	}()
	time.Sleep(200 * time.Millisecond) // let C add its route (no observable signal: it is queued behind B)
	cancelB()
	require.Error(t, <-bDone)
	p.Release()
	require.NoError(t, <-cDone)

	_, err = obs.Set(t.Context(), "/n", []byte("2"), -1)
	require.NoError(t, err)
	waitFired(t, w, "the change after C's read: C's watch")
}

func waitFired(t *testing.T, w *framework.Watches, what string) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case <-w.Ready():
			if len(w.Take()) > 0 {
				return
			}
		case <-deadline:
			t.Fatalf("no event in w within 5s: %s", what)
		}
	}
}
