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
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/contend"
)

// ErrPanic wraps a panic of a Selector's Func. A term's Err, and a
// Selector's Func's context's cause, is one of framework.ErrSuspended,
// framework.ErrSessionLost, framework.ErrNodeDeleted (the latch queues
// again), hold.ErrReleased (Release stepped down) or framework.ErrClosed
// (the latch closed).
var ErrPanic = errors.New("leadership function panicked")

// The recipes' names in errors.
const (
	latchRecipe    = "leader latch"
	selectorRecipe = "leader selector"
	observeRecipe  = "leader observer"
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
	if err := contend.CheckCall(client, ctx); err != nil {
		return nil, framework.RecipeErr("leader", path, err)
	}
	ids, err := participants(ctx, client, path, latchName, "lock-")
	return ids, framework.RecipeErr("leader", path, err)
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
