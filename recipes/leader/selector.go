package leader

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/engine/reentrant"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
)

// Func is the work a Selector runs while it leads. term is the term of
// leadership, a hold as every recipe hands out: its fencing token (Token),
// its loss signal (Done, Err), Fenced writes that commit only while it
// lasts. ctx is cancelled the moment the term is in doubt or the selector
// closes, with the reason as its cause; returning gives leadership up.
type Func func(ctx context.Context, term *hold.Hold) error

// Selector is Curator's LeaderSelector: participants contend for a mutex
// (Curator's lock- nodes, data: the participant id) and the holder runs Func
// while it holds. A panic or error in Func releases leadership and is
// reported, never leaves the lock held.
type Selector struct {
	client   *framework.Client
	path     string
	id       string
	fn       Func
	requeue  bool
	onError  func(error)
	lock     *reentrant.Lock
	meter    *framework.RecipeMeter
	rt       *framework.Runtime
	requeues chan *joining // a Requeue's

	mu   sync.Mutex
	term *hold.Hold // while Func runs
}

// NewSelector returns a selector on path running fn while leading. It
// sends nothing: Start competes.
func NewSelector(client *framework.Client, path string, fn Func, opts ...SelectorOption) (*Selector, error) {
	if client == nil {
		return nil, framework.RecipeErr(selectorRecipe, path, fmt.Errorf("%w: nil client", zkrecipes.ErrInvalidArgument))
	}
	if fn == nil {
		return nil, framework.RecipeErr(selectorRecipe, path, fmt.Errorf("%w: nil leadership function", zkrecipes.ErrInvalidArgument))
	}
	if err := framework.ValidateRecipePath(path); err != nil {
		return nil, framework.RecipeErr(selectorRecipe, path, err)
	}
	cfg, err := framework.Configure(selectorRecipe, path, config{}, opts, SelectorOption.applySelector)
	if err != nil {
		return nil, err
	}
	id := cfg.ParticipantID()
	if err := engine.CheckData(client, path, []byte(id), "lock-"); err != nil {
		return nil, framework.RecipeErr(selectorRecipe, path, err)
	}
	s := &Selector{client: client, path: path, fn: fn, id: id, requeue: cfg.autoRequeue,
		onError: cfg.onError, requeues: make(chan *joining, 1)}
	if s.onError == nil {
		s.onError = func(err error) { client.Logger().Error("leader selector", "path", path, "err", err) }
	}
	// Curator's LeaderSelector is an InterProcessMutex on path: the same
	// queue, counted in the metrics as a selector.
	s.lock = reentrant.New(client, reentrant.Config{Recipe: selectorRecipe, Kind: selectorKind,
		Request: engine.Request{Dir: path, Name: "lock-", Data: []byte(s.id), Driver: engine.First(1)}})
	s.meter = client.RecipeMeter(selectorKind, path)
	s.rt = framework.NewRuntime(client, selectorRecipe, path)
	return s, nil
}

// Path returns the selector's path.
func (s *Selector) Path() string {
	if s == nil {
		return ""
	}
	return s.path
}

// ID returns the participant id.
func (s *Selector) ID() string {
	if s == nil {
		return ""
	}
	return s.id
}

// Start begins competing, once or (WithAutoRequeue) again after each term:
// it returns once this participant's node is in the queue, and the
// selector then competes in the background until Close. If the node cannot
// be queued (the server refuses it: no permission, say), Start returns
// why; if ctx ends first, its error. Either way it leaves nothing behind
// and may be called again. A second Start after one that succeeded
// returns zkrecipes.ErrStarted.
func (s *Selector) Start(ctx context.Context) error {
	if err := s.usable(); err != nil {
		return err
	}
	return s.rt.Start(ctx, func(ctx context.Context) error {
		return join(ctx, s.rt, s.run)
	})
}

// Requeue competes once more after the current or last term, for a
// selector without auto-requeue: it returns once this participant is in
// the queue again, or with ctx's error (the request stands: the selector
// queues when the current term ends). It needs Start first.
func (s *Selector) Requeue(ctx context.Context) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := s.rt.Ready(ctx); err != nil {
		return err
	}
	if s.requeue {
		return nil // it competes again by itself
	}
	// The wait ends with ctx, or at Close of the selector or its client.
	wctx, cancel, err := s.rt.Within(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	j := newJoining()
	select {
	case s.requeues <- j:
	default:
		j.queue("") // one is pending already: it will queue
	}
	select {
	case <-j.queued:
		return nil
	case err := <-j.failed:
		return s.err(err)
	case <-wctx.Done():
		if ctx.Err() != nil {
			return s.err(ctx.Err())
		}
		return s.err(zkrecipes.ErrClosed)
	}
}

