package partition

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/recipes/group"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

const recipe = "partition"

// retryDelay is how long an item's acquire waits after a failure (its
// session lost while queued, the link down) before it queues again: long
// enough not to spin on a dead link, short against a session timeout.
const retryDelay = 200 * time.Millisecond

// Kind is what happened to one of this member's items.
type Kind int

// The kinds of Event.
const (
	// Acquired: the item is this member's, under Hold, until a Released or
	// Lost event for it.
	Acquired Kind = iota + 1
	// Released: this member gave the item up: it must move to another
	// member (Err nil), or the Partitioner was closed (Err
	// zkrecipes.ErrClosed). The hold's Done had fired before its lock was
	// given back.
	Released
	// Lost: the item's hold ended without this member giving it up
	// (Err: the hold's Err, zkrecipes.ErrSuspended, zkrecipes.ErrSessionLost,
	// zkrecipes.ErrNodeDeleted). The member takes it again if it is still
	// its own once the session is back.
	Lost
)

func (k Kind) String() string {
	switch k {
	case Acquired:
		return "acquired"
	case Released:
		return "released"
	case Lost:
		return "lost"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Event is a change of this member's items, as Subscribe delivers it.
type Event struct {
	Kind Kind
	Item string
	// Hold is the item's hold: its fencing token and loss signal. For
	// Released and Lost, it has ended (its Done is closed).
	Hold *hold.Hold
	// Err says why a Released or Lost item went (see Kind).
	Err error
}

// slot is this member's state of one item. Guarded by Partitioner.mu.
type slot struct {
	lock      *mutex.Mutex
	acquiring bool
	cancel    context.CancelFunc // of the acquire in progress
	h         *hold.Hold         // the item's hold while owned
	retiring  bool               // h is being given up
	stopWork  context.CancelFunc // the worker's context
	workDone  chan struct{}      // closed when the worker returns
	retryAt   time.Time          // no acquire before then
}

// Partitioner is this process's membership of a partition: the work items
// it owns, each under a hold, and the moves that keep every item owned
// once and the spread even. Make one with New; its methods may be called
// from any goroutine.
type Partitioner struct {
	client *framework.Client
	path   string
	id     string
	items  Items
	cfg    config
	member *group.Member

	mu      sync.Mutex
	started bool
	closed  bool
	cache   *cache.Cache // the items, for ChildrenOf
	locks   *cache.Cache // the items' lock nodes: who owns what
	slots   map[string]*slot
	want    map[string]bool
	closing chan struct{}
	kick    chan struct{}
	wg      sync.WaitGroup
	feed    framework.Feed[Event]
}

// New returns this process's membership, as member id, of the partition at
// path, sharing items. It sends nothing: Start joins. Bad input is an error
// naming the recipe and path: a nil client, an id that is not one path
// segment, the zero Items, an empty List or one with a duplicate or a name
// that is not one path segment, a nil WithWorker (zkrecipes.ErrInvalidArgument);
// a malformed path, or the root (zkrecipes.ErrInvalidPath).
func New(client *framework.Client, path, id string, items Items, opts ...Option) (*Partitioner, error) {
	rerr := func(err error) error { return framework.RecipeErr(recipe, path, err) }
	if client == nil {
		return nil, rerr(fmt.Errorf("%w: nil client", zkrecipes.ErrInvalidArgument))
	}
	if err := framework.ValidateRecipePath(path); err != nil {
		return nil, rerr(err)
	}
	cfg := config{payload: []byte(framework.DefaultParticipantID())}
	for _, o := range opts {
		if o == nil {
			return nil, rerr(fmt.Errorf("%w: nil option", zkrecipes.ErrInvalidArgument))
		}
		o.applyPartition(&cfg)
	}
	if cfg.workerSet && cfg.worker == nil {
		return nil, rerr(fmt.Errorf("%w: nil worker", zkrecipes.ErrInvalidArgument))
	}
	if err := checkSegment(path, "member id", id); err != nil {
		return nil, rerr(err)
	}
	switch {
	case items.list == nil && items.path == "":
		return nil, rerr(fmt.Errorf("%w: no items: use List or ChildrenOf", zkrecipes.ErrInvalidArgument))
	case items.path != "":
		if err := framework.ValidatePath(items.path); err != nil {
			return nil, rerr(fmt.Errorf("items: %w", err))
		}
	case len(items.list) == 0:
		return nil, rerr(fmt.Errorf("%w: an empty list of items", zkrecipes.ErrInvalidArgument))
	default:
		seen := make(map[string]bool, len(items.list))
		for _, it := range items.list {
			if err := checkSegment(path, "item", it); err != nil {
				return nil, rerr(err)
			}
			if seen[it] {
				return nil, rerr(fmt.Errorf("%w: item %q listed twice", zkrecipes.ErrInvalidArgument, it))
			}
			seen[it] = true
		}
	}
	m, err := group.New(client, framework.Join(path, "members"), id, cfg.payload)
	if err != nil {
		// The group's error names its own path; ours names the partition.
		var re *framework.RecipeError
		if errors.As(err, &re) {
			err = re.Err
		}
		return nil, rerr(err)
	}
	return &Partitioner{
		client: client, path: path, id: id, items: items, cfg: cfg, member: m,
		slots: make(map[string]*slot), want: make(map[string]bool),
		closing: make(chan struct{}), kick: make(chan struct{}, 1),
	}, nil
}

// checkSegment refuses a name that is not one valid path segment.
func checkSegment(path, what, name string) error {
	if name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("%w: %s %q is not one path segment", zkrecipes.ErrInvalidArgument, what, name)
	}
	if err := framework.ValidatePath(framework.Join(path, name)); err != nil {
		return fmt.Errorf("%s %q: %w", what, name, err)
	}
	return nil
}

func (p *Partitioner) usable() error {
	if p == nil || p.client == nil {
		return framework.RecipeErr(recipe, "", fmt.Errorf("%w: a nil or zero Partitioner: make one with New", zkrecipes.ErrInvalidArgument))
	}
	return nil
}

func (p *Partitioner) err(err error) error { return framework.RecipeErr(recipe, p.path, err) }

// Path returns the partition's path.
func (p *Partitioner) Path() string {
	if p == nil {
		return ""
	}
	return p.path
}

// ID returns this member's id.
func (p *Partitioner) ID() string {
	if p == nil {
		return ""
	}
	return p.id
}

// ItemPath returns the lock directory of item under the partition at
// path: <path>/items/<item>. Its holder's node has the member id as data
// (mutex.Participants reads it).
func ItemPath(path, item string) string {
	return framework.Join(framework.Join(path, "items"), item)
}

// Start joins the partition: it makes this member's node, reads the
// members (and, for ChildrenOf, the items), and from then on takes and
// gives up items as the members and the items change, until Close. It
// returns once joined, or with ctx's error, leaving nothing behind; the
// items are acquired in the background (Subscribe, Owned).
func (p *Partitioner) Start(ctx context.Context) error {
	if err := p.usable(); err != nil {
		return err
	}
	if ctx == nil {
		return p.err(zkrecipes.ErrNilContext)
	}
	p.mu.Lock()
	switch {
	case p.closed:
		p.mu.Unlock()
		return p.err(zkrecipes.ErrClosed)
	case p.started:
		p.mu.Unlock()
		return p.err(zkrecipes.ErrStarted)
	}
	p.started = true
	p.mu.Unlock()

	var ch, locks *cache.Cache
	fail := func(err error) error {
		if ch != nil {
			_ = ch.Close()
		}
		if locks != nil {
			_ = locks.Close()
		}
		p.mu.Lock()
		p.started = false
		p.mu.Unlock()
		return p.err(err)
	}
	if p.items.path != "" {
		var err error
		ch, err = cache.New(p.client, p.items.path, cache.Children(), cache.WithoutData())
		if err != nil {
			return fail(err)
		}
		if err := ch.Start(ctx); err != nil {
			return fail(err)
		}
	}
	// The owners are an input of Assign (it is sticky): the first lock node
	// of each item, whose data is its holder's member id.
	var err error
	locks, err = cache.New(p.client, framework.Join(p.path, "items"), cache.Tree(2))
	if err != nil {
		return fail(err)
	}
	if err := locks.Start(ctx); err != nil {
		return fail(err)
	}
	memberSub := p.member.Subscribe()
	if err := p.member.Start(ctx); err != nil {
		memberSub.Close()
		// A Member whose Start failed starts again; keep it.
		return fail(err)
	}
	p.mu.Lock()
	if p.closed {
		// Close ran while we joined: it could not see what we made.
		p.mu.Unlock()
		memberSub.Close()
		if ch != nil {
			_ = ch.Close()
		}
		_ = locks.Close()
		return p.err(zkrecipes.ErrClosed)
	}
	p.cache, p.locks = ch, locks
	p.wg.Add(3)
	go forward(p, memberSub)
	go forward(p, locks.Subscribe())
	go p.run()
	if ch != nil {
		p.wg.Add(1)
		go forward(p, ch.Subscribe())
	}
	p.mu.Unlock()
	p.poke()
	return nil
}

// forward turns every change of a followed view into a poke of the run
// loop: the loop reads the views afresh, so what changed does not matter.
func forward[T any](p *Partitioner, sub *framework.Subscription[T]) {
	defer p.wg.Done()
	defer sub.Close()
	for {
		select {
		case _, ok := <-sub.Changes():
			if !ok {
				return
			}
			p.poke()
		case <-p.closing:
			return
		}
	}
}

func (p *Partitioner) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// run is the loop that brings this member's items to what Assign says:
// one pass per poke, and a timer for acquires that wait to retry.
func (p *Partitioner) run() {
	defer p.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-p.closing:
			return
		case <-p.kick:
		case <-timer.C:
		}
		next := p.reconcile()
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		if !next.IsZero() {
			timer.Reset(time.Until(next))
		} else {
			timer.Reset(time.Hour)
		}
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
// still held by one member at a time, its lock sees to that). It returns
// when the earliest waiting retry is due, or the zero time.
func (p *Partitioner) reconcile() time.Time {
	members, _ := p.member.IDs()
	items := p.currentItems()
	owners := Assign(items, members, p.currentOwners(items))
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return time.Time{}
	}
	want := make(map[string]bool)
	for it, m := range owners {
		if m == p.id {
			want[it] = true
		}
	}
	p.want = want
	var next time.Time
	now := time.Now()
	for it, s := range p.slots {
		switch {
		case s.h != nil && !s.retiring && s.h.Err() != nil:
			p.retire(it, s, nil)
		case s.h != nil && !s.retiring && !want[it]:
			p.retire(it, s, nil)
		case s.acquiring && !want[it]:
			s.cancel()
		case s.h == nil && !s.acquiring && !want[it]:
			// An item gone from the set, or gone to another member: its
			// Mutex holds nothing and waits for nothing.
			_ = s.lock.Close()
			delete(p.slots, it)
		}
	}
	for it := range want {
		s := p.slots[it]
		if s == nil {
			lock, err := mutex.New(p.client, ItemPath(p.path, it), mutex.WithParticipantID(p.id))
			if err != nil {
				// Validated in New or by currentItems: cannot happen.
				continue
			}
			s = &slot{lock: lock}
			p.slots[it] = s
		}
		if s.h != nil || s.acquiring {
			continue
		}
		if now.Before(s.retryAt) {
			if next.IsZero() || s.retryAt.Before(next) {
				next = s.retryAt
			}
			continue
		}
		p.acquire(it, s)
	}
	return next
}

