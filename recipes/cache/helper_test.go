package cache_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }

var (
	newClient = testkit.Client
	ctxT      = testkit.Ctx
)

// newCache makes and starts a cache, closed at the test's end.
func newCache(t testing.TB, c *framework.Client, path string, shape cache.Shape, opts ...cache.Option) *cache.Cache {
	t.Helper()
	ch, err := cache.New(c, path, shape, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { ch.Close() })
	require.NoError(t, ch.Start(ctxT(t, 30*time.Second)))
	return ch
}

func create(t testing.TB, c *framework.Client, path, data string) {
	t.Helper()
	_, err := c.Create(ctxT(t, 30*time.Second), path, []byte(data), framework.WithParents())
	require.NoError(t, err)
}

func set(t testing.TB, c *framework.Client, path, data string) {
	t.Helper()
	_, err := c.Set(ctxT(t, 30*time.Second), path, []byte(data), -1)
	require.NoError(t, err)
}

func del(t testing.TB, c *framework.Client, path string) {
	t.Helper()
	require.NoError(t, c.Delete(ctxT(t, 30*time.Second), path, -1, framework.WithChildren()))
}

// mirror applies a subscription's events to its first snapshot, as a
// reader would, and checks each one against the view it has: nothing
// reported twice (a Created of a node it has, a Deleted of one it does
// not), nothing going back (a Changed to an older or equal Mzxid, or of
// another incarnation).
type mirror struct {
	t   testing.TB
	sub *framework.Subscription[cache.Event]

	mu       sync.Mutex
	view     map[string]cache.Node
	history  []cache.Event
	problems []string
	done     chan struct{}
}

func newMirror(t testing.TB, ch *cache.Cache) *mirror {
	m := &mirror{t: t, sub: ch.Subscribe(), view: map[string]cache.Node{}, done: make(chan struct{})}
	go m.run()
	t.Cleanup(func() {
		m.sub.Close()
		<-m.done
		m.mu.Lock()
		defer m.mu.Unlock()
		assert.Empty(t, m.problems, "events that break the view")
	})
	return m
}

func (m *mirror) run() {
	defer close(m.done)
	first := true
	for ev := range m.sub.Changes() {
		m.mu.Lock()
		m.history = append(m.history, ev)
		if first && ev.Type != cache.Snapshot {
			m.problems = append(m.problems, fmt.Sprintf("first event %v, not a snapshot", ev.Type))
		}
		first = false
		switch ev.Type {
		case cache.Snapshot, cache.Overflow:
			m.view = map[string]cache.Node{}
			for _, n := range ev.Nodes {
				m.view[n.Path] = n
			}
		case cache.Created:
			if _, ok := m.view[ev.Node.Path]; ok {
				m.problems = append(m.problems, "created twice: "+ev.Node.Path)
			}
			m.view[ev.Node.Path] = ev.Node
		case cache.Changed:
			old, ok := m.view[ev.Node.Path]
			switch {
			case !ok:
				m.problems = append(m.problems, "changed, not there: "+ev.Node.Path)
			case old.Stat.Czxid != ev.Node.Stat.Czxid:
				m.problems = append(m.problems, "changed into another incarnation: "+ev.Node.Path)
			case old.Stat.Mzxid >= ev.Node.Stat.Mzxid:
				m.problems = append(m.problems, fmt.Sprintf("went back: %s mzxid %d after %d", ev.Node.Path, ev.Node.Stat.Mzxid, old.Stat.Mzxid))
			case old.Stat.Mzxid != ev.Old.Stat.Mzxid:
				m.problems = append(m.problems, "Old is not the state before: "+ev.Node.Path)
			}
			m.view[ev.Node.Path] = ev.Node
		case cache.Deleted:
			if _, ok := m.view[ev.Node.Path]; !ok {
				m.problems = append(m.problems, "deleted, not there: "+ev.Node.Path)
			}
			delete(m.view, ev.Node.Path)
		}
		m.mu.Unlock()
	}
}

// types returns the types of the events so far, with the path of each
// node event ("created /a").
func (m *mirror) types() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, ev := range m.history {
		switch ev.Type {
		case cache.Created, cache.Changed, cache.Deleted:
			out = append(out, ev.Type.String()+" "+ev.Node.Path)
		default:
			out = append(out, ev.Type.String())
		}
	}
	return out
}

// since returns the node events after the n-th event.
func (m *mirror) nodeEventsSince(n int) []string {
	var out []string
	for _, s := range m.types()[n:] {
		if strings.HasPrefix(s, "created") || strings.HasPrefix(s, "changed") || strings.HasPrefix(s, "deleted") {
			out = append(out, s)
		}
	}
	return out
}

func (m *mirror) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.history)
}

// rendered is a view as "path=data" lines, sorted.
func rendered(nodes map[string]cache.Node) string {
	var lines []string
	for p, n := range nodes {
		lines = append(lines, fmt.Sprintf("%s=%s@%d/%d", p, n.Data, n.Stat.Czxid, n.Stat.Mzxid))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func (m *mirror) rendered() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return rendered(m.view)
}

func renderedNodes(nodes []cache.Node) string {
	v := map[string]cache.Node{}
	for _, n := range nodes {
		v[n.Path] = n
	}
	return rendered(v)
}

// server reads what the shape of path covers from the server, directly.
func server(t testing.TB, c *framework.Client, path string, shape string, depth int) string {
	t.Helper()
	v := map[string]cache.Node{}
	var walk func(p string, d int)
	walk = func(p string, d int) {
		data, st, err := c.Get(ctxT(t, 30*time.Second), p)
		if errors.Is(err, zk.ErrNoNode) {
			return
		}
		require.NoError(t, err)
		if !(shape == "children" && d == 0) {
			v[p] = cache.Node{Path: p, Data: bytes.Clone(data), Stat: *st}
		}
		if d >= depth {
			return
		}
		kids, _, err := c.Children(ctxT(t, 30*time.Second), p)
		if errors.Is(err, zk.ErrNoNode) {
			return
		}
		require.NoError(t, err)
		for _, k := range kids {
			walk(framework.Join(p, k), d+1)
		}
	}
	walk(path, 0)
	return rendered(v)
}

// waitAgrees waits until the cache is current and its view, its
// subscriber's and the server's are the same.
func waitAgrees(t testing.TB, ch *cache.Cache, m *mirror, direct *framework.Client, shape string, depth int) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		want := server(t, direct, ch.Path(), shape, depth)
		assert.NoError(ct, ch.Err())
		nodes, err := ch.Nodes()
		assert.NoError(ct, err)
		assert.Equal(ct, want, renderedNodes(nodes), "the cache's view")
		if m != nil {
			assert.Equal(ct, want, m.rendered(), "the subscriber's view")
		}
	}, 60*time.Second, 20*time.Millisecond)
}

func (m *mirror) snapshotHistory() []cache.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.history)
}
