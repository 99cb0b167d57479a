// Package testkit holds the few helpers every recipe's tests repeat: a
// client on a test server, a context bounded by the test, a look at a
// directory, a child process that a test can kill -9, a goroutine of its
// own for per-goroutine locks, a lost session, a table of failures and
// the sentinels they must match, one of calls given a nil context, and a
// count of a client's requests.
package testkit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// SessionTimeout is the session timeout of Client's sessions: short, so
// expiry tests are quick, and well above the servers' 1s minimum.
const SessionTimeout = 4 * time.Second

// CutSessionTimeout is the session timeout of a test whose session must
// outlive a cut healed at its suspension. The client learns of the cut at
// 2/3 of the timeout, and go-zookeeper waits a second before it dials
// again once it has tried every server, so a 3s session comes back just
// as the server expires it; this leaves well over a second to spare.
const CutSessionTimeout = 8 * time.Second

// Client dials addrs and closes the client when t ends.
func Client(t testing.TB, addrs []string, opts ...framework.Option) *framework.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts = append([]framework.Option{framework.WithSessionTimeout(SessionTimeout)}, opts...)
	c, err := framework.Dial(ctx, addrs, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// Ctx is a context that ends after d or with t.
func Ctx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// List lists path as the server sees it (nil when it does not exist).
func List(c *framework.Client, path string) ([]string, error) {
	kids, _, err := c.Children(context.Background(), path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	return kids, err
}

// Children is List for the test's own goroutine: an error fails t.
func Children(t testing.TB, c *framework.Client, path string) []string {
	t.Helper()
	kids, err := List(c, path)
	require.NoError(t, err)
	return kids
}

// WaitChildren waits until path has n children and returns them. A failure
// shows the children last seen.
func WaitChildren(t testing.TB, c *framework.Client, path string, n int) []string {
	t.Helper()
	var kids []string
	// The condition runs on another goroutine, where FailNow must not be
	// called: errors go through the collector, and the next poll retries.
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		got, err := List(c, path)
		if !assert.NoError(ct, err) {
			return
		}
		kids = got
		assert.Len(ct, kids, n, "children of %s", path)
	}, 30*time.Second, 10*time.Millisecond)
	return kids
}

// Requeued waits until path has as many children as before but not the same
// ones: a contender whose node went with its session has queued again.
func Requeued(t testing.TB, c *framework.Client, path string, before []string) {
	t.Helper()
	was := slices.Sorted(slices.Values(before))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		now, err := List(c, path)
		if !assert.NoError(ct, err) {
			return
		}
		slices.Sort(now)
		assert.Len(ct, now, len(was), "children of %s", path)
		assert.NotEqual(ct, was, now, "children of %s: nobody queued again", path)
	}, 30*time.Second, 20*time.Millisecond)
}

// Child re-runs the test binary as a helper process (env=spec in its
// environment; the test's TestMain recognises it), waits for a stdout line
// starting with ready, and kills it when t ends. kill -9 of it is real.
func Child(t testing.TB, env, spec, ready string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"="+spec)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		line <- l
	}()
	select {
	case l := <-line:
		if !strings.HasPrefix(l, ready) {
			t.Fatalf("helper process said %q, want %q", l, ready)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("helper process not ready")
	}
	return cmd
}

// ChildSpec joins a helper's parameters for Child.
func ChildSpec(parts ...any) string {
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, "|")
}

// Repeat calls f(0), f(1), ... f(n-1), one every interval, on a goroutine of
// its own, until done or stopped; stop waits for it to end. It paces a
// stream of changes (watch events for another client, say), it does not
// wait for an outcome.
func Repeat(interval time.Duration, n int, f func(i int)) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for i := range n {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			f(i)
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		<-done
	}
}

// WaitClosed fails t unless ch is closed within timeout; what says what
// did not happen.
func WaitClosed(t testing.TB, ch <-chan struct{}, timeout time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(timeout):
		t.Fatalf("%s within %v", what, timeout)
	}
}

