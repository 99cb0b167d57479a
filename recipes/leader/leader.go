// Package leader is leader election over ZooKeeper, wire-compatible with
// Apache Curator: Latch is Curator's LeaderLatch and Selector its
// LeaderSelector. Both are for work that must never run twice at once:
// leadership ends, and the leader is told, before anyone else's can begin.
//
// A leader learns that its leadership is in doubt the moment its session is
// (Suspended under the standard error policy, Lost under the session-only
// one), which is before the server can expire the session and elect
// another. Each term carries a fencing token (the czxid of the leader's
// node): hand it to what the leader writes to, and have that refuse lower
// tokens.
package leader

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/mailbox"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

var (
	// ErrNilClient: a constructor without a client.
	ErrNilClient = errors.New("leader: nil client")
	// ErrNilFunc: NewSelector without a function to run.
	ErrNilFunc = errors.New("leader: nil leadership function")
	// ErrClosed: the latch or selector was closed.
	ErrClosed = errors.New("leader: closed")
	// ErrStarted: Start called twice.
	ErrStarted = errors.New("leader: already started")
	// ErrSuspended: leadership ended because the link to ZooKeeper dropped
	// (standard error policy). The same value as mutex.ErrSuspended, which a
	// Selector's job sees as its context's cause.
	ErrSuspended = mutex.ErrSuspended
	// ErrSessionLost: leadership ended because the session is gone (the
	// same value as mutex.ErrSessionLost).
	ErrSessionLost = mutex.ErrSessionLost
	// ErrNodeDeleted: leadership ended because the leader's node was
	// deleted, or re-created under another session, by someone else (the
	// same value as mutex.ErrNodeDeleted). The latch queues again.
	ErrNodeDeleted = mutex.ErrNodeDeleted
	// ErrReleased: the term was given up with Term.Release (also what a
	// second Release returns; the same value as mutex.ErrReleased).
	ErrReleased = mutex.ErrReleased
	// ErrPanic wraps a panic of a leadership function.
	ErrPanic = errors.New("leader: leadership function panicked")
)

// Change is one change of leadership of a participant.
type Change struct {
	// Leader: this participant now leads; false: it stopped.
	Leader bool
	// Reason why leadership ended (nil when it began).
	Reason error
	// Token of the term that began or ended.
	Token int64
	Time  time.Time
}

// Participants returns the participant ids queued on a latch or selector
// path (or any Curator lock path), in queue order: the leader first.
func Participants(ctx context.Context, client *framework.Client, path string) ([]string, error) {
	if client == nil {
		return nil, ErrNilClient
	}
	return participants(ctx, client, path, latchName, "lock-")
}

// Leader returns the id of the current leader of a latch or selector path,
// or "" when nobody leads.
func Leader(ctx context.Context, client *framework.Client, path string) (string, error) {
	ids, err := Participants(ctx, client, path)
	if err != nil || len(ids) == 0 {
		return "", err
	}
	return ids[0], nil
}

func participants(ctx context.Context, client *framework.Client, path string, markers ...string) ([]string, error) {
	kids, _, err := client.Children(ctx, path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, k := range contend.Sort(kids, markers...) {
		data, _, err := client.Get(ctx, framework.Join(path, k))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		ids = append(ids, string(data))
	}
	return slices.Clip(ids), nil
}

func defaultID() string { return mutex.DefaultParticipantID() }

// Subscription delivers leadership changes in order through an unbounded
// queue: a slow reader never blocks the election or misses a change.
//
// When the latch closes, the channel delivers what is still queued, then
// closes; a subscriber that stops reading before that must Close the
// subscription, which ends its goroutine at once.
type Subscription struct {
	mb     *mailbox.Mailbox[Change]
	remove func(*Subscription)
}

func newSubscription(remove func(*Subscription)) *Subscription {
	return &Subscription{mb: mailbox.New[Change](), remove: remove}
}

// Changes returns the channel of changes.
func (s *Subscription) Changes() <-chan Change { return s.mb.Out() }

// Close ends the subscription and waits for its goroutine.
func (s *Subscription) Close() {
	s.remove(s)
	s.mb.Stop()
}

func (s *Subscription) stop()         { s.mb.Stop() }
func (s *Subscription) finish()       { s.mb.Finish() }
func (s *Subscription) push(c Change) { s.mb.Push(c) }