// Held returns the current term, while Func runs as leader and the term is
// still trusted (an ended term's Func is being told by its context).
func (s *Selector) Held() (*hold.Hold, bool) {
	if s.usable() != nil {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.term == nil || s.term.Err() != nil {
		return nil, false // an ended term is never handed out
	}
	return s.term, true
}

// Participants returns the ids of the participants, the leader first.
func (s *Selector) Participants(ctx context.Context) ([]string, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, s.err(zkrecipes.ErrNilContext)
	}
	ids, err := participants(ctx, s.client, s.path, "lock-")
	return ids, s.err(err)
}

// Close stops competing: a running Func's ctx is cancelled and Close waits
// for it to return, then leadership is released (its node deleted) and
// every goroutine ends. It is idempotent, waits for the delete to be sent
// at most framework.WithReleaseTimeout, and does not close the client.
// Called from the Func itself (a leader giving up for good), it cannot
// wait for its caller: it returns at once, the Func's ctx is cancelled, and
// leadership is released once the Func returns.
func (s *Selector) Close() error {
	if err := s.usable(); err != nil {
		return err
	}
	return s.rt.Close(func(context.Context) error {
		return s.lock.Close()
	})
}

// usable says why s cannot be used: it is nil or a zero Selector.
func (s *Selector) usable() error {
	if s == nil || s.rt == nil {
		return framework.Invalid(selectorRecipe, "Selector", "NewSelector")
	}
	return nil
}

// err names the selector and its path in err.
func (s *Selector) err(err error) error { return s.rt.Err(err) }

func (s *Selector) run(life context.Context, j *joining) {
	pacer := s.rt.Pacer()
	for {
		led, err := s.lead(life, j.queue)
		if err != nil && life.Err() == nil {
			if j.fail(err) {
				return // Start returns it
			}
			s.onError(s.err(err))
		}
		if life.Err() != nil {
			return
		}
		if led {
			pacer.Reset()
		} else if !pacer.Wait(life) {
			// Not leading, nothing held: it paused before trying again.
			return
		}
		if !s.requeue {
			select {
			case j = <-s.requeues:
			case <-life.Done():
				return
			}
		}
	}
}

// lead takes the lock, runs fn under the hold's context and releases; led
// says whether it got as far as leading.
func (s *Selector) lead(life context.Context, queued func(string)) (led bool, err error) {
	h, err := s.lock.AcquireQueued(life, false, queued)
	if err != nil {
		if life.Err() != nil {
			return false, nil
		}
		return false, err
	}
	s.setTerm(h)
	log := s.client.Logger()
	log.Info("leader selector: leading", "path", s.path, "session", fmt.Sprintf("0x%x", h.SessionID()), "token", h.Token())
	ctx, cancel := context.WithCancel(h.Context(life))
	err = s.call(ctx, h)
	cancel()
	s.setTerm(nil)
	reason := "returned"
	if herr := h.Err(); herr != nil {
		reason = engine.Reason(herr)
	} else if life.Err() != nil {
		reason = "recipe_closed"
	}
	log.Info("leader selector: not leading", "path", s.path, "session", fmt.Sprintf("0x%x", h.SessionID()),
		"token", h.Token(), "reason", reason)
	if rerr := h.Release(); rerr != nil && !errors.Is(rerr, zkrecipes.ErrHoldLost) && !errors.Is(rerr, zkrecipes.ErrReleased) {
		err = errors.Join(err, rerr)
	}
	return true, err
}

// call runs fn, turning a panic into an error.
func (s *Selector) call(ctx context.Context, term *hold.Hold) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrPanic, r)
		}
	}()
	return s.fn(ctx, term)
}

// setTerm records the term Func runs under (nil: none now).
func (s *Selector) setTerm(h *hold.Hold) {
	s.mu.Lock()
	s.term = h
	s.mu.Unlock()
	s.meter.Leading(h != nil)
}
