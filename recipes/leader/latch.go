package leader

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// latchName is Curator's LeaderLatch node name.
const latchName = "latch-"

// Latch is Curator's LeaderLatch: participants queue as
// path/_c_<uuid>-latch-<seq> (data: the participant id) and the first one
// leads. It leads only while its node is first AND owned by its current
// session (CURATOR-696), and gives leadership up the moment the session is in
// doubt: on Suspended under the standard error policy (it is re-checked on
// Reconnected), on Lost under either.
type Latch struct {
	client *framework.Client
	path   string
	id     string

	life   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	term     *Term
	changed  chan struct{} // closed and replaced on every change
	subs     map[*Subscription]struct{}
	started  bool
	closed   bool
	notify   bool // on Close, tell subscribers leadership ended
	closeErr error
}

// NewLatch returns a latch on path for participant id (empty: the mutex
// package's DefaultParticipantID, as Curator). Call Start to compete.
func NewLatch(client *framework.Client, path, id string) (*Latch, error) {
	if client == nil {
		return nil, ErrNilClient
	}
	if err := framework.ValidatePath(path, false); err != nil {
		return nil, err
	}
	if id == "" {
		id = defaultID()
	}
	life, cancel := context.WithCancel(context.Background())
	return &Latch{client: client, path: path, id: id, life: life, cancel: cancel,
		changed: make(chan struct{}), subs: map[*Subscription]struct{}{}}, nil
}

// ID returns the participant id.
func (l *Latch) ID() string { return l.id }

// Start joins the election. It returns at once; leadership is reported on
// Subscribe's channel and by HasLeadership, Await and Term.
func (l *Latch) Start() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return ErrClosed
	case l.started:
		return ErrStarted
	}
	l.started = true
	l.wg.Add(1)
	go l.run()
	return nil
}

// HasLeadership reports whether this participant leads now.
func (l *Latch) HasLeadership() bool { return l.Term() != nil }

// Term returns the current term of leadership, or nil when not leading.
func (l *Latch) Term() *Term {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.term
}