// Expired is a context whose deadline has passed: a call given it fails
// with context.DeadlineExceeded.
func Expired() context.Context {
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	cancel() // the deadline has passed: Err stays DeadlineExceeded
	return ctx
}

// Cancelled is a context that was cancelled.
func Cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// Elsewhere runs f on a goroutine of its own, which holds nothing, and
// returns its result: a release by a goroutine that is not the holder.
func Elsewhere(f func() error) error {
	out := make(chan error, 1)
	go func() { out <- f() }()
	return <-out
}

// Goroutine is one goroutine that runs the calls given to Do, one at a
// time, until t ends: the holder of a per-goroutine (reentrant) lock that
// a test can ask to acquire or release again later.
type Goroutine struct {
	calls chan func()
}

// NewGoroutine starts a Goroutine; it ends when t does.
func NewGoroutine(t testing.TB) *Goroutine {
	g := &Goroutine{calls: make(chan func())}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case f := <-g.calls:
				f()
			case <-quit:
				return
			}
		}
	}()
	t.Cleanup(func() { close(quit); <-done })
	return g
}

// Do runs f on g's goroutine and returns its result.
func (g *Goroutine) Do(f func() error) error {
	out := make(chan error, 1)
	g.calls <- func() { out <- f() }
	return <-out
}

// LoseSession makes the server expire c's session, c being connected
// through p alone (zktest.ExpireSession), and waits until c has learnt it:
// its loss signal has fired and it runs on a new session.
func LoseSession(t testing.TB, p *zktest.Proxy, c *framework.Client) {
	t.Helper()
	old := c.Session()
	zktest.ExpireSession(t, p, old.ID)
	WaitClosed(t, old.Lost, 30*time.Second, "the client did not learn that its session was lost")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s, err := c.WaitConnected(ctx)
		if assert.NoError(ct, err) {
			assert.NotEqual(ct, old.ID, s.ID, "still on the expired session")
		}
	}, 30*time.Second, 20*time.Millisecond)
}

// Link is a client's link as a test first saw it, to show later that it
// never dropped.
type Link struct {
	c   *framework.Client
	s   conn.Session
	sub *framework.Subscription[conn.Event]
}

// WatchLink waits until c is connected and starts watching its link; the
// watch ends with t.
func WatchLink(t testing.TB, c *framework.Client) *Link {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := c.WaitConnected(ctx)
	require.NoError(t, err)
	sub := c.Subscribe()
	t.Cleanup(sub.Close)
	// The state as it stands: the link WatchLink watches.
	if now := <-sub.Changes(); !now.State.IsConnected() || now.SessionID != s.ID {
		t.Fatalf("the link changed as it was taken: %v", now)
	}
	return &Link{c: c, s: s, sub: sub}
}

// RequireUnbroken fails t unless c is still on the link WatchLink saw,
// with no change of state since, after one more round trip: a request the
// server refuses by closing the link (one over its size limit) is followed
// by that close before anything sent after it is answered.
func (l *Link) RequireUnbroken(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _, err := l.c.Exists(ctx, "/")
	require.NoError(t, err)
	select {
	case <-l.s.Suspended:
		t.Fatalf("the link of session 0x%x dropped", l.s.ID)
	default:
	}
	select {
	case ev := <-l.sub.Changes():
		t.Fatalf("the link changed: %v", ev)
	default:
	}
	require.Equal(t, l.s.ID, l.c.Session().ID, "another session")
}

// Failure is one row of a table over a package's failures: the call,
// every sentinel its error must match (errors.Is), and the beginning of
// its message ("mutex /locks/a: "), if the row names one.
type Failure struct {
	Call   func() error
	Want   []error
	Prefix string
}

// Fails is the row for call, whose error must match every one of want.
func Fails(call func() error, want ...error) Failure { return Failure{Call: call, Want: want} }

// Named is Fails for an error whose message begins with prefix: the
// recipe and its path, as "double barrier /jobs/a: ".
func Named(prefix string, call func() error, want ...error) Failure {
	return Failure{Call: call, Want: want, Prefix: prefix}
}

