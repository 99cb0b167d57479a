// Package childwatch follows the children of one node, and their data,
// for the recipes that list members (discovery's instance cache, the group
// member's listing) until recipes/cache, the module's cache, takes its
// place. It is deliberately minimal: any change (a child added or removed,
// a child's data changed, a gap in the link) re-reads the whole listing,
// which costs a round trip per child; it reports each new view whole, with
// the difference from the one before.
package childwatch

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
)

// Child is one child as read.
type Child struct {
	Name string
	Data []byte
	Stat *zk.Stat
}

// Change is the difference between two views: the children that appeared,
// changed (a different data version or a new incarnation) and went.
type Change struct {
	Added, Updated, Removed []Child
}

// Empty reports whether c changes nothing.
func (c Change) Empty() bool { return len(c.Added)+len(c.Updated)+len(c.Removed) == 0 }

// Watcher follows the children of one path. Make one with Start.
type Watcher struct {
	client *framework.Client
	path   string
	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   chan struct{} // closed by Close
	once   sync.Once

	changes framework.Feed[Change]

	mu      sync.Mutex
	view    map[string]Child
	read    bool         // view has been read at least once
	link    conn.Session // the link view was read over
	readErr error        // the last read failed with it
	changed chan struct{}
}

// Start follows path's children until Close. Nothing of its own is made:
// a missing path is an empty listing, until it is made.
func Start(client *framework.Client, path string) *Watcher {
	life, cancel := context.WithCancel(context.Background())
	w := &Watcher{client: client, path: path, cancel: cancel, done: make(chan struct{}), view: map[string]Child{}, changed: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.run(life)
	}()
	return w
}

// Subscribe returns the changes from now on.
func (w *Watcher) Subscribe() *framework.Subscription[Change] { return w.changes.Subscribe() }

// View returns the children as last read, sorted by name, and whether the
// view may be stale: nil when it was read over the current link and the
// watches are set; else the reason.
func (w *Watcher) View() ([]Child, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]Child, 0, len(w.view))
	for _, ch := range w.view {
		out = append(out, ch)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, w.stalenessLocked()
}

func (w *Watcher) stalenessLocked() error {
	switch w.client.State() {
	case conn.StateClosed:
		return zkrecipes.ErrClosed
	case conn.StateLost:
		return zkrecipes.ErrSessionLost
	case conn.StateSuspended:
		return zkrecipes.ErrSuspended
	}
	if !w.read {
		return errors.New("not read yet")
	}
	select {
	case <-w.link.Suspended:
		return zkrecipes.ErrSuspended
	default:
	}
	return w.readErr
}

// Wait waits until the children have been read once.
func (w *Watcher) Wait(ctx context.Context) error {
	for {
		w.mu.Lock()
		read, ch := w.read, w.changed
		w.mu.Unlock()
		if read {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-w.client.Done():
			return zkrecipes.ErrClosed
		case <-w.done:
			return zkrecipes.ErrClosed
		}
	}
}

// Close stops following and ends the subscriptions. It is idempotent.
func (w *Watcher) Close() {
	w.once.Do(func() { close(w.done) })
	w.cancel()
	w.wg.Wait()
	w.changes.End(nil)
}

func (w *Watcher) run(life context.Context) {
	c := w.client
	pause := 20 * time.Millisecond
	for life.Err() == nil {
		if !c.State().IsConnected() {
			if _, err := c.WaitConnected(life); err != nil {
				return // life ended, or the client closed
			}
			continue
		}
		link := c.Session()
		select {
		case <-link.Suspended:
			// The state has not caught up with the drop yet.
			select {
			case <-time.After(pause):
			case <-life.Done():
			}
			continue
		default:
		}
		wctx, wcancel := context.WithCancel(life)
		cases := []reflect.SelectCase{
			{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(life.Done())},
			{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c.Done())},
			{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(link.Suspended)},
		}
		watches, err := w.readAll(wctx, link)
		if err != nil {
			w.mu.Lock()
			w.readErr = err
			w.mu.Unlock()
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(time.After(pause))})
			pause = min(2*pause, time.Second)
		} else {
			pause = 20 * time.Millisecond
			for _, ch := range watches {
				cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
			}
		}
		// Any watch, a dropped link or a pause: read again.
		chosen, _, _ := reflect.Select(cases)
		wcancel()
		if chosen == 1 {
			return
		}
	}
}

// readAll reads the listing and every child's data with watches, and
// publishes the difference from the view before.
func (w *Watcher) readAll(ctx context.Context, link conn.Session) ([]<-chan zk.Event, error) {
	c := w.client
	names, _, cw, err := c.ChildrenW(ctx, w.path)
	if errors.Is(err, zk.ErrNoNode) {
		var exists bool
		exists, _, cw, err = c.ExistsW(ctx, w.path)
		if err == nil && exists {
			return w.readAll(ctx, link)
		}
		names = nil
	}
	if err != nil {
		return nil, err
	}
	watches := []<-chan zk.Event{cw}
	view := make(map[string]Child, len(names))
	for _, name := range names {
		data, st, dw, err := c.GetW(ctx, framework.Join(w.path, name))
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone meanwhile: the children watch fires
		}
		if err != nil {
			return nil, err
		}
		view[name] = Child{Name: name, Data: data, Stat: st}
		watches = append(watches, dw)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var ch Change
	for name, n := range view {
		old, ok := w.view[name]
		switch {
		case !ok:
			ch.Added = append(ch.Added, n)
		case old.Stat.Czxid != n.Stat.Czxid || old.Stat.Mzxid != n.Stat.Mzxid || !bytes.Equal(old.Data, n.Data):
			ch.Updated = append(ch.Updated, n)
		}
	}
	for name, old := range w.view {
		if _, ok := view[name]; !ok {
			ch.Removed = append(ch.Removed, old)
		}
	}
	for _, l := range [][]Child{ch.Added, ch.Updated, ch.Removed} {
		sort.Slice(l, func(i, j int) bool { return l[i].Name < l[j].Name })
	}
	w.view, w.link, w.readErr = view, link, nil
	first := !w.read
	w.read = true
	if !ch.Empty() {
		w.changes.Publish(ch)
	}
	if first || !ch.Empty() {
		close(w.changed)
		w.changed = make(chan struct{})
	}
	return watches, nil
}
