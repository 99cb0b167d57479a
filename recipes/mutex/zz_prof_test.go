package mutex_test

import (
	"context"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/integration/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func runKeys(t *testing.T, d time.Duration, op func(i int) error) {
	var n atomic.Int64
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	c0 := cpuNow()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range 32 {
		wg.Go(func() {
			for time.Now().Before(end) {
				if err := op(rand.IntN(1000)); err != nil {
					t.Error(err)
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	cpu := cpuNow() - c0
	runtime.ReadMemStats(&m1)
	t.Logf("ops/s %d cpu/op %v allocs/op %d bytes/op %d", n.Load()*int64(time.Second)/int64(d), cpu/time.Duration(n.Load()),
		(m1.Mallocs-m0.Mallocs)/uint64(n.Load()), (m1.TotalAlloc-m0.TotalAlloc)/uint64(n.Load()))
}

func TestZZProfKeys(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.DirectAddrs())
	ctx := context.Background()
	d := 6 * time.Second
	if os.Getenv("ZZ_PEER") == "zk" {
		z, _, err := zk.Connect(cl.DirectAddrs(), 10*time.Second, zk.WithLogInfo(false))
		if err != nil {
			t.Fatal(err)
		}
		defer z.Close()
		for i := range 1000 {
			z.Create("/zkeys", nil, 0, zk.WorldACL(zk.PermAll))
			z.Create("/zkeys/k"+strconv.Itoa(i), nil, 0, zk.WorldACL(zk.PermAll))
		}
		runKeys(t, d, func(i int) error {
			l := zk.NewLock(z, "/zkeys/k"+strconv.Itoa(i), zk.WorldACL(zk.PermAll))
			if err := l.Lock(); err != nil {
				return err
			}
			return l.Unlock()
		})
		return
	}
	runKeys(t, d, func(i int) error {
		m, err := mutex.New(c, "/keys/k"+strconv.Itoa(i))
		if err != nil {
			return err
		}
		if _, err := m.Acquire(ctx); err != nil {
			return err
		}
		return m.Release()
	})
}
