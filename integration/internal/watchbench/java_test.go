package watchbench

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/curator"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// fields parses an answer line: key=value words.
func fields(t testing.TB, line string) map[string]float64 {
	t.Helper()
	f := map[string]float64{}
	for _, w := range strings.Fields(line) {
		if k, v, ok := strings.Cut(w, "="); ok {
			if n, err := strconv.ParseFloat(v, 64); err == nil {
				f[k] = n
			}
		}
	}
	return f
}

// javaCache runs one of Curator's caches (kind, WatchBench.java) over path
// in an Agent of its own, so that its session's watches are its own, and
// measures it as the Go peers are measured.
func javaCache(t testing.TB, cl *zktest.Cluster, peer, kind, path string, units int, candidates []string, events int) row {
	t.Helper()
	agent := curator.Agent(t).StartMeasured(t, strings.Join(cl.DirectAddrs(), ","), 30*time.Second)
	defer func() {
		agent.Call(t, "quit", "bye", time.Minute)
		agent.Kill()
	}()
	w0 := watches(t, cl)
	st := fields(t, agent.Call(t, "watch-start "+kind+" "+path, "watch-started", 20*time.Minute))
	w1 := watches(t, cl)
	if n := int(st["nodes"]); n >= 0 {
		require.Equal(t, units, n, "%s saw %d nodes, the tree has %d", kind, n, units)
	}
	n := float64(units)
	r := row{peer: peer, units: units, threads: int(st["threads"]), perUnit: st["threads"] / n,
		heapPerUnit: st["heap"] / n, stackPer: -1,
		ready: time.Duration(st["init_ms"]) * time.Millisecond, watches: w1 - w0}
	ev := fields(t, agent.Call(t, fmt.Sprintf("watch-events %d %s 7", events, pathsFile(t, candidates)), "watch-events", 20*time.Minute))
	r.p50, r.p99 = time.Duration(ev["p50_us"])*time.Microsecond, time.Duration(ev["p99_us"])*time.Microsecond
	agent.Call(t, "watch-close", "watch-closed", 5*time.Minute)
	return r
}
