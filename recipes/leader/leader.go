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
//
// Observe follows who leads any latch or selector path, this package's or
// Curator's, for operators and for services that only need to know.
package leader

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/mailbox"
	"github.com/zkrecipes/zkrecipes/internal/option"
)

// The errors of this package: its own, and those every recipe shares
// (package hold documents them) under the same names. A term's Err is one
// of framework.ErrSuspended, framework.ErrSessionLost, framework.ErrNodeDeleted (the latch queues
// again), hold.ErrReleased (Release stepped down) or framework.ErrClosed (the latch
// closed); a Selector's job sees the same as its context's cause.
var (
	// ErrPanic wraps a panic of a leadership function.
	ErrPanic = errors.New("leader: leadership function panicked")
)

// Option configures a Latch or a Selector. Every recipe's Option has this
// shape, and an option of the same name means the same thing in each; one
// given to a recipe it does not apply to is refused (framework.ErrInvalidArgument).
type Option func(*option.Config) error

// WithParticipantID sets the participant id, the data of this process's
// node (default: mutex.DefaultParticipantID, as Curator). It must not be
// empty.
func WithParticipantID(id string) Option { return Option(option.WithParticipantID(id)) }

// WithAutoRequeue makes a Selector compete again each time its Func
// returns, as Curator's autoRequeue.
func WithAutoRequeue() Option { return Option(option.WithAutoRequeue()) }

// WithErrorHandler receives a Selector's Func errors and panics (wrapped in
// ErrPanic). By default they are logged through the client's logger.
func WithErrorHandler(f func(error)) Option { return Option(option.WithErrorHandler(f)) }

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
		return nil, fmt.Errorf("leader: %w", framework.ErrInvalidArgument)
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

// participants lists the ids; a closed client is framework.ErrClosed, as everywhere
// in the package.
func participants(ctx context.Context, client *framework.Client, path string, markers ...string) ([]string, error) {
	ids, err := contend.Participants(ctx, client, path, markers...)
	return ids, contend.Err(err, false)
}

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
