package leader_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/curator"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/leader"
)

// latchHandoffs measures graceful handoffs: two latches on one path, the
// leader closes, and the time until the other leads is one sample. A fresh
// latch replaces the closed one each round.
func latchHandoffs(b *testing.B, a, c *framework.Client, path string, rounds int) []time.Duration {
	ctx := context.Background()
	start := func(cl *framework.Client) *leader.Latch {
		l, err := leader.NewLatch(cl, path)
		require.NoError(b, err)
		require.NoError(b, l.Start(context.Background()))
		return l
	}
	current := start(a)
	_, err := current.Await(ctx)
	require.NoError(b, err)
	clients := [2]*framework.Client{c, a}
	var out []time.Duration
	for i := 0; i < rounds; i++ {
		next := start(clients[i%2])
		// Wait until the next one is queued, so the sample is the handoff
		// alone.
		for {
			ids, err := leader.Participants(ctx, a, path)
			require.NoError(b, err)
			if len(ids) == 2 {
				break
			}
		}
		t0 := time.Now()
		require.NoError(b, current.Close())
		_, err := next.Await(ctx)
		require.NoError(b, err)
		out = append(out, time.Since(t0))
		current = next
	}
	require.NoError(b, current.Close())
	return out
}

// BenchmarkLatchHandoff: p50 of a graceful handoff between two latches, and
// the same for Curator's LeaderLatch (the real 5.4, in the Java agent) on the
// same server in the same run. Target: ratio <= 0.7.
//
//	go test -run '^$' -bench LatchHandoff -benchtime 1x ./recipes/leader/
func BenchmarkLatchHandoff(b *testing.B) {
	cl := zktest.Standalone(b, zktest.WithFullJIT())
	a, c := newClient(b, cl.DirectAddrs()), newClient(b, cl.DirectAddrs())
	const rounds = 200
	java := curator.Agent(b).Start(b, strings.Join(cl.DirectAddrs(), ","), agentSession)
	// Curator first, then Go: Curator's own 50 warm-up rounds and ours also
	// warm the server's JIT, which favours whoever runs later.
	latchHandoffs(b, a, c, "/bench/latch-warm", 50)
	line := java.Call(b, "latch-bench /bench/curator-latch "+strconv.Itoa(rounds), "latch-bench", 5*time.Minute)
	d := latchHandoffs(b, a, c, "/bench/latch", rounds)
	slices.Sort(d)
	p50 := float64(d[len(d)/2].Microseconds())
	var cp50, cp99 float64
	_, err := fmt.Sscanf(line, "latch-bench p50_us=%g p99_us=%g", &cp50, &cp99)
	require.NoError(b, err, "agent said %q", line)
	b.ReportMetric(p50, "p50_us")
	b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), "p99_us")
	b.ReportMetric(cp50, "curator_p50_us")
	b.ReportMetric(cp99, "curator_p99_us")
	b.ReportMetric(p50/cp50, "p50_ratio")
}
