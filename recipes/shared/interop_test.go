package shared_test

// Interop with the real Apache Curator 5.4 SharedCount and SharedValue,
// driven through the Java Agent of internal/curator: Go and Java on one
// path see each other's writes, and their compare-and-sets resolve by the
// node's version, whoever makes them.

import (
	"encoding/hex"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/curator"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

const agentSession = 10 * time.Second

func TestCuratorAndGoCountSeeEachOthersSets(t *testing.T) {
	cl := zktest.Standalone(t)
	java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)
	assert.Equal(t, "shared-count-started j 5 0", java.Call(t, "shared-count-start j /interop/count 5", "shared-count-started j", 30*time.Second))

	c := newClient(t, cl.Addrs())
	n := newCount(t, c, "/interop/count", 99)
	got, err := n.Get()
	require.NoError(t, err)
	assert.Equal(t, int32(5), got.Value, "Curator's seed, in Curator's format")

	_, err = n.Set(ctxT(t, 10*time.Second), -70000)
	require.NoError(t, err)
	java.Expect(t, "shared-count-changed j -70000", 10*time.Second)

	java.Call(t, "shared-count-set j 12345678", "shared-count-set j", 10*time.Second)
	waitCount(t, n, 12345678)
	java.Call(t, "shared-close j", "shared-closed j", 10*time.Second)
}

func TestGoSeedIsCuratorsCount(t *testing.T) {
	cl := zktest.Standalone(t)
	newCount(t, newClient(t, cl.Addrs()), "/interop/seed", 258)
	java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)
	assert.Equal(t, "shared-count-started j 258 0", java.Call(t, "shared-count-start j /interop/seed 7", "shared-count-started j", 30*time.Second))
	java.Call(t, "shared-close j", "shared-closed j", 10*time.Second)
}

// Go and Curator both read version 0, and both try to write from it: the
// first to reach the server wins, the other is refused and holds the
// winner's value. Then the other way round.
func TestTrySetRaceBetweenGoAndCuratorResolvesByVersion(t *testing.T) {
	cl := zktest.Standalone(t)
	java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)
	java.Call(t, "shared-count-start j /interop/race 0", "shared-count-started j", 30*time.Second)
	n := newCount(t, newClient(t, cl.Addrs()), "/interop/race", 0)

	assert.Equal(t, "shared-count-read j 0 0", java.Call(t, "shared-count-read j", "shared-count-read j", 10*time.Second))
	goRead, err := n.Get()
	require.NoError(t, err)
	_, ok, err := n.TrySet(ctxT(t, 10*time.Second), goRead, 1)
	require.NoError(t, err)
	require.True(t, ok, "Go first")
	java.Expect(t, "shared-count-changed j 1", 10*time.Second)
	assert.Equal(t, "shared-count-tryset j false 1 1", java.Call(t, "shared-count-tryset j 100", "shared-count-tryset j", 10*time.Second),
		"Curator's trySet from the version Go replaced is refused, and it holds Go's value")

	// Curator first, from the fresh value; Go's TrySet from the one it
	// already replaced is refused.
	java.Call(t, "shared-count-read j", "shared-count-read j 1 1", 10*time.Second)
	cur, err := n.Get()
	require.NoError(t, err)
	assert.Equal(t, "shared-count-tryset j true 2 2", java.Call(t, "shared-count-tryset j 2", "shared-count-tryset j", 10*time.Second))
	fresh, ok, err := n.TrySet(ctxT(t, 10*time.Second), cur, 200)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, shared.Versioned[int32]{Value: 2, Version: 2, Zxid: fresh.Zxid}, fresh, "Go holds Curator's value")
	java.Call(t, "shared-close j", "shared-closed j", 10*time.Second)
}

// Curator and Go increment one count at once with compare-and-set loops:
// no increment is lost or made twice.
func TestConcurrentIncrementsFromGoAndCuratorLoseNothing(t *testing.T) {
	cl := zktest.Standalone(t)
	java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)
	java.Call(t, "shared-count-start j /interop/incr 1000", "shared-count-started j", 30*time.Second)
	const goers, each, javaEach = 2, 40, 80
	counts := make([]*shared.Count, goers)
	for i := range counts {
		counts[i] = newCount(t, newClient(t, cl.Addrs()), "/interop/incr", 0)
	}

	java.Send(fmt.Sprintf("shared-count-increment j %d", javaEach))
	var wg sync.WaitGroup
	var mu sync.Mutex
	refused := 0
	for _, n := range counts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cur, err := n.Get()
			if !assert.NoError(t, err) {
				return
			}
			for done := 0; done < each; {
				next, ok, err := n.TrySet(ctxT(t, 10*time.Second), cur, cur.Value+1)
				if !assert.NoError(t, err) {
					return
				}
				if ok {
					done++
				} else {
					mu.Lock()
					refused++
					mu.Unlock()
				}
				cur = next
			}
		}()
	}
	wg.Wait()
	line := java.Expect(t, "shared-count-incremented j", 60*time.Second)
	t.Logf("Go: %d tries refused; Curator: %s", refused, line)
	want := int32(1000 + goers*each + javaEach)
	for _, n := range counts {
		got := waitCount(t, n, want)
		assert.Equal(t, int32(goers*each+javaEach), got.Version, "one version per increment")
	}
	java.Call(t, "shared-close j", "shared-closed j", 10*time.Second)
}

func TestCuratorAndGoValueSeeEachOthersSets(t *testing.T) {
	cl := zktest.Standalone(t)
	java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)
	seed := []byte{0, 1, 0xfe, 'x'}
	assert.Equal(t, "shared-value-started j "+hex.EncodeToString(seed)+" 0",
		java.Call(t, "shared-value-start j /interop/value "+hex.EncodeToString(seed), "shared-value-started j", 30*time.Second))
	v := newValue(t, newClient(t, cl.Addrs()), "/interop/value", []byte("ignored"))
	got, err := v.Get()
	require.NoError(t, err)
	assert.Equal(t, seed, got.Value, "Curator's bytes as they are")

	_, err = v.Set(ctxT(t, 10*time.Second), []byte("from go"))
	require.NoError(t, err)
	java.Expect(t, "shared-value-changed j "+hex.EncodeToString([]byte("from go")), 10*time.Second)

	sub := v.Subscribe()
	defer sub.Close()
	java.Call(t, "shared-value-set j "+hex.EncodeToString([]byte("from java")), "shared-value-set j", 10*time.Second)
	for last := (<-sub.Changes()).Value; string(last) != "from java"; {
		select {
		case ch := <-sub.Changes():
			last = ch.Value
		case <-time.After(10 * time.Second):
			t.Fatalf("Curator's set did not arrive; last %q", last)
		}
	}
	java.Call(t, "shared-close j", "shared-closed j", 10*time.Second)
}