// MatchSentinels runs every row as a subtest: the call must fail with a
// *framework.RecipeError that names the recipe and its path, matches each
// sentinel the row wants and begins with the row's prefix (a row for a nil
// or zero recipe, which has no path, gives the prefix "mutex: ").
func MatchSentinels(t *testing.T, rows map[string]Failure) {
	t.Helper()
	for name, row := range rows {
		t.Run(name, func(t *testing.T) {
			err := row.Call()
			require.Error(t, err)
			for _, want := range row.Want {
				assert.True(t, errors.Is(err, want), "got %v, want %v", err, want)
			}
			var re *framework.RecipeError
			if !assert.True(t, errors.As(err, &re), "%q does not name its recipe (not a *framework.RecipeError)", err) {
				return
			}
			if row.Prefix == "" {
				// Only a nil or zero recipe has no path to name, and its
				// row says so with the prefix it expects.
				assert.NotEmpty(t, re.Path, "%q does not name its path", err)
			}
			assert.True(t, strings.HasPrefix(err.Error(), row.Prefix), "%q does not begin with %q", err, row.Prefix)
		})
	}
}

// RefusesNilContext runs every row, a call given a nil context, as a
// subtest: it must return an error that matches zkrecipes.ErrNilContext
// (and so zkrecipes.ErrInvalidArgument) and says "nil context", and must
// not panic.
func RefusesNilContext(t *testing.T, rows map[string]func() error) {
	t.Helper()
	for name, call := range rows {
		t.Run(name, func(t *testing.T) {
			var err error
			panicked := func() (p any) {
				defer func() { p = recover() }()
				err = call()
				return nil
			}()
			require.Nil(t, panicked, "a nil context panics")
			require.ErrorIs(t, err, zkrecipes.ErrNilContext)
			require.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
			assert.ErrorContains(t, err, "nil context")
		})
	}
}

// SkipUnderRace skips a test that reconnects many times with watches set:
// go-zookeeper v1.0.4 itself races on Conn.lastZxid then (recvLoop writes
// it while sendSetWatches reads it; go-zookeeper/zk#35), which the race
// detector reports against the test. Such a test's name ends in
// WithoutRace: make test runs those again without the detector.
func SkipUnderRace(t testing.TB) {
	t.Helper()
	if RaceEnabled {
		t.Skip("go-zookeeper v1.0.4 races on Conn.lastZxid when reconnecting with watches set; make test runs this without -race")
	}
}

// IdleWorkers is the goleak option for a client's idle workers: a client
// keeps a few goroutines that wait for its next request (framework's
// spawn) until they have had no work for about a second, or the client
// closes. A test that checks for leaks at once while a client is still
// open ignores them; a busy worker (one running a task) still counts.
func IdleWorkers() goleak.Option {
	return goleak.IgnoreTopFunction("github.com/zkrecipes/zkrecipes/framework.(*Client).work")
}

// LeakBase is the goleak options of a check that nothing started from
// now on outlives its owner: what runs now, a client's idle workers and
// the connections of clients still open (ClientLoops) are not leaks.
func LeakBase() []goleak.Option {
	return append([]goleak.Option{goleak.IgnoreCurrent(), IdleWorkers()}, ClientLoops()...)
}

// ClientLoops are the goleak options for the goroutines of a connection
// that belongs to a client still open: go-zookeeper's send and receive
// loops, and the test proxy's links. go-zookeeper starts its loops after
// it reports the session, so they may not exist yet when Dial returns,
// and a reconnect starts new ones; a snapshot taken after Dial
// (goleak.IgnoreCurrent) does not cover them.
func ClientLoops() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("github.com/go-zookeeper/zk.(*Conn).sendLoop"),
		goleak.IgnoreAnyFunction("github.com/go-zookeeper/zk.(*Conn).recvLoop"),
		goleak.IgnoreAnyFunction("github.com/zkrecipes/zkrecipes/internal/zktest.(*Proxy).pump"),
		goleak.IgnoreAnyFunction("github.com/zkrecipes/zkrecipes/internal/zktest.(*Proxy).accept.func3"),
	}
}
