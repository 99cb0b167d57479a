package leader_test

// Interop with the real Apache Curator 5.4 LeaderLatch and LeaderSelector,
// driven through the Java Agent of internal/curator: at most one leader
// across both languages, and each side reads the other's participant ids.

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/internal/curator"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/leader"
)

const agentSession = 10 * time.Second

// absenceWindow: how long to watch for an election that must not happen,
// taken only once the participant has verifiably queued.
const absenceWindow = time.Second

func TestGoAndCuratorLatchesElectOneLeader(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)
	a := newLatch(t, newClient(t, cl.Addrs()), "/elect/interop", "go-a")
	require.NoError(t, a.Start(context.Background()))
	_, err := a.Await(ctxT(t, 10*time.Second))
	require.NoError(t, err)

	java.Call(t, "latch-start j /elect/interop java-1", "latch-started", 10*time.Second)
	assert.Equal(t, []string{"go-a", "java-1"}, waitParticipants(t, obs, "/elect/interop", 2))
	java.ExpectNone(t, "latch-leader", absenceWindow)

	require.NoError(t, a.Close())
	java.Expect(t, "latch-leader j", 30*time.Second)
	id, err := leader.Leader(ctxT(t, 10*time.Second), obs, "/elect/interop")
	require.NoError(t, err)
	assert.Equal(t, "java-1", id)

	b := newLatch(t, newClient(t, cl.Addrs()), "/elect/interop", "go-b")
	require.NoError(t, b.Start(context.Background()))
	waitParticipants(t, obs, "/elect/interop", 2)
	assert.False(t, leading(b), "a Go latch never leads while Curator's does")
	java.Call(t, "latch-close j", "latch-closed", 10*time.Second)
	_, err = b.Await(ctxT(t, 30*time.Second))
	require.NoError(t, err)
}

func TestGoAndCuratorSelectorsTakeTurns(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)
	java.Call(t, "selector-start j /elect/sel-interop java-1", "selector-started", 10*time.Second)
	java.Expect(t, "selector-leading j", 30*time.Second)

	leading := make(chan struct{})
	release := make(chan struct{})
	s, err := leader.NewSelector(newClient(t, cl.Addrs()), "/elect/sel-interop", func(ctx context.Context, _ *hold.Hold) error {
		close(leading)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}, leader.WithParticipantID("go-1"))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	require.NoError(t, s.Start(context.Background()))
	assert.Equal(t, []string{"java-1", "go-1"}, waitParticipants(t, obs, "/elect/sel-interop", 2))
	select {
	case <-leading:
		t.Fatal("Go leads while Curator does")
	case <-time.After(absenceWindow):
	}

	java.Send("selector-release j")
	java.Expect(t, "selector-released j", 10*time.Second)
	select {
	case <-leading:
	case <-time.After(30 * time.Second):
		t.Fatal("Go never took over")
	}
	_, ok := s.Held()
	assert.True(t, ok)
	close(release)
	java.Call(t, "selector-close j", "selector-closed", 10*time.Second)
}
