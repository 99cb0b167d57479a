package cache

import (
	"sync"

	"github.com/zkrecipes/zkrecipes/framework"
)

// kind is what of a node a read or a watch is about.
type kind int

const (
	kindData   kind = iota // its data and Stat (a data watch; for a missing root, an exists watch)
	kindKids               // its children (a child watch)
	kindExists             // only for the root while it is missing
)

// inbox is how the watches' goroutines and the session's follower tell the
// engine what to read: they never wait for it.
type inbox struct {
	mu     sync.Mutex
	dirty  [2]map[string]struct{} // by kindData, kindKids
	resync bool                   // read everything again (a gap)
	// synced is the session the last resync's Sync was made on: only a
	// read on it knows the server caught up with what the view holds.
	synced int64
	epoch  int // watches of older epochs (sessions) are forgotten
	// watches is the current epoch's queue of watch events; an older
	// epoch's is dropped unread.
	watches *framework.Watches
	wake    chan struct{} // capacity 1
	// refused is closed when the first load fails for good (zk.ErrNoAuth).
	refused     chan struct{}
	refusedOnce *sync.Once
}

func (in *inbox) init() {
	in.wake = make(chan struct{}, 1)
	in.reset()
}

// reset forgets everything, for a new Start.
func (in *inbox) reset() {
	in.mu.Lock()
	defer in.mu.Unlock()
	for i := range in.dirty {
		in.dirty[i] = map[string]struct{}{}
	}
	in.resync = false
	in.synced = 0
	in.epoch++
	in.refused = make(chan struct{})
	in.refusedOnce = new(sync.Once)
}

func (in *inbox) signal() {
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

func (in *inbox) markResync() {
	in.mu.Lock()
	in.resync = true
	in.mu.Unlock()
	in.signal()
}

func (in *inbox) mark(k kind, path string) {
	in.mu.Lock()
	in.dirty[k][path] = struct{}{}
	in.mu.Unlock()
	in.signal()
}

// newEpoch forgets every watch set so far (the session that held them is
// gone: the router forgets them too, told by their EventNotWatching) and
// returns the queue of the next epoch's watches.
func (in *inbox) newEpoch() (*framework.Watches, int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.epoch++
	in.watches = framework.NewWatches()
	return in.watches, in.epoch
}
