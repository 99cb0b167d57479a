package hold

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/errs"
	"github.com/zkrecipes/zkrecipes/internal/fwlink"
)

// ErrOutcomeUnknown: a fenced write's reply was lost (see Fenced).
var ErrOutcomeUnknown = framework.ErrOutcomeUnknown

// ErrFenceCheckFailed: the server refused a fenced write's check of the
// hold's own node for a reason other than its absence (no READ permission
// on it, say): nothing was applied, and the hold stands.
var ErrFenceCheckFailed = errors.New("fenced write: the check of the hold's node failed")

// Fenced runs ops, ZooKeeper writes (*zk.CreateRequest,
// *zk.SetDataRequest, *zk.DeleteRequest, *zk.CheckVersionRequest, as
// framework.Client.Multi takes them), as one multi, sent at most once, that
// also checks that the hold's node exists: the server applies all of them
// only if the node is still there, in its own order of writes, and none
// otherwise. It returns the ops' results (the check's left out). The
// public hold.Hold.Fenced documents the guarantees and the errors.
func (h *Hold) Fenced(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	n := h.node
	fail := func(err error) error { return fmt.Errorf("fenced write under %s: %w", n.path, err) }
	if ctx == nil {
		return nil, fail(errs.ErrNilContext)
	}
	if h.released.Load() {
		if h.byClose.Load() {
			return nil, fail(ErrReleasedByClose)
		}
		return nil, fail(ErrReleased)
	}
	if err := h.Err(); err != nil {
		if errors.Is(err, ErrReleased) {
			return nil, fail(err)
		}
		return nil, fail(fmt.Errorf("%w: %w", ErrHoldLost, err))
	}
	if len(ops) == 0 {
		return nil, fail(fmt.Errorf("%w: no ops", framework.ErrInvalidArgument))
	}
	all := make([]any, 0, len(ops)+1)
	// Version -1 checks existence only: a revocation request (Curator's
	// __REVOKE__) changes the node's data version, not its ownership.
	all = append(all, &zk.CheckVersionRequest{Path: n.path, Version: -1})
	all = append(all, ops...)
	res, err := fwlink.Of(n.client).MultiOnce(ctx, all...)
	if len(res) > 0 {
		res = res[1:]
	}
	if err == nil {
		return res, nil
	}
	var me *framework.MultiOpError
	switch {
	case errors.As(err, &me) && me.Index == 0 && errors.Is(me.Err, zk.ErrNoNode):
		// The node is gone: the hold is, whether or not it knows yet.
		cause := ErrNodeDeleted
		if isClosed(n.session.Lost) || n.client.Session().ID != n.session.ID {
			cause = ErrSessionLost
		}
		n.finish(cause)
		return res, fail(fmt.Errorf("%w: %w", ErrHoldLost, cause))
	case me != nil && me.Index == 0:
		// The check itself failed otherwise (no READ on our own node, say):
		// nothing was applied and the hold stands, but no caller's op is
		// to blame.
		return res, fail(fmt.Errorf("%w: the check of the hold's node %s failed: %w", ErrFenceCheckFailed, n.path, me.Err))
	case me != nil && me.Index > 0:
		// One of the caller's ops: name it by the caller's index.
		return res, fail(&framework.MultiOpError{Index: me.Index - 1, Path: me.Path, Err: me.Err})
	case errors.Is(err, zk.ErrSessionExpired):
		n.finish(ErrSessionLost)
		return nil, fail(fmt.Errorf("%w: %w: %w", ErrHoldLost, ErrSessionLost, err))
	}
	return res, fail(err)
}
