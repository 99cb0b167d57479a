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

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/recipes/group"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

const recipe = "partition"

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
	rt     *framework.Runtime

	mu    sync.Mutex
	cache *cache.Cache // the items, for ChildrenOf
	locks *cache.Cache // the items' lock nodes: who owns what
	slots map[string]*slot
	want  map[string]bool
	kick  chan struct{}
	feed  framework.Feed[Event]
	// watcher follows every item's hold: a member holding a thousand
	// items costs no goroutine per item.
	watcher *engine.Watcher
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
	// Unlike the other recipes, a partition refuses a nil option.
	for _, o := range opts {
		if o == nil {
			return nil, rerr(fmt.Errorf("%w: nil option", zkrecipes.ErrInvalidArgument))
		}
	}
	cfg, err := framework.Configure(recipe, path, config{payload: []byte(framework.DefaultParticipantID())}, opts, Option.applyPartition)
	if err != nil {
		return nil, err
	}
	if cfg.workerSet && cfg.worker == nil {
		return nil, rerr(fmt.Errorf("%w: nil worker", zkrecipes.ErrInvalidArgument))
	}
	if err := checkSegment(path, "member id", id); err != nil {
		return nil, rerr(err)
	}
	if err := checkItems(path, items); err != nil {
		return nil, rerr(err)
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
		rt:    framework.NewRuntime(client, recipe, path),
		slots: make(map[string]*slot), want: make(map[string]bool), watcher: engine.NewWatcher(client),
		kick: make(chan struct{}, 1),
	}, nil
}

// checkItems refuses the zero Items, a bad ChildrenOf path, and a List
// that is empty, names an item twice, or has one that is not one path
// segment.
func checkItems(path string, items Items) error {
	switch {
	case items.list == nil && items.path == "":
		return fmt.Errorf("%w: no items: use List or ChildrenOf", zkrecipes.ErrInvalidArgument)
	case items.path != "":
		if err := framework.ValidatePath(items.path); err != nil {
			return fmt.Errorf("items: %w", err)
		}
	case len(items.list) == 0:
		return fmt.Errorf("%w: an empty list of items", zkrecipes.ErrInvalidArgument)
	default:
		seen := make(map[string]bool, len(items.list))
		for _, it := range items.list {
			if err := checkSegment(path, "item", it); err != nil {
				return err
			}
			if seen[it] {
				return fmt.Errorf("%w: item %q listed twice", zkrecipes.ErrInvalidArgument, it)
			}
			seen[it] = true
		}
	}
	return nil
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
	if p == nil || p.rt == nil {
		return framework.Invalid(recipe, "Partitioner", "New")
	}
	return nil
}

func (p *Partitioner) err(err error) error { return p.rt.Err(err) }

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
// promptly or Close it. It ends after Close, which releases every item
// first (their Released events are the last). A reader that falls more than framework.DefaultBound
// changes behind is told, never skipped silently: the subscription ends,
// its Err wrapping zkrecipes.ErrFellBehind (docs/vocabulary.md).
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
