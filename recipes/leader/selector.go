package leader

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/fwlink"
	ihold "github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
	"github.com/zkrecipes/zkrecipes/internal/option"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// Func is the work a Selector runs while it leads. ctx is cancelled the
// moment leadership is in doubt or the selector closes; returning gives
// leadership up. token is the term's fencing token.
type Func func(ctx context.Context, token int64) error

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
	mutex    *mutex.Mutex
	meter    *metrics.Recipe
	life     context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	requeues chan struct{}

	mu      sync.Mutex
	leading bool
	started bool
	closed  bool
}

// NewSelector returns a selector on path running fn while leading. It
// takes WithParticipantID, WithAutoRequeue and WithErrorHandler. Call Start
// to compete.
func NewSelector(client *framework.Client, path string, fn Func, opts ...Option) (*Selector, error) {
	if client == nil {
		return nil, fmt.Errorf("leader: %w", ErrNilClient)
	}
	if fn == nil {
		return nil, ErrNilFunc
	}
	if err := framework.ValidateRecipePath(path); err != nil {
		return nil, fmt.Errorf("leader: %w", err)
	}
	cfg, err := option.Build("leader selector", []option.Name{option.ParticipantID, option.AutoRequeue, option.ErrorHandler}, opts)
	if err != nil {
		return nil, err
	}
	s := &Selector{client: client, path: path, fn: fn, id: string(cfg.ID), requeue: cfg.AutoRequeue,
		onError: cfg.OnError, requeues: make(chan struct{}, 1)}
	if s.onError == nil {
		s.onError = func(err error) { client.Logger().Error("leader selector", "path", path, "err", err) }
	}
	m, err := mutex.New(client, path, mutex.WithParticipantID(s.id), mutex.Option(option.WithKind(metrics.Selector)))
	if err != nil {
		return nil, err
	}
	s.mutex = m
	s.meter = fwlink.Of(client).Metrics().Recipe(metrics.Selector, path)
	s.life, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// ID returns the participant id.
func (s *Selector) ID() string { return s.id }

// Start begins competing: once, or (WithAutoRequeue) again after each term.
func (s *Selector) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrClosed
	case s.started:
		return ErrStarted
	}
	s.started = true
	s.wg.Add(1)
	go s.run()
	return nil
}

// Requeue competes once more after the current or last term, for a selector
// without auto-requeue.
func (s *Selector) Requeue() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	select {
	case s.requeues <- struct{}{}:
	default:
	}
	return nil
}

// HasLeadership reports whether Func is running as leader now.
func (s *Selector) HasLeadership() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leading
}

// Participants returns the ids of the participants, the leader first.
func (s *Selector) Participants(ctx context.Context) ([]string, error) {
	ids, err := s.mutex.Participants(ctx)
	return ids, contend.Err(err, false)
}

// Close stops competing: a running Func's ctx is cancelled and Close waits
// for it to return, then leadership is released and every goroutine ends.
func (s *Selector) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return s.mutex.Close()
}

func (s *Selector) run() {
	defer s.wg.Done()
	for {
		if err := s.term(); err != nil && s.life.Err() == nil {
			s.onError(err)
		}
		if s.life.Err() != nil {
			return
		}
		if !s.requeue {
			select {
			case <-s.requeues:
			case <-s.life.Done():
				return
			}
		}
	}
}

// term takes the lock, runs fn under the hold's context and releases.
func (s *Selector) term() error {
	h, err := s.mutex.Acquire(s.life)
	if err != nil {
		if s.life.Err() != nil {
			return nil
		}
		// Not leading, nothing held: pause before trying again.
		contend.Pause(s.life)
		return err
	}
	s.setLeading(true)
	log := s.client.Logger()
	log.Info("leader selector: leading", "path", s.path, "session", fmt.Sprintf("0x%x", h.SessionID()), "token", h.Token())
	ctx, cancel := context.WithCancel(h.Context(s.life))
	err = s.call(ctx, h.Token())
	cancel()
	s.setLeading(false)
	reason := "returned"
	if herr := h.Err(); herr != nil {
		reason = ihold.Reason(herr)
	} else if s.life.Err() != nil {
		reason = "recipe_closed"
	}
	log.Info("leader selector: not leading", "path", s.path, "session", fmt.Sprintf("0x%x", h.SessionID()),
		"token", h.Token(), "reason", reason)
	if rerr := s.mutex.Release(); rerr != nil && !errors.Is(rerr, mutex.ErrHoldLost) {
		err = errors.Join(err, rerr)
	}
	return err
}

// call runs fn, turning a panic into an error.
func (s *Selector) call(ctx context.Context, token int64) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrPanic, r)
		}
	}()
	return s.fn(ctx, token)
}

func (s *Selector) setLeading(v bool) {
	s.mu.Lock()
	s.leading = v
	s.mu.Unlock()
	s.meter.Leading(v)
}
