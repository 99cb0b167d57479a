package watchbench

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
)

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// goTree measures the library's cache, Tree(AnyDepth), over root.
func goTree(t testing.TB, cl *zktest.Cluster, root string, units int, targets []string) row {
	t.Helper()
	c := dial(t, cl)
	defer c.Close()
	w0, before := watches(t, cl), memNow()
	ch, err := cache.New(c, root, cache.Tree(cache.AnyDepth))
	require.NoError(t, err)
	defer ch.Close()
	t0 := time.Now()
	require.NoError(t, ch.Start(ctxFor(t, 20*time.Minute)))
	ready := time.Since(t0)
	after := memNow()
	r := goRow("zkrecipes cache", units, before, after, ready, watches(t, cl)-w0)
	nodes, err := ch.Nodes()
	require.NoError(t, err)
	require.Len(t, nodes, units)

	sub := ch.Subscribe()
	defer sub.Close()
	<-sub.Changes() // the snapshot
	var lat []time.Duration
	for i, p := range targets {
		n, _, err := ch.Get(p)
		require.NoError(t, err)
		data := append([]byte(nil), n.Data...)
		data[0] = 'a' + byte(i%26)
		t0 := time.Now()
		_, err = c.Set(ctxFor(t, time.Minute), p, data, -1)
		require.NoError(t, err)
		waitFor(t, sub, func(ev cache.Event) bool { return ev.Type == cache.Changed && ev.Node.Path == p })
		lat = append(lat, time.Since(t0))
	}
	r.p50, r.p99 = percentiles(lat)
	return r
}

// waitFor reads sub until an event satisfies ok, for at most 30 s.
func waitFor[T any](t testing.TB, sub *framework.Subscription[T], ok func(T) bool) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, open := <-sub.Changes():
			require.True(t, open, "subscription ended: %v", sub.Err())
			if ok(ev) {
				return
			}
		case <-timeout:
			t.Fatal("no event within 30 s")
		}
	}
}

// instanceData is instance i of service name as Curator's serializer
// writes it.
func instanceData(name string, i int) []byte {
	inst := discovery.NewInstance(name)
	inst.ID, inst.Address = fmt.Sprintf("i%04d", i), "10.0.0.1"
	port := 8000 + i
	inst.Port = &port
	b, err := json.Marshal(inst)
	if err != nil {
		panic(err)
	}
	return b
}

// goService measures the library's discovery cache of the service at
// servicePath (basePath/name).
func goService(t testing.TB, cl *zktest.Cluster, servicePath string, units int, targets []string) row {
	t.Helper()
	c := dial(t, cl)
	defer c.Close()
	d, err := discovery.New(c, path.Dir(servicePath))
	require.NoError(t, err)
	defer d.Close()
	w0, before := watches(t, cl), memNow()
	dc, err := d.NewCache(path.Base(servicePath))
	require.NoError(t, err)
	defer dc.Close()
	t0 := time.Now()
	require.NoError(t, dc.Start(ctxFor(t, 20*time.Minute)))
	ready := time.Since(t0)
	after := memNow()
	r := goRow("zkrecipes discovery.Cache", units, before, after, ready, watches(t, cl)-w0)
	insts, err := dc.Instances()
	require.NoError(t, err)
	require.Len(t, insts, units)

	sub := dc.Subscribe()
	defer sub.Close()
	<-sub.Changes() // the snapshot
	var lat []time.Duration
	for i, p := range targets {
		var inst discovery.Instance
		b, _, err := c.Get(ctxFor(t, time.Minute), p)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &inst))
		port := 20000 + i
		inst.Port = &port
		b, err = json.Marshal(inst)
		require.NoError(t, err)
		t0 := time.Now()
		_, err = c.Set(ctxFor(t, time.Minute), p, b, -1)
		require.NoError(t, err)
		waitFor(t, sub, func(ev discovery.CacheEvent) bool {
			return ev.Type == discovery.Updated && ev.Instance.ID == inst.ID && *ev.Instance.Port == port
		})
		lat = append(lat, time.Since(t0))
	}
	r.p50, r.p99 = percentiles(lat)
	return r
}

// goPartition starts members partitioners of items on sessions of their
// own and measures them until each holds its even share.
func goPartition(t testing.TB, cl *zktest.Cluster, root string, items, members int) row {
	t.Helper()
	names := make([]string, items)
	for i := range names {
		names[i] = fmt.Sprintf("item%04d", i)
	}
	clients := make([]*framework.Client, members)
	for i := range clients {
		clients[i] = dial(t, cl)
		defer clients[i].Close()
	}
	w0, before := watches(t, cl), memNow()
	t0 := time.Now()
	ps := make([]*partition.Partitioner, members)
	for i, c := range clients {
		p, err := partition.New(c, root, fmt.Sprintf("m%d", i), partition.List(names...))
		require.NoError(t, err)
		defer p.Close()
		require.NoError(t, p.Start(ctxFor(t, 20*time.Minute)))
		ps[i] = p
	}
	counts := func() (owned []int, even bool) {
		total, even := 0, true
		for _, p := range ps {
			n := len(p.Owned())
			owned = append(owned, n)
			even = even && n >= items/members && n <= (items+members-1)/members
			total += n
		}
		return owned, even && total == items
	}
	deadline := time.Now().Add(*spreadWithin)
	owned, even := counts()
	for ; !even && time.Now().Before(deadline); owned, even = counts() {
		time.Sleep(20 * time.Millisecond) // polling a condition, with a deadline
	}
	ready := time.Since(t0)
	r := goRow(fmt.Sprintf("zkrecipes partition (%d members)", members), items, before, memNow(), ready, watches(t, cl)-w0)
	if !even {
		// A finding, not a reason to lose the other rows: the table says so.
		r.ready, r.note = -1, fmt.Sprintf("no even spread within %s: members own %v", *spreadWithin, owned)
	}
	return r
}