// acquire queues for item's lock in a goroutine of its own (a fresh one
// each time: a Mutex is reentrant per goroutine). Called with p.mu held.
func (p *Partitioner) acquire(item string, s *slot) {
	ctx, cancel := context.WithCancel(context.Background())
	s.acquiring, s.cancel = true, cancel
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer cancel()
		h, err := s.lock.Acquire(ctx)
		p.mu.Lock()
		defer p.mu.Unlock()
		s.acquiring, s.cancel = false, nil
		if err != nil {
			if ctx.Err() == nil && !p.closed {
				s.retryAt = time.Now().Add(retryDelay)
			}
			p.poke()
			return
		}
		if p.closed || !p.want[item] || p.slots[item] != s || h.Err() != nil {
			// Its turn came after it stopped being ours, or it was lost
			// on its way here (h.Err checks the link's proof of life
			// again: a process thawed after a long freeze): give it back
			// unseen (no one was told it was ours).
			_ = h.Release()
			p.poke()
			return
		}
		s.h = h
		p.feed.Publish(Event{Kind: Acquired, Item: item, Hold: h})
		if p.cfg.worker != nil {
			wctx, stop := context.WithCancel(context.Background())
			s.stopWork, s.workDone = stop, make(chan struct{})
			done := s.workDone
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				defer close(done)
				if h.Err() != nil {
					return // lost before its worker began: the loop retires it
				}
				hctx := h.Context(wctx)
				p.cfg.worker(hctx, item, h)
			}()
		}
		// The loop must learn of the loss to say so and take it again.
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			select {
			case <-h.Done():
				p.poke()
			case <-p.closing:
			}
		}()
	}()
}

