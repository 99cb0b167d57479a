package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

func TestMain(m *testing.M) {
	if runHelper() {
		return
	}
	if spec := os.Getenv(thawEnv); spec != "" {
		runThawHelper(spec)
		return
	}
	os.Exit(zktest.Main(m))
}

var (
	newClient = testkit.Client
	ctxT      = testkit.Ctx
	nodes     = testkit.Children
	waitNodes = testkit.WaitChildren
)

func newMutex(t testing.TB, c *framework.Client, path string, opts ...mutex.Option) *mutex.Mutex {
	t.Helper()
	m, err := mutex.New(c, path, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

var curatorNode = regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-\d{10}$`)

func TestAcquireCreatesCuratorNodeWithParticipantID(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	m := newMutex(t, c, "/locks/a", mutex.WithParticipantID("worker-1"))

	h, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	kids := nodes(t, c, "/locks/a")
	require.Len(t, kids, 1)
	assert.Regexp(t, curatorNode, kids[0])
	assert.Equal(t, "/locks/a/"+kids[0], h.Path())
	data, st, err := c.Get(context.Background(), h.Path())
	require.NoError(t, err)
	assert.Equal(t, "worker-1", string(data))
	assert.Equal(t, st.Czxid, h.Token())
	assert.Equal(t, c.Session().ID, st.EphemeralOwner)
	assert.Nil(t, h.Err())

	require.NoError(t, m.Release())
	assert.Empty(t, nodes(t, c, "/locks/a"))
	<-h.Done()
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrReleased)
}

func TestContendersNeverOverlapAndEnterInQueueOrder(t *testing.T) {
	cl := zktest.Standalone(t)
	const contenders, rounds = 5, 6
	var inside atomic.Int32
	var mu sync.Mutex
	var order []string // lock node names in the order they entered
	var wg sync.WaitGroup
	for i := 0; i < contenders; i++ {
		m := newMutex(t, newClient(t, cl.Addrs()), "/locks/fifo")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				h, err := m.Acquire(ctxT(t, 60*time.Second))
				if !assert.NoError(t, err) {
					return
				}
				assert.Equal(t, int32(1), inside.Add(1), "overlap")
				mu.Lock()
				order = append(order, h.Path())
				mu.Unlock()
				time.Sleep(time.Millisecond) // hold briefly so others queue up
				inside.Add(-1)
				assert.NoError(t, m.Release())
			}
		}()
	}
	wg.Wait()
	require.Len(t, order, contenders*rounds)
	for i := 1; i < len(order); i++ {
		assert.Less(t, seq(order[i-1]), seq(order[i]), "FIFO: entered out of sequence order")
	}
}

func seq(path string) string { return path[len(path)-10:] }

func TestReentrantPerGoroutine(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	m := newMutex(t, c, "/locks/re")
	ctx := ctxT(t, 10*time.Second)

	h1, err := m.Acquire(ctx)
	require.NoError(t, err)
	h2, err := m.Acquire(ctx)
	require.NoError(t, err)
	assert.NotSame(t, h1, h2, "each acquisition is a handle of its own")
	assert.Equal(t, h1.Token(), h2.Token(), "on the same node")
	assert.Len(t, nodes(t, c, "/locks/re"), 1)

	require.NoError(t, m.Release())
	assert.Len(t, nodes(t, c, "/locks/re"), 1, "still held once")
	assert.Nil(t, h1.Err())
	require.NoError(t, m.Release())
	assert.Empty(t, nodes(t, c, "/locks/re"))
	assert.ErrorIs(t, m.Release(), zkrecipes.ErrNotHeld, "more releases than acquires")
}

func TestReleaseFromAnotherGoroutineIsNotOwner(t *testing.T) {
	cl := zktest.Standalone(t)
	m := newMutex(t, newClient(t, cl.Addrs()), "/locks/owner")
	_, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	errc := make(chan error)
	go func() { errc <- m.Release() }()
	assert.ErrorIs(t, <-errc, zkrecipes.ErrNotOwner)
	_, held := m.Held()
	assert.True(t, held, "the owner still holds it")
	require.NoError(t, m.Release())
}

func TestGoroutinesOfOneMutexContendLikeProcesses(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	m := newMutex(t, c, "/locks/shared")
	_, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		_, err := m.Acquire(ctxT(t, 20*time.Second))
		if err == nil {
			err = m.Release()
		}
		got <- err
	}()
	waitNodes(t, c, "/locks/shared", 2) // the other goroutine queued
	require.NoError(t, m.Release())
	require.NoError(t, <-got)
}

func TestTryAcquireFailsWhenHeldAndLeavesNoNode(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	holder := newMutex(t, newClient(t, cl.Addrs()), "/locks/try")
	other := newMutex(t, newClient(t, cl.Addrs()), "/locks/try")
	_, err := holder.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)

	_, err = other.TryAcquire(ctxT(t, 10*time.Second))
	assert.ErrorIs(t, err, zkrecipes.ErrWouldBlock)
	waitNodes(t, obs, "/locks/try", 1)

	require.NoError(t, holder.Release())
	// Release returns with the delete sent on the holder's session; nothing
	// orders it before the other session's try.
	waitNodes(t, obs, "/locks/try", 0)
	h, err := other.TryAcquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.NotZero(t, h.Token())
	require.NoError(t, other.Release())
}

// A try that fails leaves the queue before the next request of its client:
// the client's own next look sees no node of it, and a retried try never
// queues behind its own earlier node (which would make it fail although
// nobody else holds). The test runs on a shared client, whose requests
// ZooKeeper applies in order.
func TestFailedTryLeavesBeforeTheClientsNextRequest(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	holder := newMutex(t, newClient(t, cl.Addrs()), "/locks/retry")
	_, err := holder.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	m := newMutex(t, c, "/locks/retry")
	for range 20 {
		_, err := m.TryAcquire(ctxT(t, 10*time.Second))
		require.ErrorIs(t, err, zkrecipes.ErrWouldBlock)
		require.Len(t, nodes(t, c, "/locks/retry"), 1, "the failed try's node is still queued")
	}
	for range 5 {
		_, err := m.Acquire(ctxT(t, 50*time.Millisecond))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Len(t, nodes(t, c, "/locks/retry"), 1, "the timed-out acquire's node is still queued")
	}
}

func TestAcquireTimeoutLeavesNoNode(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	holder := newMutex(t, newClient(t, cl.Addrs()), "/locks/timeout")
	waiterClient := newClient(t, cl.Addrs())
	waiter := newMutex(t, waiterClient, "/locks/timeout")
	_, err := holder.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)

	_, err = waiter.Acquire(ctxT(t, 300*time.Millisecond))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, waiterClient.Drain(ctxT(t, 10*time.Second)))
	waitNodes(t, obs, "/locks/timeout", 1)
	_, held := waiter.Held()
	assert.False(t, held)
}

func TestFencingTokenGrowsAcrossHoldersAndDirectoryRecreation(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	var last int64
	for round := 0; round < 3; round++ {
		for i := 0; i < 3; i++ {
			holder := newClient(t, cl.Addrs())
			m := newMutex(t, holder, "/locks/fence")
			h, err := m.Acquire(ctxT(t, 10*time.Second))
			require.NoError(t, err)
			assert.Greater(t, h.Token(), last)
			last = h.Token()
			require.NoError(t, m.Release())
			require.NoError(t, holder.Drain(ctxT(t, 10*time.Second))) // the delete has landed
		}
		// The directory is a container; delete it outright so the next
		// holder's node restarts the sequence at 0000000000.
		// The server's container sweep may get there first.
		if err := c.Delete(ctxT(t, 10*time.Second), "/locks/fence", -1); !errors.Is(err, zk.ErrNoNode) {
			require.NoError(t, err)
		}
	}
}

func TestParticipantsInQueueOrder(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	var ms []*mutex.Mutex
	for _, id := range []string{"a", "b", "c"} {
		ms = append(ms, newMutex(t, newClient(t, cl.Addrs()), "/locks/p", mutex.WithParticipantID(id)))
	}
	_, err := ms[0].Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	for i, m := range ms[1:] {
		go func() { _, _ = m.Acquire(ctxT(t, 30*time.Second)) }()
		waitNodes(t, obs, "/locks/p", i+2)
	}
	ids, err := ms[0].Participants(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, ids)
	ids, err = mutex.Participants(ctxT(t, 10*time.Second), obs, "/locks/p")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, ids, "readable by any client")
}

func TestRevocationRequestReachesRevocableHolder(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	m := newMutex(t, newClient(t, cl.Addrs()), "/locks/rev", mutex.WithRevocable())
	h, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	nodes, err := mutex.ParticipantNodes(ctxT(t, 10*time.Second), obs, "/locks/rev")
	require.NoError(t, err)
	require.Equal(t, []string{h.Path()}, nodes)

	require.NoError(t, mutex.Revoke(ctxT(t, 10*time.Second), obs, nodes[0]))
	select {
	case <-h.Revoked():
	case <-time.After(10 * time.Second):
		t.Fatal("revocation not seen")
	}
	assert.Nil(t, h.Err(), "revocation is a request: the holder still holds")
	require.NoError(t, m.Release())
}

func TestBadInputIsRejectedBeforeAnythingIsSent(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	_, err := mutex.New(nil, "/locks/x")
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	for _, p := range []string{"", "locks", "/locks/", "/a//b", "/a/../b"} {
		_, err := mutex.New(c, p)
		assert.ErrorIs(t, err, zkrecipes.ErrInvalidPath, "path %q", p)
	}
	_, err = mutex.New(c, "/locks/x", mutex.WithParticipantID(""))
	assert.Error(t, err)

	m, err := mutex.New(c, "/locks/x")
	require.NoError(t, err)
	require.NoError(t, m.Close())
	_, err = m.Acquire(ctxT(t, time.Second))
	assert.ErrorIs(t, err, zkrecipes.ErrClosed)
	assert.Empty(t, nodes(t, c, "/locks/x"), "nothing was created")
}

func TestCloseEndsWaitsAndReleasesHolds(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	holder := newMutex(t, newClient(t, cl.Addrs()), "/locks/close")
	waiterClient := newClient(t, cl.Addrs())
	waiter, err := mutex.New(waiterClient, "/locks/close")
	require.NoError(t, err)
	h, err := holder.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() { _, err := waiter.Acquire(context.Background()); errc <- err }()
	waitNodes(t, obs, "/locks/close", 2)

	require.NoError(t, waiter.Close())
	assert.ErrorIs(t, <-errc, zkrecipes.ErrClosed)
	require.NoError(t, holder.Close())
	<-h.Done()
	waitNodes(t, obs, "/locks/close", 0)
}

// One release wakes exactly one waiter: every lock node is watched by at most
// one session besides its owner (its successor; the holder watches its own
// node once it waits on its hold's end, to learn if someone else deletes
// it), and nobody watches the directory.
func TestEachWaiterWatchesOnlyItsPredecessor(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	const waiters = 8
	holder := newMutex(t, newClient(t, cl.Addrs()), "/locks/herd")
	h, err := holder.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	for i := 0; i < waiters; i++ {
		m := newMutex(t, newClient(t, cl.Addrs()), "/locks/herd")
		go func() {
			if _, err := m.Acquire(ctxT(t, 60*time.Second)); err == nil {
				_ = m.Release()
			}
		}()
	}
	waitNodes(t, obs, "/locks/herd", waiters+1)
	// A hold nobody waits on costs no watch of its own: only its
	// successor watches its node until the holder asks for its end.
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		w, err := watchesByPath(cl)
		if assert.NoError(ct, err) {
			assert.Len(ct, w, waiters, "watches: %v", w)
			assert.Len(ct, w[h.Path()], 1, "the holder's node, unwatched by the holder: its successor")
		}
	}, 10*time.Second, 20*time.Millisecond)
	require.Never(t, func() bool {
		w, err := watchesByPath(cl)
		return err != nil || len(w[h.Path()]) != 1
	}, 300*time.Millisecond, 30*time.Millisecond, "the holder watched its node before anyone waited on the hold")
	select {
	case <-h.Done(): // waits on the hold: watched from now on
		t.Fatal("the hold ended")
	default:
	}
	var watched map[string][]string
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		w, err := watchesByPath(cl)
		if !assert.NoError(ct, err) {
			return
		}
		watched = w
		assert.Len(ct, watched, waiters, "watches: %v", watched) // all nodes but the last waiter's
		assert.Len(ct, watched[h.Path()], 2, "the holder's node: its successor and the holder")
	}, 10*time.Second, 20*time.Millisecond)
	for path, sessions := range watched {
		assert.True(t, strings.HasPrefix(path, "/locks/herd/"), "unexpected watch on %s", path)
		_, st, err := obs.Get(context.Background(), path)
		require.NoError(t, err)
		others := 0
		for _, s := range sessions {
			if s != fmt.Sprintf("0x%x", st.EphemeralOwner) {
				others++
			}
		}
		assert.Equal(t, 1, others, "%s watched by %d sessions besides its owner: %v", path, others, sessions)
	}
	require.NoError(t, holder.Release())
}

// watchesByPath parses the server's "wchp" report: path, then one line per
// watching session.
func watchesByPath(cl *zktest.Cluster) (map[string][]string, error) {
	out, err := zktest.FourLetter(cl.DirectAddrs()[0], "wchp", 5*time.Second)
	if err != nil {
		return nil, err
	}
	watched := map[string][]string{}
	cur := ""
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "/"):
			cur = strings.TrimSpace(line)
		case strings.HasPrefix(strings.TrimSpace(line), "0x") && cur != "":
			watched[cur] = append(watched[cur], strings.TrimSpace(line))
		}
	}
	return watched, nil
}
