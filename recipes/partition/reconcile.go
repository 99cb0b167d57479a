package partition

import (
	"context"

	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// run is the loop that brings this member's items to what Assign says:
// one pass per poke, until life ends. An acquire that fails is retried by
// its own loop (acquire), so run has no timer.
func (p *Partitioner) run(life context.Context) {
	for {
		select {
		case <-life.Done():
			return
		case <-p.kick:
		}
		p.reconcile(life)
	}
}

// currentItems is the item set as this member sees it now.
func (p *Partitioner) currentItems() []string {
	if p.items.path == "" {
		return p.items.list
	}
	nodes, _ := p.cache.Children(p.items.path)
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		name := framework.Base(n.Path)
		if checkSegment(p.path, "item", name) == nil {
			out = append(out, name)
		}
	}
	return out
}

// currentOwners is the holder of every item as this member sees it now:
// the member id in the data of the item's first lock node, as Curator's
// mutex sorts them. The head may be a contender whose turn has just come
// and that has not yet seen it: it will hold the item, or give it back at
// once if the item stopped being its own.
func (p *Partitioner) currentOwners(items []string) map[string]string {
	out := make(map[string]string, len(items))
	for _, it := range items {
		nodes, _ := p.locks.Children(ItemPath(p.path, it))
		var head *cache.Node
		var headKey string
		for i := range nodes {
			k := engine.SortKey(framework.Base(nodes[i].Path), "lock-")
			if head == nil || k < headKey || (k == headKey && nodes[i].Path < head.Path) {
				head, headKey = &nodes[i], k
			}
		}
		if head != nil && len(head.Data) > 0 {
			out[it] = string(head.Data)
		}
	}
	return out
}

// reconcile takes what is this member's and gives up what is not, from
// the views as they stand (a stale view only delays a move: each item is
// still held by one member at a time, its lock sees to that).
func (p *Partitioner) reconcile(life context.Context) {
	members, _ := p.member.IDs()
	items := p.currentItems()
	want := make(map[string]bool)
	for it, m := range Assign(items, members, p.currentOwners(items)) {
		if m == p.id {
			want[it] = true
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if life.Err() != nil {
		return
	}
	p.want = want
	p.letGo()
	p.takeWanted(life)
}

// letGo gives up the items held but lost or no longer wanted, withdraws
// the acquires of items no longer wanted, and forgets the items that are
// neither wanted, held nor queued for. Called with p.mu held.
func (p *Partitioner) letGo() {
	for it, s := range p.slots {
		switch {
		case s.h != nil && !s.retiring && s.h.Err() != nil:
			p.retire(it, s)
		case s.h != nil && !s.retiring && !p.want[it]:
			p.retire(it, s)
		case s.acquiring && !p.want[it]:
			s.cancel()
		case s.h == nil && !s.acquiring && !p.want[it]:
			// An item gone from the set, or gone to another member: its
			// Mutex holds nothing and waits for nothing.
			_ = s.lock.Close()
			delete(p.slots, it)
		}
	}
}

// takeWanted queues for every wanted item neither held nor queued for.
// Called with p.mu held.
func (p *Partitioner) takeWanted(life context.Context) {
	for it := range p.want {
		s := p.slots[it]
		if s == nil {
			lock, err := mutex.New(p.client, ItemPath(p.path, it), mutex.WithParticipantID(p.id), mutex.WithWatcher(p.watcher))
			if err != nil {
				// Validated in New or by currentItems: cannot happen.
				continue
			}
			s = &slot{lock: lock}
			p.slots[it] = s
		}
		if s.h == nil && !s.acquiring {
			p.acquire(life, it, s)
		}
	}
}
