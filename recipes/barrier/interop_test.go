package barrier_test

// Interop with the real Apache Curator 5.4 DistributedBarrier and
// DistributedDoubleBarrier, driven through the Java Agent of
// internal/curator: Go and Java on one path see and respect each other.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/curator"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/barrier"
)

const agentSession = 10 * time.Second

func TestBarrierSetByCuratorBlocksGoWaitersUntilCuratorRemovesIt(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)
	java.Call(t, "barrier-set /b/interop/java-gate", "barrier-set ", 10*time.Second)
	data, st, err := obs.Get(context.Background(), "/b/interop/java-gate")
	require.NoError(t, err)
	assert.Zero(t, st.EphemeralOwner)
	assert.Equal(t, framework.DefaultParticipantID(), string(data), "Curator's default data, which ours is too")

	var waits []<-chan error
	for range 2 {
		w := newBarrier(t, newClient(t, cl.Addrs()), "/b/interop/java-gate")
		waits = append(waits, async(func() error { return w.Wait(ctxT(t, 60*time.Second)) }))
	}
	for _, got := range waits {
		blocked(t, got, "Go Wait on Curator's barrier")
	}
	java.Call(t, "barrier-remove /b/interop/java-gate", "barrier-removed ", 10*time.Second)
	for _, got := range waits {
		require.NoError(t, returned(t, got, 10*time.Second, "Go Wait after Curator's removeBarrier"))
	}
}

func TestBarrierSetByGoBlocksCuratorWaitersUntilGoRemovesIt(t *testing.T) {
	cl := zktest.Standalone(t)
	java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)
	b := newBarrier(t, newClient(t, cl.Addrs()), "/b/interop/go-gate")
	require.NoError(t, b.Set(ctxT(t, 10*time.Second)))

	java.Send("barrier-wait j1 /b/interop/go-gate 60000")
	java.Send("barrier-wait j2 /b/interop/go-gate 60000")
	java.ExpectNone(t, "barrier-waited", absenceWindow)
	require.NoError(t, b.Remove(ctxT(t, 10*time.Second)))
	got := []string{java.Expect(t, "barrier-waited ", 10*time.Second), java.Expect(t, "barrier-waited ", 10*time.Second)}
	assert.ElementsMatch(t, []string{"barrier-waited j1 true", "barrier-waited j2 true"}, got)

	// And a Curator timeout is Curator's false, not a pass.
	require.NoError(t, b.Set(ctxT(t, 10*time.Second)))
	assert.Equal(t, "barrier-waited j3 false", java.Call(t, "barrier-wait j3 /b/interop/go-gate 200", "barrier-waited j3", 10*time.Second))
}

// Two Go and two Java members of one double barrier of four: none enters
// before the fourth arrives, whichever side it is on, none leaves before
// the last one leaves, and the layout is Curator's.
func TestMixedGoAndCuratorMembersEnterAndLeaveTogether(t *testing.T) {
	for _, last := range []string{"go", "java"} {
		t.Run("last is "+last, func(t *testing.T) {
			cl := zktest.Standalone(t)
			obs := newClient(t, cl.Addrs())
			java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)
			const path = "/b/interop/double"
			g1 := newDouble(t, newClient(t, cl.Addrs()), path, 4)
			g2 := newDouble(t, newClient(t, cl.Addrs()), path, 4)

			e1 := async(func() error { return g1.Enter(ctxT(t, 60*time.Second)) })
			java.Send("dbarrier-enter j1 " + path + " 4 60000")
			members(t, obs, path, 2)
			var e2 <-chan error
			if last == "java" {
				e2 = async(func() error { return g2.Enter(ctxT(t, 60*time.Second)) })
			} else {
				java.Send("dbarrier-enter j2 " + path + " 4 60000")
			}
			kids := members(t, obs, path, 3)
			blocked(t, e1, "Go Enter with 3 of 4")
			java.ExpectNone(t, "dbarrier-entered", absenceWindow)
			for _, k := range kids {
				assert.Regexp(t, memberNode, k, "Curator's member node name")
				data, st, err := obs.Get(context.Background(), path+"/"+k)
				require.NoError(t, err)
				assert.NotZero(t, st.EphemeralOwner)
				assert.Equal(t, framework.DefaultParticipantID(), string(data))
			}

			if last == "java" {
				java.Send("dbarrier-enter j2 " + path + " 4 60000")
			} else {
				e2 = async(func() error { return g2.Enter(ctxT(t, 60*time.Second)) })
			}
			require.NoError(t, returned(t, e1, 30*time.Second, "Go Enter"))
			require.NoError(t, returned(t, e2, 30*time.Second, "Go Enter"))
			entered := []string{java.Expect(t, "dbarrier-entered ", 30*time.Second), java.Expect(t, "dbarrier-entered ", 30*time.Second)}
			assert.ElementsMatch(t, []string{"dbarrier-entered j1 true", "dbarrier-entered j2 true"}, entered)
			_, st, err := obs.Get(context.Background(), path+"/ready")
			require.NoError(t, err)
			assert.Zero(t, st.EphemeralOwner, "ready is persistent, as Curator makes it")
			members(t, obs, path, 4)

			// Everyone but the last one leaves: nobody returns.
			l1 := async(func() error { return g1.Leave(ctxT(t, 60*time.Second)) })
			java.Send("dbarrier-leave j1 60000")
			var l2 <-chan error
			if last == "java" {
				l2 = async(func() error { return g2.Leave(ctxT(t, 60*time.Second)) })
			} else {
				java.Send("dbarrier-leave j2 60000")
			}
			blocked(t, l1, "Go Leave before the last member leaves")
			java.ExpectNone(t, "dbarrier-left", absenceWindow)

			if last == "java" {
				java.Send("dbarrier-leave j2 60000")
			} else {
				l2 = async(func() error { return g2.Leave(ctxT(t, 60*time.Second)) })
			}
			require.NoError(t, returned(t, l1, 30*time.Second, "Go Leave"))
			require.NoError(t, returned(t, l2, 30*time.Second, "Go Leave"))
			left := []string{java.Expect(t, "dbarrier-left ", 30*time.Second), java.Expect(t, "dbarrier-left ", 30*time.Second)}
			assert.ElementsMatch(t, []string{"dbarrier-left j1 true", "dbarrier-left j2 true"}, left)
			waitNodes(t, obs, path, 0)
		})
	}
}

// A Curator member that times out on enter leaves its node (Curator's
// behaviour): it still counts, and Go members see it. The Go side must not
// be confused by a node it did not make.
func TestCuratorMemberCountsForGoMembers(t *testing.T) {
	cl := zktest.Standalone(t)
	java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)
	const path = "/b/interop/count"
	got := java.Call(t, "dbarrier-enter j1 "+path+" 2 200", "dbarrier-entered j1", 10*time.Second)
	require.True(t, strings.HasSuffix(got, "false"), "Curator's timed out enter: %s", got)
	g := newDouble(t, newClient(t, cl.Addrs()), path, 2)
	require.NoError(t, g.Enter(ctxT(t, 10*time.Second)), "Curator's leftover node counts as a member")
	assert.ErrorIs(t, g.Enter(ctxT(t, time.Second)), barrier.ErrAlreadyEntered)
}
