package integration_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/barrier"
	"github.com/zkrecipes/zkrecipes/recipes/countdown"
	"github.com/zkrecipes/zkrecipes/recipes/counter"
	"github.com/zkrecipes/zkrecipes/recipes/leader"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
	"github.com/zkrecipes/zkrecipes/retry"
)

func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }

// The root is nobody's recipe path: under it, /zookeeper counts as a
// member or a contender (a double barrier at "/" took it for a member,
// left a persistent /ready, and its Wait never returned), and a value or
// a barrier node cannot be made or deleted there. Every constructor, for
// every path it takes, refuses it with framework.ValidateRecipePath's
// error, before anything is sent.
func TestEveryRecipeRefusesTheRootAndSendsNothing(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := testkit.Client(t, p.Addrs())
	obs := testkit.Client(t, cl.Addrs())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	job := func(context.Context, *hold.Hold) error { return nil }
	promoted := counter.WithPromotedToLock("/", time.Second, retry.Default())
	constructors := map[string]func() error{
		"mutex.New":                   func() error { _, err := mutex.New(c, "/"); return err },
		"mutex.NewSemaphoreMutex":     func() error { _, err := mutex.NewSemaphoreMutex(c, "/"); return err },
		"rwlock.New":                  func() error { _, err := rwlock.New(c, "/"); return err },
		"semaphore.New":               func() error { _, err := semaphore.New(c, "/", 2); return err },
		"semaphore.NewShared path":    func() error { _, err := semaphore.NewShared(c, "/", "/count"); return err },
		"semaphore.NewShared count":   func() error { _, err := semaphore.NewShared(c, "/sem", "/"); return err },
		"leader.NewLatch":             func() error { _, err := leader.NewLatch(c, "/"); return err },
		"leader.NewSelector":          func() error { _, err := leader.NewSelector(c, "/", job); return err },
		"leader.Observe":              func() error { _, err := leader.Observe(ctx, c, "/"); return err },
		"barrier.New":                 func() error { _, err := barrier.New(c, "/"); return err },
		"barrier.NewDouble":           func() error { _, err := barrier.NewDouble(c, "/", 2); return err },
		"countdown.New":               func() error { _, err := countdown.New(c, "/", 1); return err },
		"shared.NewValue":             func() error { _, err := shared.NewValue(c, "/", nil); return err },
		"shared.NewCount":             func() error { _, err := shared.NewCount(c, "/", 0); return err },
		"counter.NewLong":             func() error { _, err := counter.NewLong(c, "/"); return err },
		"counter.NewInteger":          func() error { _, err := counter.NewInteger(c, "/"); return err },
		"counter.NewBytes":            func() error { _, err := counter.NewBytes(c, "/"); return err },
		"counter promoted lock path":  func() error { _, err := counter.NewLong(c, "/n", promoted); return err },
		"counter promoted lock (int)": func() error { _, err := counter.NewInteger(c, "/n", promoted); return err },
	}
	before := p.Requests()
	for name, construct := range constructors {
		t.Run(name, func(t *testing.T) {
			err := construct()
			require.ErrorIs(t, err, zkrecipes.ErrInvalidPath)
			assert.Contains(t, err.Error(), `"/": the root cannot be a recipe's path`, "the same error as every recipe")
		})
	}
	assert.Equal(t, before, p.Requests(), "a constructor sent a request")
	kids, _, err := obs.Children(context.Background(), "/")
	require.NoError(t, err)
	assert.Equal(t, []string{"zookeeper"}, kids, "something was made at the root")
}
