package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// thawEnv runs the test binary as a holder that is frozen and thawed.
const thawEnv = "ZKRECIPES_MUTEX_THAW"

// runThawHelper takes the mutex, says "held <session>", and waits for a
// line on stdin; the test freezes it meanwhile and writes the line before
// thawing it, so the line is the first thing it sees on thaw. It then asks
// for the mutex again, on the goroutine that holds it (a reentrant
// acquire hands out a new hold of the node it has), and says what it got.
//
// In mode "wait" it only waits in Acquire, and says what Acquire returned.
func runThawHelper(spec string) {
	parts := strings.Split(spec, "|") // addrs|path|sessionTimeout|mode
	c := testkit.ChildDial(parts[0], parts[2])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := mutex.New(c, parts[1])
	testkit.ChildCheck(err)
	if parts[3] == "wait" {
		fmt.Printf("session %d\n", c.Session().ID)
		h, err := m.Acquire(ctx)
		testkit.ChildCheck(err)
		fmt.Printf("handed-over session=%d\n", h.SessionID())
		testkit.ReadLine() // until killed
		return
	}
	h, err := m.Acquire(ctx)
	testkit.ChildCheck(err)
	fmt.Printf("held %d\n", h.SessionID())
	testkit.ReadLine()
	again, err := m.Acquire(ctx)
	switch {
	case err == nil:
		fmt.Printf("handed-over err=%v\n", again.Err())
	case errors.Is(err, zkrecipes.ErrHoldLost):
		fmt.Printf("refused hold-lost %v\n", err)
	default:
		fmt.Printf("refused other %v\n", err)
	}
	testkit.ReadLine() // until killed
}

// A holder frozen for longer than its session timeout, whose session the
// server expires and whose lock another client takes meanwhile, is handed
// no hold when it is thawed, whatever its goroutines do before the
// connection's reader finds the link dead: the acquire it makes first
// thing on thaw is refused as lost.
func TestThawedHolderIsHandedNoHoldAfterItsSessionExpired(t *testing.T) {
	const sessionTimeout = 2 * time.Second
	cl := zktest.Standalone(t)
	p := testkit.StartProc(t, thawEnv, testkit.ChildSpec(strings.Join(cl.Addrs(), ","), "/locks/thaw", sessionTimeout, "hold"))
	var session int64
	_, err := fmt.Sscanf(p.Expect(t, "held ", 30*time.Second), "held %d", &session)
	require.NoError(t, err)

	p.Freeze(t)
	other := newMutex(t, newClient(t, cl.Addrs()), "/locks/thaw")
	h, err := other.Acquire(ctxT(t, 30*time.Second))
	require.NoError(t, err, "the frozen holder's session did not expire")
	require.False(t, cl.SessionAlive(session))
	defer h.Release()

	p.Say(t, "thawed")
	p.Thaw(t)
	got := p.Expect(t, "refused ", 30*time.Second)
	assert.True(t, strings.HasPrefix(got, "refused hold-lost"), "on thaw: %s", got)
}

// A waiter frozen while the lock is handed to it (its predecessor's
// deletion waits in its socket) and thawed after the server expired its
// session never holds the lock on that session: what it is handed later is
// a grant on its new session, after it queued again.
func TestThawedWaiterIsHandedNoHoldFromWhatWaitedInItsSocket(t *testing.T) {
	const sessionTimeout = 2 * time.Second
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	first := newMutex(t, newClient(t, cl.Addrs()), "/locks/thaw-wait")
	h, err := first.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	p := testkit.StartProc(t, thawEnv, testkit.ChildSpec(strings.Join(cl.Addrs(), ","), "/locks/thaw-wait", sessionTimeout, "wait"))
	var session int64
	_, err = fmt.Sscanf(p.Expect(t, "session ", 30*time.Second), "session %d", &session)
	require.NoError(t, err)
	waitNodes(t, obs, "/locks/thaw-wait", 2)

	p.Freeze(t)
	require.NoError(t, h.Release()) // the waiter's turn, in its socket
	third := newMutex(t, newClient(t, cl.Addrs()), "/locks/thaw-wait")
	h3, err := third.Acquire(ctxT(t, 30*time.Second))
	require.NoError(t, err, "the frozen waiter's session did not expire")
	require.False(t, cl.SessionAlive(session))

	p.Thaw(t)
	waitNodes(t, obs, "/locks/thaw-wait", 2) // the waiter queued again, behind the third
	require.NoError(t, h3.Release())
	var got int64
	_, err = fmt.Sscanf(p.Expect(t, "handed-over ", 30*time.Second), "handed-over session=%d", &got)
	require.NoError(t, err)
	assert.NotEqual(t, session, got, "handed a hold on the session the server had expired")
}
