package countdown_test

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A count-down's marker is only needed until its call knows whether it
// counted: counted calls leave none behind, so the latch holds no more
// children after a thousand count-downs than after one.
func TestCountedCallsLeaveNoCountDownChildBehind(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	const path = "/latches/no-markers"
	l := setLatch(t, c, path, 100)
	for range 30 {
		ok, err := l.CountDown(ctxT(t, 10*time.Second))
		require.NoError(t, err)
		require.True(t, ok)
	}
	// Read through the counting client: ZooKeeper applies its requests in
	// order, so whatever it sent before is applied by then.
	assert.Equal(t, 70, rawCount(t, c, path))
	assert.Empty(t, countDowns(t, c, path), "counted calls left their cd- children")
}

// A count-down does not list the latch: a listing grows with whatever the
// latch holds, and a count may be 2^31-1. A handle lists once, to learn
// which latch it counts on, and not again while that latch stands.
func TestCountDownsDoNotListTheLatch(t *testing.T) {
	cl := zktest.Standalone(t)
	const path = "/latches/no-listing"
	setLatch(t, newClient(t, cl.Addrs()), path, 100)
	req := testkit.NewRequests(t)
	l := newLatch(t, newClient(t, cl.Addrs(), req.Option()), path, 0)
	ok, err := l.CountDown(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.True(t, ok)
	before := req.Count(t, "children")
	for range 30 {
		ok, err := l.CountDown(ctxT(t, 10*time.Second))
		require.NoError(t, err)
		require.True(t, ok)
	}
	assert.Equal(t, before, req.Count(t, "children"), "30 count-downs listed the latch")
}

// BenchmarkCountDown is the cost of one CountDown on a latch that count
// count-downs came before. Before issue 27 each of those left a cd- child
// that every later count-down listed (6 ms a call at 0, 50 ms at 40,000,
// O(n^2) in all); the two sub-benchmarks must cost about the same: ns/op,
// B/op (what the client decodes, a listing included) and listings/op.
//
// The latch is prepared as those count-downs left it under that layout,
// one cd- child each, made directly (500 to a multi) so that 100,000 take
// seconds: the latch as an older version of this package, or callers that
// died before deleting their markers, leave it. Counted down by this
// version, the latch has no such child at all, an easier case.
func BenchmarkCountDown(b *testing.B) {
	cl := zktest.Standalone(b)
	req := testkit.NewRequests(b)
	c := newClient(b, cl.Addrs(), req.Option())
	for _, before := range []int{10, 100_000} {
		path := fmt.Sprintf("/bench/count-%d", before)
		// Room for every round of every b.N: the latch never opens.
		l := setLatch(b, c, path, before+1<<30)
		ctx := ctxT(b, 10*time.Minute)
		prepareCountDowns(b, c, path, before)
		_, err := l.CountDown(ctx) // the handle's first call learns the latch
		require.NoError(b, err)
		b.Run(fmt.Sprintf("count=%d", before), func(b *testing.B) {
			b.ReportAllocs()
			lists := req.Count(b, "children")
			calls := 0
			for b.Loop() {
				ok, err := l.CountDown(ctx)
				if err != nil || !ok {
					b.Fatalf("count-down: %v %v", ok, err)
				}
				calls++
			}
			b.ReportMetric(float64(req.Count(b, "children")-lists)/float64(calls), "listings/op")
		})
	}
}

// prepareCountDowns makes n count-downs on the latch at path as the
// layout before issue 27 left them: n cd- children, and the count n less.
func prepareCountDowns(b *testing.B, c *framework.Client, path string, n int) {
	ctx := ctxT(b, 10*time.Minute)
	for done := 0; done < n; {
		batch := min(500, n-done)
		ops := make([]any, 0, batch)
		for range batch {
			ops = append(ops, &zk.CreateRequest{Path: path + "/cd-" + uuid.NewString()})
		}
		_, err := c.Multi(ctx, ops...)
		require.NoError(b, err)
		done += batch
	}
	data, st, err := c.Get(ctx, path)
	require.NoError(b, err)
	_, err = c.Set(ctx, path, encode(decodeCount(data)-n), st.Version)
	require.NoError(b, err)
}

func decodeCount(b []byte) int { return int(int32(binary.BigEndian.Uint32(b))) }
