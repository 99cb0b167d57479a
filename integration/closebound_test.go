package integration_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/barrier"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/recipes/countdown"
	"github.com/zkrecipes/zkrecipes/recipes/counter"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
	"github.com/zkrecipes/zkrecipes/recipes/group"
	"github.com/zkrecipes/zkrecipes/recipes/leader"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
	"github.com/zkrecipes/zkrecipes/recipes/persistent"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

// releaseTimeout is the clients' release timeout in the Close tests: the
// bound every recipe's Close keeps.
const releaseTimeout = time.Second

// closeSlack is what Close may take beyond the release timeout: scheduling
// on a loaded machine under the race detector, never a request's wait.
const closeSlack = time.Second

// A recipe in use: made, started, holding or registered, as a service
// has it when it shuts down.
type inUse func(t *testing.T, c *framework.Client, path string) (closeFn func() error)

func must(t *testing.T, err error) {
	t.Helper()
	require.NoError(t, err)
}

// closeCases are every recipe of the module with a Close, each in use.
func closeCases() map[string]inUse {
	ctx := func(t *testing.T) context.Context { return testkit.Ctx(t, 30*time.Second) }
	return map[string]inUse{
		"mutex holding, a waiter queued": func(t *testing.T, c *framework.Client, path string) func() error {
			m, err := mutex.New(c, path)
			must(t, err)
			_, err = m.Acquire(ctx(t))
			must(t, err)
			waiting := make(chan struct{})
			go func() { // another goroutine: the mutex is reentrant per goroutine
				defer close(waiting)
				_, _ = m.Acquire(context.Background())
			}()
			testkit.WaitChildren(t, c, path, 2)
			return func() error { err := m.Close(); <-waiting; return err }
		},
		"semaphore mutex holding": func(t *testing.T, c *framework.Client, path string) func() error {
			m, err := mutex.NewSemaphoreMutex(c, path)
			must(t, err)
			_, err = m.Acquire(ctx(t))
			must(t, err)
			return m.Close
		},
		"rwlock reading and writing": func(t *testing.T, c *framework.Client, path string) func() error {
			l, err := rwlock.New(c, path)
			must(t, err)
			_, err = l.WriteLock().Acquire(ctx(t))
			must(t, err)
			_, err = l.ReadLock().Acquire(ctx(t)) // the writer may read
			must(t, err)
			return l.Close
		},
		"semaphore with leases": func(t *testing.T, c *framework.Client, path string) func() error {
			s, err := semaphore.New(c, path, 3)
			must(t, err)
			_, err = s.Acquire(ctx(t), 2)
			must(t, err)
			return s.Close
		},
		"leader latch leading": func(t *testing.T, c *framework.Client, path string) func() error {
			l, err := leader.NewLatch(c, path)
			must(t, err)
			must(t, l.Start(ctx(t)))
			_, err = l.Await(ctx(t))
			must(t, err)
			return l.Close
		},
		"leader selector leading": func(t *testing.T, c *framework.Client, path string) func() error {
			led := make(chan struct{}, 1)
			s, err := leader.NewSelector(c, path, func(ctx context.Context, _ *hold.Hold) error {
				led <- struct{}{}
				<-ctx.Done()
				return nil
			})
			must(t, err)
			must(t, s.Start(ctx(t)))
			<-led
			return s.Close
		},
		"countdown counted down": func(t *testing.T, c *framework.Client, path string) func() error {
			l, err := countdown.New(c, path, 3)
			must(t, err)
			_, err = l.TrySetCount(ctx(t))
			must(t, err)
			_, err = l.CountDown(ctx(t))
			must(t, err)
			return l.Close
		},
		"shared value started": func(t *testing.T, c *framework.Client, path string) func() error {
			v, err := shared.NewValue(c, path, []byte("seed"))
			must(t, err)
			must(t, v.Start(ctx(t)))
			return v.Close
		},
		"shared count started": func(t *testing.T, c *framework.Client, path string) func() error {
			v, err := shared.NewCount(c, path, 1)
			must(t, err)
			must(t, v.Start(ctx(t)))
			return v.Close
		},
		"counter with a promoted lock": func(t *testing.T, c *framework.Client, path string) func() error {
			l, err := counter.NewLong(c, path)
			must(t, err)
			_, err = l.Increment(ctx(t))
			must(t, err)
			return l.Close
		},
		"barrier set": func(t *testing.T, c *framework.Client, path string) func() error {
			b, err := barrier.New(c, path)
			must(t, err)
			must(t, b.Set(ctx(t)))
			return b.Close
		},
		"double barrier entered": func(t *testing.T, c *framework.Client, path string) func() error {
			d, err := barrier.NewDouble(c, path, 1)
			must(t, err)
			must(t, d.Enter(ctx(t)))
			return d.Close
		},
		"cache started": func(t *testing.T, c *framework.Client, path string) func() error {
			_, err := c.Create(ctx(t), path+"/a", nil, framework.WithParents())
			must(t, err)
			v, err := cache.New(c, path, cache.Tree(cache.AnyDepth))
			must(t, err)
			must(t, v.Start(ctx(t)))
			return v.Close
		},
		"persistent node in place": func(t *testing.T, c *framework.Client, path string) func() error {
			n, err := persistent.New(c, path, []byte("x"))
			must(t, err)
			must(t, n.Start(ctx(t)))
			return n.Close
		},
		"persistent protected sequential node in place": func(t *testing.T, c *framework.Client, path string) func() error {
			n, err := persistent.New(c, path+"/n-", []byte("x"), persistent.Sequential())
			must(t, err)
			must(t, n.Start(ctx(t)))
			return n.Close
		},
		"persistent ttl node touched": func(t *testing.T, c *framework.Client, path string) func() error {
			n, err := persistent.NewTTL(c, path, []byte("x"), time.Minute)
			must(t, err)
			must(t, n.Start(ctx(t)))
			return n.Close
		},
		"leader observer following": func(t *testing.T, c *framework.Client, path string) func() error {
			o, err := leader.Observe(context.Background(), c, path)
			must(t, err)
			<-o.Changes()
			return func() error { o.Close(); return nil }
		},
		"group member joined": func(t *testing.T, c *framework.Client, path string) func() error {
			m, err := group.New(c, path, "me", []byte("x"))
			must(t, err)
			must(t, m.Start(ctx(t)))
			return m.Close
		},
		"discovery with two registrations, a cache and a provider": func(t *testing.T, c *framework.Client, path string) func() error {
			d, err := discovery.New(c, path)
			must(t, err)
			for range 2 {
				must(t, d.Register(ctx(t), discovery.NewInstance("svc")))
			}
			sc, err := d.NewCache("svc")
			must(t, err)
			must(t, sc.Start(ctx(t)))
			p, err := d.NewProvider("svc")
			must(t, err)
			must(t, p.Start(ctx(t)))
			return func() error { return join(p.Close(), sc.Close(), d.Close()) }
		},
		"partitioner owning its items": func(t *testing.T, c *framework.Client, path string) func() error {
			p, err := partition.New(c, path, "me", partition.List("a", "b", "c"))
			must(t, err)
			must(t, p.Start(ctx(t)))
			require.Eventually(t, func() bool { return len(p.Owned()) == 3 }, 30*time.Second, 10*time.Millisecond)
			return p.Close
		},
	}
}

