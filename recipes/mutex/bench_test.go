package mutex_test

import (
	"context"
	"io"
	"log"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/procstat"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// The speed targets of the mutex, each measured against go-zookeeper's own
// zk.Lock on the same server in the same run:
//
//	go test -run '^$' -bench . -benchtime 1x ./recipes/mutex/
//
// Clients connect to the server directly (no fault proxy) so that only the
// recipes differ.

func rawConn(b *testing.B, addrs []string) *zk.Conn {
	b.Helper()
	c, _, err := zk.Connect(addrs, 10*time.Second, zk.WithLogger(log.New(io.Discard, "", 0)), zk.WithLogInfo(false))
	require.NoError(b, err)
	b.Cleanup(c.Close)
	deadline := time.Now().Add(30 * time.Second)
	for c.State() != zk.StateHasSession {
		require.True(b, time.Now().Before(deadline), "no session")
		time.Sleep(5 * time.Millisecond) // polling the raw client's state
	}
	return c
}

func percentile(d []time.Duration, p float64) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[int(float64(len(s)-1)*p)].Microseconds())
}

// BenchmarkUncontended: one session, acquire+release in a loop, alternating
// between this Mutex and zk.Lock so both see the same server state.
// Target: p50 <= zk.Lock's (ratio <= 1).
func BenchmarkUncontended(b *testing.B) {
	cl := zktest.Standalone(b, zktest.WithFullJIT())
	ctx := context.Background()
	m := newMutex(b, newClient(b, cl.DirectAddrs()), "/bench/uncontended/ours")
	zl := zk.NewLock(rawConn(b, cl.DirectAddrs()), "/bench/uncontended/zk", zk.WorldACL(zk.PermAll))
	ours := func() {
		_, err := m.Acquire(ctx)
		require.NoError(b, err)
		require.NoError(b, m.Release())
	}
	theirs := func() {
		require.NoError(b, zl.Lock())
		require.NoError(b, zl.Unlock())
	}
	for i := 0; i < 50; i++ { // warm-up, as zkr-bench
		ours()
		theirs()
	}
	n := max(b.N, 500)
	var od, td []time.Duration
	b.ResetTimer()
	for i := 0; i < n; i++ {
		t0 := time.Now()
		ours()
		od = append(od, time.Since(t0))
		t0 = time.Now()
		theirs()
		td = append(td, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(percentile(od, 0.5), "p50_us")
	b.ReportMetric(percentile(od, 0.99), "p99_us")
	b.ReportMetric(percentile(td, 0.5), "zklock_p50_us")
	b.ReportMetric(percentile(td, 0.99), "zklock_p99_us")
	b.ReportMetric(percentile(od, 0.5)/percentile(td, 0.5), "p50_ratio")
}

// contended runs `sessions` goroutines, one session each, looping
// acquire/release on one path until `handoffs` acquisitions are done, and
// returns acquisitions per second. Overlaps fail the benchmark.
func contended(b *testing.B, sessions, handoffs int, newLocker func(i int) (lock, unlock func() error)) float64 {
	return contendedT(b, sessions, handoffs, newLocker)
}

func contendedT(b testing.TB, sessions, handoffs int, newLocker func(i int) (lock, unlock func() error)) float64 {
	var done atomic.Int64
	var inside atomic.Int32
	var wg sync.WaitGroup
	lockers := make([][2]func() error, sessions)
	for i := range lockers {
		l, u := newLocker(i)
		lockers[i] = [2]func() error{l, u}
	}
	start := time.Now()
	for i := 0; i < sessions; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done.Load() < int64(handoffs) {
				if err := lockers[i][0](); err != nil {
					b.Error(err)
					return
				}
				if inside.Add(1) != 1 {
					b.Error("overlap")
				}
				done.Add(1)
				inside.Add(-1)
				if err := lockers[i][1](); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return float64(done.Load()) / time.Since(start).Seconds()
}

// BenchmarkContended8: 8 sessions contending on one path. Target: handoffs
// per second >= 1.3x zk.Lock's. Both run on the same server, first a
// warm-up round each (the server's JIT otherwise favours whichever runs
// second), then alternating rounds; the medians are compared.
func BenchmarkContended8(b *testing.B) {
	cl := zktest.Standalone(b, zktest.WithFullJIT())
	const sessions, handoffs, rounds = 8, 1000, 5
	var oursLockers, theirLockers [][2]func() error
	for i := 0; i < sessions; i++ {
		m := newMutex(b, newClient(b, cl.DirectAddrs()), "/bench/contended/ours")
		oursLockers = append(oursLockers, [2]func() error{func() error { _, err := m.Acquire(context.Background()); return err }, m.Release})
		zl := zk.NewLock(rawConn(b, cl.DirectAddrs()), "/bench/contended/zk", zk.WorldACL(zk.PermAll))
		theirLockers = append(theirLockers, [2]func() error{zl.Lock, zl.Unlock})
	}
	pick := func(ls [][2]func() error) func(int) (func() error, func() error) {
		return func(i int) (func() error, func() error) { return ls[i][0], ls[i][1] }
	}
	contended(b, sessions, handoffs, pick(oursLockers)) // warm-up
	contended(b, sessions, handoffs, pick(theirLockers))
	var ours, theirs []float64
	for r := 0; r < rounds; r++ {
		ours = append(ours, contended(b, sessions, handoffs, pick(oursLockers)))
		theirs = append(theirs, contended(b, sessions, handoffs, pick(theirLockers)))
	}
	o, t := median(ours), median(theirs)
	b.ReportMetric(o, "handoffs/s")
	b.ReportMetric(t, "zklock_handoffs/s")
	b.ReportMetric(o/t, "speedup")
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// queue puts `waiters` contenders in line behind a holder, then releases and
// measures the time per handoff until the queue is drained. Waiters share a
// few sessions (goroutines of one Mutex contend like processes).
func queue(b *testing.B, cl *zktest.Cluster, path string, waiters int) time.Duration {
	const sessions = 10
	obs := newClient(b, cl.DirectAddrs())
	holder := newMutex(b, newClient(b, cl.DirectAddrs()), path)
	_, err := holder.Acquire(context.Background())
	require.NoError(b, err)
	var ms []*mutex.Mutex
	for i := 0; i < sessions; i++ {
		ms = append(ms, newMutex(b, newClient(b, cl.DirectAddrs()), path))
	}
	var wg sync.WaitGroup
	for i := 0; i < waiters; i++ {
		m := ms[i%sessions]
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := m.Acquire(context.Background()); err != nil {
				b.Error(err)
				return
			}
			if err := m.Release(); err != nil {
				b.Error(err)
			}
		}()
	}
	deadline := time.Now().Add(5 * time.Minute)
	for len(nodes(b, obs, path)) < waiters+1 {
		require.True(b, time.Now().Before(deadline), "waiters did not queue")
		time.Sleep(20 * time.Millisecond) // polling the queue length
	}
	time.Sleep(200 * time.Millisecond) // let the last waiters set their watches: not part of the measurement
	start := time.Now()
	require.NoError(b, holder.Release())
	wg.Wait()
	return time.Since(start) / time.Duration(waiters)
}

// BenchmarkQueue: per-handoff time with 1000 waiters must stay within 1.5x
// of the 8-waiter case (no O(N) work per handoff that matters).
func BenchmarkQueue(b *testing.B) {
	cl := zktest.Standalone(b, zktest.WithFullJIT())
	q8 := queue(b, cl, "/bench/queue8", 8)
	q1000 := queue(b, cl, "/bench/queue1000", 1000)
	b.ReportMetric(float64(q8.Microseconds()), "q8_us/handoff")
	b.ReportMetric(float64(q1000.Microseconds()), "q1000_us/handoff")
	b.ReportMetric(float64(q1000)/float64(q8), "q1000/q8")
}

// BenchmarkKeysCost is the client's own cost of a lock per key, as
// zkr-bench's keys mode runs it (a new lock value per operation, 32
// goroutines on one session, 1000 keys): heap allocations per operation
// (-benchmem, every goroutine of the process counted) and process CPU per
// operation (cpu_us/op), for a Mutex per key (zkrecipes), for the
// package's one-off Acquire (oneshot: what lock-per-key code should use)
// and for zk.Lock. The ratios to zk.Lock are what docs/benchmarks.md
// follows; absolute figures drift with the machine.
func BenchmarkKeysCost(b *testing.B) {
	cl := zktest.Standalone(b, zktest.WithFullJIT(), zktest.WithContainerCheck(time.Minute))
	ctx := context.Background()
	const keys = 1000
	key := func(i int) string { return "/bench/keys/k" + strconv.Itoa(i) }
	run := func(b *testing.B, op func(path string) error) {
		var next atomic.Int64
		b.SetParallelism(16) // 32 goroutines on 2 CPUs, as zkr-bench
		b.ReportAllocs()
		cpu0 := procstat.CPU()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := op(key(int(next.Add(1) % keys))); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.StopTimer()
		b.ReportMetric(float64((procstat.CPU()-cpu0).Microseconds())/float64(b.N), "cpu_us/op")
	}
	b.Run("zkrecipes", func(b *testing.B) {
		c := newClient(b, cl.DirectAddrs())
		run(b, func(path string) error {
			m, err := mutex.New(c, path)
			if err != nil {
				return err
			}
			if _, err := m.Acquire(ctx); err != nil {
				return err
			}
			return m.Release()
		})
	})
	b.Run("oneshot", func(b *testing.B) {
		c := newClient(b, cl.DirectAddrs())
		run(b, func(path string) error {
			h, err := mutex.Acquire(ctx, c, path)
			if err != nil {
				return err
			}
			return h.Release()
		})
	})
	b.Run("zklock", func(b *testing.B) {
		z := rawConn(b, cl.DirectAddrs())
		acl := zk.WorldACL(zk.PermAll)
		run(b, func(path string) error {
			l := zk.NewLock(z, path, acl)
			if err := l.Lock(); err != nil {
				return err
			}
			return l.Unlock()
		})
	})
}

// BenchmarkContendedCost is the client's own cost of a handoff among 8
// sessions looping on one lock, as zkr-bench's contended mode: heap
// allocations and process CPU per acquisition, for this Mutex and for
// zk.Lock.
func BenchmarkContendedCost(b *testing.B) {
	cl := zktest.Standalone(b, zktest.WithFullJIT())
	const sessions = 8
	run := func(b *testing.B, newLocker func(i int) (lock, unlock func() error)) {
		b.ReportAllocs()
		cpu0 := procstat.CPU()
		b.ResetTimer()
		contendedT(b, sessions, b.N, newLocker)
		b.StopTimer()
		b.ReportMetric(float64((procstat.CPU()-cpu0).Microseconds())/float64(b.N), "cpu_us/op")
	}
	b.Run("zkrecipes", func(b *testing.B) {
		var ms []*mutex.Mutex
		for range sessions {
			ms = append(ms, newMutex(b, newClient(b, cl.DirectAddrs()), "/bench/contended-cost/ours"))
		}
		run(b, func(i int) (func() error, func() error) {
			return func() error { _, err := ms[i].Acquire(context.Background()); return err }, ms[i].Release
		})
	})
	b.Run("zklock", func(b *testing.B) {
		var ls []*zk.Lock
		for range sessions {
			ls = append(ls, zk.NewLock(rawConn(b, cl.DirectAddrs()), "/bench/contended-cost/zk", zk.WorldACL(zk.PermAll)))
		}
		run(b, func(i int) (func() error, func() error) { return ls[i].Lock, ls[i].Unlock })
	})
}