// retire gives item up: it stops the worker, waits for it, releases the
// hold (whose Done fires before its lock node is deleted, so before the
// next owner can have it), and says so. closeErr is zkrecipes.ErrClosed
// from Close, else nil. Called with p.mu held; the wait is in a goroutine.
func (p *Partitioner) retire(item string, s *slot, closeErr error) {
	s.retiring = true
	h, stop, done := s.h, s.stopWork, s.workDone
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		lost := h.Err()
		if stop != nil {
			stop()
			<-done
		}
		relErr := h.Release()
		ev := Event{Kind: Released, Item: item, Hold: h, Err: closeErr}
		switch {
		case lost != nil:
			ev.Kind, ev.Err = Lost, lost
		case errors.Is(relErr, zkrecipes.ErrHoldLost):
			// Lost while the worker stopped: its last moments were not
			// protected.
			ev.Kind, ev.Err = Lost, h.Err()
		}
		p.mu.Lock()
		p.feed.Publish(ev)
		s.h, s.retiring, s.stopWork, s.workDone = nil, false, nil, nil
		p.mu.Unlock()
		p.poke()
	}()
}

// Owned returns this member's items and their holds, as they stand: items
// being given up are not in it.
func (p *Partitioner) Owned() map[string]*hold.Hold {
	out := make(map[string]*hold.Hold)
	if p.usable() != nil {
		return out
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for it, s := range p.slots {
		if s.h != nil && !s.retiring && s.h.Err() == nil {
			out[it] = s.h
		}
	}
	return out
}

// Items returns the items this member owns, sorted (the keys of Owned).
func (p *Partitioner) Items() []string {
	owned := p.Owned()
	out := make([]string, 0, len(owned))
	for it := range owned {
		out = append(out, it)
	}
	sort.Strings(out)
	return out
}

// Members returns the ids of the partition's members as this member sees
// them, sorted; the error is nil while that view is current, and says why
// it may be stale otherwise (the view is returned all the same).
func (p *Partitioner) Members() ([]string, error) {
	if err := p.usable(); err != nil {
		return nil, err
	}
	ids, err := p.member.IDs()
	var re *framework.RecipeError
	if errors.As(err, &re) {
		err = re.Err
	}
	if err != nil {
		return ids, p.err(err)
	}
	return ids, nil
}

// Subscribe returns this member's items: first an Acquired event for each
// item it owns now (in item order; none before Start), then every
// Acquired, Released and Lost, in the order they happened. Read it
// promptly or Close it: its queue is unbounded. It ends after Close, which
// releases every item first (their Released events are the last).
func (p *Partitioner) Subscribe() *framework.Subscription[Event] {
	if p.usable() != nil {
		var f framework.Feed[Event]
		f.End(nil)
		return f.Subscribe()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var now []Event
	for _, it := range slices.Sorted(maps.Keys(p.slots)) {
		if s := p.slots[it]; s.h != nil && !s.retiring && s.h.Err() == nil {
			now = append(now, Event{Kind: Acquired, Item: it, Hold: s.h})
		}
	}
	return p.feed.SubscribeWith(now...)
}

// Close gives up every item (stopping their workers and waiting for them,
// then releasing their holds), leaves the group of members and stops
// following the items. It is idempotent: later calls return nil; Start
// after it returns zkrecipes.ErrClosed. The client is not closed.
func (p *Partitioner) Close() error {
	if err := p.usable(); err != nil {
		return err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.closing)
	for it, s := range p.slots {
		if s.acquiring {
			s.cancel()
		}
		if s.h != nil && !s.retiring {
			p.retire(it, s, zkrecipes.ErrClosed)
		}
	}
	ch, locks := p.cache, p.locks
	p.mu.Unlock()
	p.wg.Wait()
	p.mu.Lock()
	for _, s := range p.slots {
		_ = s.lock.Close()
	}
	p.mu.Unlock()
	_ = p.member.Close()
	if ch != nil {
		_ = ch.Close()
	}
	if locks != nil {
		_ = locks.Close()
	}
	p.feed.End(nil)
	return nil
}