func join(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Every recipe's Close returns within the client's release timeout when
// the link to the server is blackholed, before the client has noticed:
// what it could not delete over the dead link is left to the client's
// background deletes (or to the session, for an ephemeral node), and none
// of it stays once the link is back. The clients reconnect with watches
// set, where go-zookeeper v1.0.4 races on lastZxid: it runs in the
// WithoutRace pass.
func TestEveryRecipesCloseIsBoundedByTheReleaseTimeoutWithTheLinkBlackholedWithoutRace(t *testing.T) {
	testkit.SkipUnderRace(t)
	cl := zktest.Standalone(t)
	obs := testkit.Client(t, cl.Addrs())
	for name, use := range closeCases() {
		t.Run(name, func(t *testing.T) {
			p := cl.NewProxy()
			c := testkit.Client(t, p.Addrs(), framework.WithReleaseTimeout(releaseTimeout))
			path := fmt.Sprintf("/close/%x", time.Now().UnixNano())
			closeFn := use(t, c, path)
			session := c.Session().ID

			p.Blackhole()
			start := time.Now()
			closed := make(chan error, 1)
			go func() { closed <- closeFn() }()
			select {
			case err := <-closed:
				took := time.Since(start)
				assert.NoError(t, err)
				assert.LessOrEqual(t, took, releaseTimeout+closeSlack, "Close took %v with the link blackholed", took)
			case <-time.After(2 * time.Minute):
				t.Fatalf("Close did not return within two minutes with the link blackholed")
			}

			p.Heal()
			require.EventuallyWithT(t, func(ct *assert.CollectT) {
				assert.Empty(ct, ephemeralsOf(t, obs, path, session), "ephemeral nodes left behind")
			}, 30*time.Second, 50*time.Millisecond)
		})
	}
}

// ephemeralsOf lists the nodes under path (path included) that session
// owns.
func ephemeralsOf(t *testing.T, c *framework.Client, path string, session int64) []string {
	var out []string
	var walk func(p string)
	walk = func(p string) {
		ok, st, err := c.Exists(context.Background(), p)
		if err != nil || !ok {
			return
		}
		if st.EphemeralOwner == session {
			out = append(out, p)
		}
		kids, _, err := c.Children(context.Background(), p)
		if err != nil && err != zk.ErrNoNode {
			return
		}
		for _, k := range kids {
			walk(framework.Join(p, k))
		}
	}
	walk(path)
	return out
}