// Await blocks until this participant leads, ctx ends or the latch closes,
// and returns the term.
func (l *Latch) Await(ctx context.Context) (*Term, error) {
	for {
		l.mu.Lock()
		term, changed, closed := l.term, l.changed, l.closed
		l.mu.Unlock()
		switch {
		case term != nil:
			return term, nil
		case closed:
			return nil, ErrClosed
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Subscribe returns a subscription to leadership changes from now on.
func (l *Latch) Subscribe() *Subscription {
	s := newSubscription(func(s *Subscription) {
		l.mu.Lock()
		delete(l.subs, s)
		l.mu.Unlock()
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		s.stop()
		return s
	}
	l.subs[s] = struct{}{}
	return s
}

// Participants returns the ids of the participants in queue order, the
// leader first.
func (l *Latch) Participants(ctx context.Context) ([]string, error) {
	return participants(ctx, l.client, l.path, latchName)
}

// Close leaves the election: the node is deleted (the next participant leads
// within a few round trips) and every goroutine ends. With notify, the end
// of a current term is reported to subscribers (ErrClosed); without, they
// just see their channel close, as Curator's CloseMode.SILENT.
func (l *Latch) Close(notify bool) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.notify = notify
	l.mu.Unlock()
	l.cancel()
	l.wg.Wait()
	l.mu.Lock()
	subs := l.subs
	l.subs = map[*Subscription]struct{}{}
	l.broadcastLocked()
	l.mu.Unlock()
	for s := range subs {
		s.finish()
	}
	return l.closeErr
}

// run competes until Close: queue, lead while trusted, and after a loss
// either lead again (same node, still first, same session) or queue anew.
func (l *Latch) run() {
	defer l.wg.Done()
	c := l.client
	var node string
	var owner, czxid int64
	defer func() {
		if node != "" {
			l.closeErr = l.deleteNode(node, owner)
		}
	}()
	for l.life.Err() == nil {
		var e *contend.Entry
		var err error
		if node != "" {
			e, err = l.recheck(node, owner, czxid)
		}
		if e == nil && err == nil {
			if node != "" {
				_ = c.DeleteLater(node, owner)
				node = ""
			}
			e, err = contend.Enter(l.life, contend.Request{Client: c, Dir: l.path, Name: latchName, Data: []byte(l.id), Driver: contend.First(1)})
		}
		if err != nil {
			if l.life.Err() != nil {
				return
			}
			c.Logger().Warn("leader latch: will try again", "path", l.path, "err", err)
			select {
			case <-time.After(time.Second):
			case <-l.life.Done():
				return
			}
			continue
		}
		node, owner, czxid = e.Path, e.Session.ID, e.Czxid
		// The term follows the node as every hold does: the session's loss
		// signal, and the node itself (deleted by someone else, the term
		// is over at once).
		followed := hold.NewNode(c, e, false)
		term := newTerm(e)
		l.setTerm(term)
		select {
		case <-followed.Done():
			reason := followed.Err()
			followed.Forget()
			l.endTerm(reason)
		case <-term.stepDown:
			// Term.Release: leave the lead to the next participant and
			// queue again at the back.
			followed.Forget()
			l.endTerm(ErrReleased)
			if err := l.deleteNode(node, owner); err != nil {
				c.Logger().Warn("leader latch: stepping down", "path", l.path, "err", err)
			}
			node = ""
		case <-l.life.Done():
			followed.Forget()
			l.mu.Lock()
			notify := l.notify
			l.mu.Unlock()
			l.endTermMaybeSilently(ErrClosed, notify)
			return
		}
	}
}

// recheck decides after a loss whether our node still leads: it must exist,
// be first, and belong to a session Trust vouches for. It waits for a
// connection first. Trust comes last, as at every grant, so that a link that
// drops during the look is waited out and the node checked again. A nil
// entry and nil error mean "queue anew".
func (l *Latch) recheck(node string, owner, czxid int64) (*contend.Entry, error) {
	c := l.client
	if _, err := c.Conn().WaitConnected(l.life); err != nil {
		return nil, err
	}
	kids, _, err := c.Children(l.life, l.path)
	if err != nil {
		return nil, err
	}
	ahead, ok := contend.Ahead(kids, framework.Base(node), latchName)
	if !ok || len(ahead) != 1 {
		return nil, nil
	}
	s, err := contend.Trust(l.life, c, owner, node)
	if errors.Is(err, contend.ErrSessionLost) {
		return nil, nil // the node is gone or not ours: queue anew
	}
	if err != nil {
		return nil, err
	}
	return &contend.Entry{Path: node, Czxid: czxid, Session: s}, nil
}

func (l *Latch) deleteNode(node string, owner int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Not sent in time (ErrDeferred), it goes on in the background.
	err := l.client.DeleteOwn(ctx, node, owner)
	if err == nil || errors.Is(err, framework.ErrClosed) {
		return nil
	}
	return fmt.Errorf("leader latch: leave %s: %w", node, err)
}

func (l *Latch) setTerm(t *Term) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.term = t
	l.broadcastLocked()
	l.publishLocked(Change{Leader: true, Token: t.token, Time: time.Now()})
}

func (l *Latch) endTerm(reason error) { l.endTermMaybeSilently(reason, true) }

func (l *Latch) endTermMaybeSilently(reason error, notify bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.term
	if t == nil {
		return
	}
	l.term = nil
	t.end(reason)
	l.broadcastLocked()
	if notify {
		l.publishLocked(Change{Leader: false, Reason: reason, Token: t.token, Time: time.Now()})
	}
}

func (l *Latch) broadcastLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *Latch) publishLocked(ch Change) {
	for s := range l.subs {
		s.push(ch)
	}
}

// Term is one stretch of leadership.
type Term struct {
	token    int64
	node     string
	sess     conn.Session
	done     chan struct{}
	stepDown chan struct{} // closed by Release
	released atomic.Bool
	once     sync.Once
	mu       sync.Mutex
	err      error
}

func newTerm(e *contend.Entry) *Term {
	return &Term{token: e.Czxid, node: e.Path, sess: e.Session, done: make(chan struct{}), stepDown: make(chan struct{})}
}

// Token is the term's fencing token: the czxid of the leader's node. A later
// leader's token is always higher.
func (t *Term) Token() int64 { return t.token }

// Path is the leader's latch node, as Path of every hold of this module.
func (t *Term) Path() string { return t.node }

// Node is Path.
//
// Deprecated: use Path, the name every hold of this module uses.
func (t *Term) Node() string { return t.node }

// Release steps down: the term ends (ErrReleased) and the latch's node is
// deleted, so the next participant leads, and the latch queues again at the
// back. It returns once the term has ended. A second Release, or one after
// the term ended otherwise, returns ErrReleased and does nothing.
func (t *Term) Release() error {
	if t.released.Swap(true) {
		return ErrReleased
	}
	select {
	case <-t.done:
		return ErrReleased // ended already: nothing to give back
	default:
	}
	close(t.stepDown)
	<-t.done
	if err := t.Err(); !errors.Is(err, ErrReleased) {
		return fmt.Errorf("%w: %w", mutex.ErrHoldLost, err) // ended otherwise meanwhile
	}
	return nil
}

// Context returns a context, derived from parent, that is cancelled when
// the term ends, with Err as its cause: run the leader's work under it.
// Cancel parent to free the context's goroutine early.
func (t *Term) Context(parent context.Context) context.Context {
	return hold.UntilDone(parent, t.done, t.Err)
}

// Done is closed when the term ends (see Err).
func (t *Term) Done() <-chan struct{} { return t.done }

// Err is nil while the term lasts, then ErrSuspended, ErrSessionLost,
// ErrNodeDeleted, ErrReleased (Release) or ErrClosed.
func (t *Term) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

func (t *Term) end(reason error) {
	t.once.Do(func() {
		t.mu.Lock()
		t.err = reason
		t.mu.Unlock()
		close(t.done)
	})
}
