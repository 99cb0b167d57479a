package mutex_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// Under every shape of link fault, the holder's loss signal fires before
// any other session is granted the lock: both ways dropped (partition),
// only its requests dropped while the server's watch events still reach
// it, only the server's replies dropped, and a reset link.
func TestLossSignalFiresBeforeAnyOtherGrantUnderEveryFaultShape(t *testing.T) {
	for name, fault := range map[string]func(*zktest.Proxy){
		"both ways":        (*zktest.Proxy).Blackhole,
		"requests dropped": (*zktest.Proxy).DropRequests,
		"replies dropped":  (*zktest.Proxy).DropReplies,
		"connection reset": (*zktest.Proxy).Cut,
	} {
		t.Run(name, func(t *testing.T) {
			cl := zktest.Standalone(t)
			p := cl.NewProxy()
			holderClient := newClient(t, p.Addrs())
			holder := newMutex(t, holderClient, "/locks/shape")
			waiter := newMutex(t, newClient(t, cl.Addrs()), "/locks/shape")
			noise := newClient(t, cl.Addrs())

			// Watches the holder keeps through the fault: each change by
			// another client reaches it as an event even when none of its
			// own requests get through.
			const n = 150
			for i := range n {
				path := fmt.Sprintf("/noise/n%d", i)
				_, err := noise.Create(ctxT(t, 10*time.Second), path, nil, framework.WithParents())
				require.NoError(t, err)
				_, _, _, err = holderClient.GetW(ctxT(t, 10*time.Second), path)
				require.NoError(t, err)
			}

			h, err := holder.Acquire(ctxT(t, 10*time.Second))
			require.NoError(t, err)
			got := acquireAsync(waiter, 90*time.Second)
			waitNodes(t, noise, "/locks/shape", 2)

			lost := make(chan time.Time, 1)
			go func() { <-h.Done(); lost <- time.Now() }()
			stop := testkit.Repeat(40*time.Millisecond, n, func(i int) {
				_, _ = noise.Set(context.Background(), fmt.Sprintf("/noise/n%d", i), []byte("x"), -1)
			})
			fault(p)

			var lostAt time.Time
			select {
			case lostAt = <-lost:
			case g := <-got:
				t.Fatalf("another session was granted at %v while the holder's signal had not fired (err %v)", g.at, g.err)
			case <-time.After(30 * time.Second):
				t.Fatal("the holder's loss signal never fired")
			}
			stop()
			assert.Error(t, h.Err())

			p.Heal()
			assert.ErrorIs(t, holder.Release(), zkrecipes.ErrHoldLost)
			g := <-got
			require.NoError(t, g.err)
			assert.True(t, lostAt.Before(g.at), "holder learned at %v, waiter granted at %v", lostAt, g.at)
			assert.Greater(t, g.hold.Token(), h.Token())
			require.NoError(t, g.release())
		})
	}
}

// A reply that comes late proves only that the server heard the request
// when it was sent, not when the answer arrived. Here the server's answers
// take half a session timeout to come back, and right after a request goes
// out, nothing the holder sends reaches the server any more: the server
// last heard it at about sent, and may expire its session a timeout after
// that. The hold's signal must fire before then. Before, the late reply
// counted as proof at its arrival, and the signal fired half a timeout
// too late.
func TestALateReplyProvesLifeOnlyAsOfItsRequest(t *testing.T) {
	const timeout = 4 * time.Second
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	holderClient := newClient(t, p.Addrs(), framework.WithSessionTimeout(timeout))
	h, err := newMutex(t, holderClient, "/locks/late").Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)

	p.DelayReplies(timeout / 2)
	sent := time.Now()
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		_, _, _ = holderClient.Exists(context.Background(), "/locks/late")
	}()
	time.Sleep(50 * time.Millisecond) // on loopback the request is at the server by now
	p.DropRequests()

	select {
	case <-h.Done():
		assert.Less(t, time.Since(sent), timeout, "the signal fired after the server could expire the session")
	case <-time.After(2 * timeout):
		t.Fatal("the holder's loss signal never fired")
	}
	p.Heal()
	<-answered
}
