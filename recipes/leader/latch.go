package leader

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/errs"
	"github.com/zkrecipes/zkrecipes/internal/fwlink"
	ihold "github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
	"github.com/zkrecipes/zkrecipes/internal/option"
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
	meter  *metrics.Recipe

	life   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	term     *hold.Hold
	changed  chan struct{} // closed and replaced on every change
	subs     map[*Subscription]struct{}
	started  bool
	closed   bool
	closeErr error
}

// NewLatch returns a latch on path. WithParticipantID sets the
// participant id (default: mutex.DefaultParticipantID, as Curator). Call
// Start to compete.
func NewLatch(client *framework.Client, path string, opts ...Option) (*Latch, error) {
	if client == nil {
		return nil, fmt.Errorf("leader: %w", ErrNilClient)
	}
	if err := framework.ValidateRecipePath(path); err != nil {
		return nil, fmt.Errorf("leader: %w", err)
	}
	cfg, err := option.Build("leader latch", []option.Name{option.ParticipantID}, opts)
	if err != nil {
		return nil, err
	}
	if err := cfg.CheckQueueID(client, "leader latch", path, latchName); err != nil {
		return nil, err
	}
	life, cancel := context.WithCancel(context.Background())
	return &Latch{client: client, path: path, id: string(cfg.ID), life: life, cancel: cancel,
		meter:   fwlink.Of(client).Metrics().Recipe(metrics.Latch, path),
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
// Its Release steps down; its Err says why it ended.
func (l *Latch) Term() *hold.Hold {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.currentLocked()
}

// currentLocked is the term, unless it has ended: its signal fires at once,
// before run has caught up, and an ended term is never handed out.
func (l *Latch) currentLocked() *hold.Hold {
	if l.term == nil || l.term.Err() != nil {
		return nil
	}
	return l.term
}

// Await blocks until this participant leads, ctx ends or the latch closes,
// and returns the term.
func (l *Latch) Await(ctx context.Context) (*hold.Hold, error) {
	if err := errs.NilContext(ctx, "leader latch "+l.path); err != nil {
		return nil, err
	}
	for {
		l.mu.Lock()
		term, changed, closed := l.currentLocked(), l.changed, l.closed
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

// Close leaves the election: a current term ends (its Err is ErrClosed,
// and subscribers get that change), the node is deleted (the next
// participant leads within a few round trips) and every goroutine ends. It
// is bounded: the delete is only sent (or left to the client's background
// deleter). A second Close returns nil.
func (l *Latch) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
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
		// From here to a term is the latch's acquire, whether it queues
		// anew or its node leads again after a cut.
		start := time.Now()
		var e *contend.Entry
		var err error
		if node != "" {
			e, err = l.recheck(node, owner, czxid)
		}
		if e == nil && err == nil {
			if node != "" {
				// Gone or not ours: only a check of its owner may delete
				// it, never a blind delete that could take a node someone
				// else has made at the path since.
				_ = fwlink.Of(c).DeleteLater(node, owner)
				node = ""
			}
			e, err = contend.Enter(l.life, contend.Request{Client: c, Dir: l.path, Name: latchName, Data: []byte(l.id), Driver: contend.First(1)})
		}
		if err != nil {
			l.meter.Acquire(l.life, start, err)
			if l.life.Err() != nil {
				return
			}
			c.Logger().Warn("leader latch: will try again", "path", l.path, "err", err)
			if !contend.Pause(l.life) {
				return
			}
			continue
		}
		node, owner, czxid = e.Path, e.Session.ID, e.Czxid
		// The term is a hold of the node, as every hold: it follows the
		// session's loss signal and the node itself (deleted by someone
		// else, the term is over at once). Its Release steps down.
		followed := ihold.NewNode(c, e, false, l.meter)
		stepDown, over := make(chan struct{}), make(chan struct{})
		var once sync.Once
		term, err := ihold.NewHold(followed, func(*ihold.Hold) error {
			once.Do(func() { close(stepDown) })
			<-over
			return nil
		})
		l.meter.Acquire(l.life, start, err)
		if err != nil {
			// Lost between the grant and now: never hand it out.
			followed.Forget(followed.Err())
			close(over)
			continue
		}
		l.setTerm(term)
		select {
		case <-followed.Done():
			reason := followed.Err()
			followed.Forget(reason)
			l.endTerm(reason)
		case <-stepDown:
			// Release: leave the lead to the next participant and queue
			// again at the back.
			followed.Forget(ErrReleased)
			l.endTerm(ErrReleased)
			if err := l.deleteNode(node, owner); err != nil {
				c.Logger().Warn("leader latch: stepping down", "path", l.path, "err", err)
			}
			node = ""
		case <-l.life.Done():
			followed.Forget(ErrClosed)
			l.endTerm(ErrClosed)
			close(over)
			return
		}
		close(over)
	}
}

// recheck decides after a loss whether our node still leads: it must exist,
// be first, and belong to a session Trust vouches for. It waits for a
// connection first. Trust comes last, as at every grant, so that a link that
// drops during the look is waited out and the node checked again. A nil
// entry and nil error mean "queue anew".
func (l *Latch) recheck(node string, owner, czxid int64) (*contend.Entry, error) {
	c := l.client
	if _, err := c.WaitConnected(l.life); err != nil {
		return nil, err
	}
	nodes, err := contend.Nodes(l.life, c, l.path, latchName)
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 || nodes[0] != node {
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
	if err := contend.Leave(l.client, node, owner); err != nil {
		return fmt.Errorf("leader latch: leave %s: %w", node, err)
	}
	return nil
}

func (l *Latch) setTerm(t *ihold.Hold) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.term = (*hold.Hold)(t)
	l.meter.Leading(true)
	l.client.Logger().Info("leader latch: leading", "path", l.path, "session", fmt.Sprintf("0x%x", t.SessionID()), "token", t.Token())
	l.broadcastLocked()
	l.publishLocked(Change{Leader: true, Token: t.Token(), Time: time.Now()})
}

// endTerm reports the end of the current term to subscribers.
func (l *Latch) endTerm(reason error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.term
	if t == nil {
		return
	}
	l.term = nil
	l.meter.Leading(false)
	l.client.Logger().Info("leader latch: not leading", "path", l.path, "session", fmt.Sprintf("0x%x", t.SessionID()),
		"token", t.Token(), "reason", ihold.Reason(reason))
	l.broadcastLocked()
	l.publishLocked(Change{Leader: false, Reason: reason, Token: t.Token(), Time: time.Now()})
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
