package counter_test

// Interop with the real Apache Curator 5.4 DistributedAtomicLong and
// DistributedAtomicInteger, driven through the Java Agent of
// internal/curator: Go and Java count on one node, read each other's
// values, and together lose and double nothing, with and without the
// promoted lock (one mutex for both).

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/curator"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/counter"
	"github.com/zkrecipes/zkrecipes/retry"
)

const agentSession = 10 * time.Second

func TestGoAndCuratorReadEachOthersValues(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)

	l := newLong(t, c, "/interop/long")
	_, err := l.Add(ctxT(t, 10*time.Second), -1234567890123)
	require.NoError(t, err)
	assert.Equal(t, "atomic /interop/long -1234567890123", java.Call(t, "atomic-get long /interop/long", "atomic ", 20*time.Second))
	assert.Equal(t, "atomic-added /interop/long true -1234567890123 -1234567890100",
		java.Call(t, "atomic-add long /interop/long 23", "atomic-added ", 20*time.Second))
	r, err := l.Get(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, int64(-1234567890100), r.PostValue)

	i, err := counter.NewInteger(c, "/interop/int")
	require.NoError(t, err)
	defer i.Close()
	assert.Equal(t, "atomic-added /interop/int true 0 -7",
		java.Call(t, "atomic-add int /interop/int -7", "atomic-added ", 20*time.Second), "Curator creates it")
	ri, err := i.Add(ctxT(t, 10*time.Second), 100)
	require.NoError(t, err)
	assert.Equal(t, int32(-7), ri.PreValue)
	assert.Equal(t, int32(93), ri.PostValue)
	assert.Equal(t, "atomic /interop/int 93", java.Call(t, "atomic-get int /interop/int", "atomic ", 20*time.Second))
}

// concurrent has Go and Curator increment one counter at once and checks
// that it holds exactly the increments both sides saw succeed.
func concurrent(t *testing.T, kind, path, lockPath string, opts ...counter.Option) {
	cl := zktest.Standalone(t)
	agent := curator.Agent(t)
	javas := []*curator.Process{agent.Start(t, cl.ConnectString(), agentSession), agent.Start(t, cl.ConnectString(), agentSession)}
	const goClients, each = 3, 25
	for j, java := range javas {
		java.Send(fmt.Sprintf("atomic-loop %s %s %d 3 %s j%d", kind, path, each, lockPath, j))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	goOK, goPromoted := 0, 0
	for range goClients {
		c := newClient(t, cl.Addrs())
		var inc func() (bool, bool, error)
		if kind == "long" {
			l := newLong(t, c, path, opts...)
			inc = func() (bool, bool, error) {
				r, err := l.Increment(ctxT(t, 60*time.Second))
				return r.Succeeded, r.Stats.PromotedTries > 0, err
			}
		} else {
			i, err := counter.NewInteger(c, path, opts...)
			require.NoError(t, err)
			t.Cleanup(func() { _ = i.Close() })
			inc = func() (bool, bool, error) {
				r, err := i.Increment(ctxT(t, 60*time.Second))
				return r.Succeeded, r.Stats.PromotedTries > 0, err
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				ok, promoted, err := inc()
				if assert.NoError(t, err) && ok {
					mu.Lock()
					goOK++
					if promoted {
						goPromoted++
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	javaOK, javaPromoted := 0, 0
	for j, java := range javas {
		f := strings.Fields(java.Expect(t, fmt.Sprintf("atomic-loop-done j%d ", j), 2*time.Minute))
		ok, _ := strconv.Atoi(f[2])
		promoted, _ := strconv.Atoi(f[4])
		javaOK += ok
		javaPromoted += promoted
	}
	t.Logf("go: %d succeeded (%d promoted); curator: %d succeeded (%d promoted)", goOK, goPromoted, javaOK, javaPromoted)
	assert.Positive(t, goOK)
	assert.Positive(t, javaOK)
	got := javas[0].Call(t, "atomic-get "+kind+" "+path, "atomic ", 20*time.Second)
	assert.Equal(t, fmt.Sprintf("atomic %s %d", path, goOK+javaOK), got, "Curator reads the total of every successful increment")
	obs := newClient(t, cl.Addrs())
	if kind == "long" {
		assert.Equal(t, int64(goOK+javaOK), rawLong(t, obs, path))
	} else {
		data, _ := raw(t, obs, path)
		assert.Len(t, data, 4)
	}
	if lockPath != "-" {
		assert.Positive(t, goPromoted, "Go was never promoted")
		testkit.WaitChildren(t, obs, lockPath, 0)
	}
}

func TestGoAndCuratorIncrementOneLongConcurrently(t *testing.T) {
	concurrent(t, "long", "/interop/c/long", "-", counter.WithOptimisticRetry(retry.NTimes(3, time.Millisecond)))
}

func TestGoAndCuratorIncrementOneIntegerConcurrently(t *testing.T) {
	concurrent(t, "int", "/interop/c/int", "-", counter.WithOptimisticRetry(retry.NTimes(3, time.Millisecond)))
}

// Promoted on both sides to one lock path: Curator's InterProcessMutex
// and ours queue together.
func TestGoAndCuratorPromotedToOneLock(t *testing.T) {
	concurrent(t, "long", "/interop/p/long", "/interop/p/lock",
		counter.WithOptimisticRetry(retry.NTimes(0, 0)),
		counter.WithPromotedToLock("/interop/p/lock", 30*time.Second, retry.NTimes(100, time.Millisecond)))
}

// An empty node made by Curator (a SharedValue seeded with nothing) reads
// as 0, and a Get then CompareAndSet loop counts up from there.
func TestGetThenCompareAndSetProgressesOnAnEmptyNodeCuratorMade(t *testing.T) {
	cl := zktest.Standalone(t)
	java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)
	java.Call(t, "shared-value-start empty /interop/empty -", "shared-value-started empty ", 20*time.Second)
	c := newClient(t, cl.Addrs())
	data, ok := raw(t, c, "/interop/empty")
	require.True(t, ok)
	require.Empty(t, data, "Curator made the node with no data")
	casLoop(t, newLong(t, c, "/interop/empty"), 3)
	assert.Equal(t, "atomic /interop/empty 3", java.Call(t, "atomic-get long /interop/empty", "atomic ", 20*time.Second))
}
