package leader

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
)

// ErrPanic wraps a panic of a Selector's Func. A term's Err, and a
// Selector's Func's context's cause, is one of zkrecipes.ErrSuspended,
// zkrecipes.ErrSessionLost, zkrecipes.ErrNodeDeleted (the latch queues
// again), zkrecipes.ErrReleased (Release stepped down) or zkrecipes.ErrClosed
// (the latch closed).
var ErrPanic = errors.New("leadership function panicked")

// The recipes' names in errors.
const (
	latchRecipe    = "leader latch"
	selectorRecipe = "leader selector"
	observeRecipe  = "leader observer"
)

// The recipes' kinds in the metrics (the kind attribute).
const (
	latchKind    = "latch"
	selectorKind = "selector"
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
	if err := engine.CheckCall(client, ctx); err != nil {
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

// participants lists the ids; a closed client is zkrecipes.ErrClosed, as everywhere
// in the package.
func participants(ctx context.Context, client *framework.Client, path string, markers ...string) ([]string, error) {
	ids, err := engine.Participants(ctx, client, path, markers...)
	return ids, engine.Err(err, false)
}

// joining is what a Start (or a Requeue) waits for from the participant's
// run: its node in the queue, or the failure of its first attempt (the
// server refused the node: no permission, a parent that cannot have
// children), which Start returns instead of leaving the run to retry in
// the background for ever.
type joining struct {
	once   sync.Once
	queued chan struct{}
	failed chan error // taken by Start, at most one
	done   atomic.Bool
}

func newJoining() *joining {
	return &joining{queued: make(chan struct{}), failed: make(chan error, 1)}
}

// queue says the node is in the queue.
func (j *joining) queue(string) {
	j.once.Do(func() {
		j.done.Store(true)
		close(j.queued)
	})
}

// fail hands err to the Start waiting for the first attempt, and reports
// whether it took it: the run then ends. After the node was queued once,
// a failure is the run's own to report.
func (j *joining) fail(err error) bool {
	if j.done.Load() {
		return false
	}
	select {
	case j.failed <- err:
		return true
	default:
		return false
	}
}

// join starts a participant's run as rt's background work and waits for
// its node to be in the queue (nil), for the failure of its first attempt,
// or for ctx to end: the begin of a latch's or a selector's Start.
func join(ctx context.Context, rt *framework.Runtime, run func(life context.Context, j *joining)) error {
	j := newJoining()
	if !rt.Go(func(life context.Context) { run(life, j) }) {
		return zkrecipes.ErrClosed
	}
	select {
	case <-j.queued:
		return nil
	case err := <-j.failed:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
