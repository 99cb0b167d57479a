package hold

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
)

// Fenced runs ZooKeeper writes that commit only while the hold is held:
// ops (*zk.CreateRequest, *zk.SetDataRequest, *zk.DeleteRequest and
// *zk.CheckVersionRequest, with paths as framework.Client.Multi takes them)
// go to the server as one multi together with a check that the hold's node
// exists. The server applies all of them, atomically, only if the node is
// there at that point of its order of writes, and none of them otherwise.
// A holder that has lost its hold (its session expired, its node deleted)
// can never commit, however late its write arrives: a pause between a
// check of Err and the write, a request queued while the link was down and
// sent on a new session, cannot make it through. It returns the ops'
// results, in order.
//
// What it guarantees: a write that commits committed while the hold's node
// existed, and so, the node being ephemeral and named with a random
// protected prefix, while this hold's session owned it; no other hold of
// an exclusive lock on the same path was granted at that point. What it
// does not: the check is of existence, not of the node's version or owner
// (a revocation request changes the version; a node deleted and re-created
// at the same path by another session would pass, which needs the hold's
// random name; the hold itself ends on that, see Done). It protects state
// in ZooKeeper only; other resources still need Token. With shared holds
// (read holds, semaphore leases) it proves this hold, not exclusivity.
//
// Errors, each wrapped with the hold's path:
//   - before anything is sent: zkrecipes.ErrReleased for a released hold; zkrecipes.ErrHoldLost
//     and Err's reason for a hold already known lost; an error matching
//     zkrecipes.ErrInvalidArgument (a nil context, no ops, a nil op, an op
//     of another type, a container or TTL create:
//     zkrecipes.ErrUnsupportedInMulti; a multi over the client's size
//     limit, the check included: zkrecipes.ErrTooLarge) or
//     zkrecipes.ErrInvalidPath for bad input; the context's error;
//   - the node was gone when the multi reached the server: zkrecipes.ErrHoldLost
//     with zkrecipes.ErrNodeDeleted, or zkrecipes.ErrSessionLost if the hold's session is
//     gone. Nothing was applied, and the hold ends (Done closes);
//   - one of ops failed (a version conflict, a node that exists):
//     a *framework.MultiOpError with that op's index among ops, matching
//     the server's error (zk.ErrBadVersion, ...). Nothing was applied;
//     the hold stands;
//   - the server refused the check itself for another reason (no READ
//     permission on the hold's node, say): zkrecipes.ErrFenceCheckFailed with the
//     server's error. Nothing was applied; the hold stands;
//   - the reply was lost: zkrecipes.ErrOutcomeUnknown.
//
// A Fenced call that races the hold's Release may commit after Release
// returned: Release sends its delete without waiting for it, and a multi
// sent before it is applied before it. The node existed when it committed,
// so no other holder was granted.
//
// Fenced never sends the multi twice. The client's retry policy resends a
// plain Multi after a lost reply, and a multi that committed the first time
// commits again whenever no op conflicts with itself (a sequential create,
// a set of version -1), while the check of the hold still passes. So once
// the multi may have reached the server, a lost reply is
// zkrecipes.ErrOutcomeUnknown
// and not a retry: read the state to learn whether it was applied (it was
// all or none), or make the ops detect their own repetition (a create of a
// fixed name, a set of the version read before) and call Fenced again.
func (h *Hold) Fenced(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	if h == nil {
		return nil, errNilHold
	}
	path := h.src.Path()
	fail := func(err error) error { return h.named(fmt.Errorf("fenced write under %s: %w", path, err)) }
	if h.released.Load() {
		if h.closeErr.Load() != nil {
			return nil, fail(ErrReleasedByClose)
		}
		return nil, fail(zkrecipes.ErrReleased)
	}
	if err := h.errNow(); err != nil {
		if errors.Is(err, zkrecipes.ErrReleased) {
			return nil, fail(err)
		}
		return nil, fail(fmt.Errorf("%w: %w", zkrecipes.ErrHoldLost, err))
	}
	if ctx == nil {
		return nil, fail(zkrecipes.ErrNilContext)
	}
	if len(ops) == 0 {
		return nil, fail(fmt.Errorf("%w: no ops", zkrecipes.ErrInvalidArgument))
	}
	all := make([]any, 0, len(ops)+1)
	// Version -1 checks existence only: a revocation request (Curator's
	// __REVOKE__) changes the node's data version, not its ownership.
	all = append(all, &zk.CheckVersionRequest{Path: path, Version: -1})
	all = append(all, ops...)
	res, err := h.src.Client().MultiOnce(ctx, all...)
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
		cause := zkrecipes.ErrNodeDeleted
		if s := h.src.Session(); isClosed(s.Lost) || h.src.Client().Session().ID != s.ID {
			cause = zkrecipes.ErrSessionLost
		}
		h.src.End(cause)
		return res, fail(fmt.Errorf("%w: %w", zkrecipes.ErrHoldLost, cause))
	case me != nil && me.Index == 0:
		// The check itself failed otherwise (no READ on our own node, say):
		// nothing was applied and the hold stands, but no caller's op is
		// to blame.
		return res, fail(fmt.Errorf("%w: the check of the hold's node %s failed: %w", zkrecipes.ErrFenceCheckFailed, path, me.Err))
	case me != nil && me.Index > 0:
		// One of the caller's ops: name it by the caller's index.
		return res, fail(&framework.MultiOpError{Index: me.Index - 1, Path: me.Path, Err: me.Err})
	case errors.Is(err, zk.ErrSessionExpired):
		h.src.End(zkrecipes.ErrSessionLost)
		return nil, fail(fmt.Errorf("%w: %w: %w", zkrecipes.ErrHoldLost, zkrecipes.ErrSessionLost, err))
	}
	return res, fail(err)
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
