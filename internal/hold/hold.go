// Package hold is one granted hold of a lock-like recipe (a mutex, a read or
// write lock, a semaphore lease): its node, fencing token and the signal
// that it can no longer be trusted. The recipes hand it out as their own
// Hold type.
package hold

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/contend"
)

var (
	// ErrSuspended: the link to ZooKeeper dropped while held (standard error
	// policy). The session may still be alive, but nothing proves the hold
	// any more.
	ErrSuspended = errors.New("connection suspended while held")
	// ErrSessionLost: the session that held the lock is gone; so is the lock.
	ErrSessionLost = errors.New("session lost while held")
	// ErrReleased: the hold was released.
	ErrReleased = errors.New("released")
	// ErrHoldLost: the hold stopped being trusted before Release; see
	// Hold.Err for why. Anything done after that moment was unprotected.
	ErrHoldLost = errors.New("hold was lost before release")
)

// RevokeMessage is Curator's RevocationSpec.REVOKE_MESSAGE: the data another
// process writes to a holder's node to ask it to release.
const RevokeMessage = "__REVOKE__"

// releaseTimeout bounds how long Release waits for the delete to be sent
// before leaving it to the background.
const releaseTimeout = 5 * time.Second

// Hold is one holding of a lock: its fencing token and the signal that it
// can no longer be trusted.
type Hold struct {
	client    *framework.Client
	revocable bool
	path      string
	token     int64
	session   conn.Session

	done    chan struct{}
	revoked chan struct{}
	stop    chan struct{}
	wg      sync.WaitGroup

	mu  sync.Mutex
	err error
}

// New starts a hold for a granted entry. With revocable, it follows the node
// for Curator's revocation requests.
func New(client *framework.Client, e *contend.Entry, revocable bool) *Hold {
	h := &Hold{
		client:    client,
		revocable: revocable,
		path:      e.Path,
		token:     e.Czxid,
		session:   e.Session,
		done:      make(chan struct{}),
		revoked:   make(chan struct{}),
		stop:      make(chan struct{}),
	}
	h.wg.Add(1)
	go h.watch(client.LossSignal(e.Session))
	return h
}

// Token is the fencing token: the czxid of the hold's lock node. It grows
// strictly from each holder to the next, even if the lock directory is
// deleted and made again. Hand it to every resource the lock protects and
// have them refuse tokens lower than the highest seen.
func (h *Hold) Token() int64 { return h.token }

// Path is the hold's lock node.
func (h *Hold) Path() string { return h.path }

// SessionID is the session that owns the lock node.
func (h *Hold) SessionID() int64 { return h.session.ID }

// Done is closed when the hold can no longer be trusted: on Suspended under
// the client's standard error policy, on Lost under the session-only policy,
// and on Release. Under the standard policy it closes before the server can
// expire the session, and so before anyone else can be granted the lock.
func (h *Hold) Done() <-chan struct{} { return h.done }

// Err is nil while the hold is trusted, then says why it is not:
// ErrSuspended, ErrSessionLost or ErrReleased.
func (h *Hold) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// Context returns a context, derived from parent, that is cancelled when the
// hold ends, with Err as its cause: run the protected work under it. Cancel
// parent to free the context's goroutine early.
func (h *Hold) Context(parent context.Context) context.Context {
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		select {
		case <-h.done:
			cancel(h.Err())
		case <-ctx.Done():
		}
	}()
	return ctx
}

// Revoked is closed when another process asks the holder to release, with
// Curator's revocation protocol (the node's data becomes "__REVOKE__"). It is
// only ever closed for a revocable lock; what to do is the holder's choice.
func (h *Hold) Revoked() <-chan struct{} { return h.revoked }

// watch turns the session's loss signal into the hold's own. It never does
// network calls itself, so nothing can delay the signal. It ends at release
// or loss, and stops the revocation watcher with it.
func (h *Hold) watch(signal <-chan struct{}) {
	defer h.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if h.revocable {
		h.wg.Add(1)
		go h.watchRevocation(ctx)
	}
	select {
	case <-signal:
		err := ErrSuspended
		if isClosed(h.session.Lost) {
			err = ErrSessionLost
		}
		h.finish(err)
	case <-h.stop:
		h.finish(ErrReleased)
	}
}

// watchRevocation follows the node's data until it says __REVOKE__ (Curator's
// protocol), then closes Revoked.
func (h *Hold) watchRevocation(ctx context.Context) {
	defer h.wg.Done()
	for {
		data, _, ch, err := h.client.GetW(ctx, h.path)
		if err != nil {
			return // gone, closing or released: the loss signal covers it
		}
		if string(data) == RevokeMessage {
			close(h.revoked)
			return
		}
		select {
		case ev := <-ch:
			if ev.Type == zk.EventNodeDeleted || ev.Type == zk.EventNotWatching {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

func (h *Hold) finish(err error) {
	h.mu.Lock()
	if h.err == nil {
		h.err = err
	}
	h.mu.Unlock()
	close(h.done)
}

// Release stops the hold's goroutines and deletes its node: at once (sent,
// not answered) when the hold is still trusted, else in the background (the
// node may belong to a session being replaced), returning ErrHoldLost. It is
// for the recipe, which makes sure it is called once.
func (h *Hold) Release() error {
	close(h.stop)
	h.wg.Wait()
	c := h.client
	if lost := h.Err(); lost != ErrReleased {
		if err := c.DeleteLater(h.path, h.session.ID); err != nil && !errors.Is(err, framework.ErrClosed) {
			return errors.Join(fmt.Errorf("%w: %w", ErrHoldLost, lost), err)
		}
		return fmt.Errorf("%w: %w", ErrHoldLost, lost)
	}
	// The delete only has to be on its way: ZooKeeper applies it before
	// anything this client sends next (a new acquire queues behind it), and
	// the next contender is woken by the delete itself, not by our waiting.
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	err := c.DeleteOwn(ctx, h.path, h.session.ID)
	if err == nil || errors.Is(err, framework.ErrClosed) {
		return nil // a closed client's session takes its ephemeral node with it
	}
	return fmt.Errorf("release %s: %w", h.path, err)
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
