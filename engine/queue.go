package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
)

// Err gives an error of the engine or the client the sentinels every recipe
// documents: the one error mapping of the module. closed says the recipe
// itself was closed: what failed because of it says zkrecipes.ErrClosed.
func Err(err error, closed bool) error {
	switch {
	case err == nil || errors.Is(err, zkrecipes.ErrClosed):
		return err
	case closed || errors.Is(err, zk.ErrClosing):
		return errors.Join(zkrecipes.ErrClosed, err)
	}
	return err
}

// Trust returns the session under which nodes made by session owner can be
// handed out as held: the current session, if it is owner and the client's
// error policy still trusts it. A link that dropped just now is waited out,
// and every node checked again after the reconnect (it must exist and still
// be owner's). Every recipe grants through this, so that no hold is ever
// born under a session in doubt. The error wraps errSessionLost when the
// nodes cannot be trusted any more.
func Trust(ctx context.Context, c *framework.Client, owner int64, paths ...string) (conn.Session, error) {
	for {
		s := c.Session()
		if s.ID != owner {
			return s, fmt.Errorf("%w: %v belong to session 0x%x, now on 0x%x", errSessionLost, paths, owner, s.ID)
		}
		// Lost first: a lost session has its loss signal closed too, and a
		// select would pick either, sometimes waiting for a reconnect
		// before saying what it knows now.
		select {
		case <-s.Lost:
			return s, fmt.Errorf("%w: at grant", errSessionLost)
		default:
		}
		select {
		case <-c.LossSignal(s):
			if err := reconnected(ctx, c, paths); err != nil {
				return s, err
			}
			continue
		default:
		}
		if err := c.CheckTrust(s); err != nil {
			if errors.Is(err, zkrecipes.ErrClosed) {
				return s, err
			}
			// No proof of life for longer than the signal allows, the
			// signal not fired yet: a process thawed after a long freeze,
			// whose connection has not yet found its link dead. It will
			// at once (its read deadline is past): wait for that, then
			// look again as above.
			t := time.NewTimer(s.Timeout)
			select {
			case <-s.Suspended:
				t.Stop()
				if err := reconnected(ctx, c, paths); err != nil {
					return s, err
				}
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return s, ctx.Err()
			}
			continue
		}
		return s, nil
	}
}

// reconnected waits for the link to be back and checks that every node of
// paths is still there and the current session's.
func reconnected(ctx context.Context, c *framework.Client, paths []string) error {
	if _, err := c.WaitConnected(ctx); err != nil {
		return err
	}
	for _, p := range paths {
		ok, st, err := c.Exists(ctx, p)
		if err != nil {
			return err
		}
		if !ok || st.EphemeralOwner != c.Session().ID {
			return fmt.Errorf("%w: node %s gone after reconnect", errSessionLost, p)
		}
	}
	return nil
}

// Leave deletes a queue node that session owner made: the one way every
// recipe leaves a queue, whether it gave up, failed or released. While
// owner is the current session and the link is up, the delete is only sent
// (framework.OwnedBy with framework.InBackground): ZooKeeper applies it
// before anything this client sends next, so a retry never queues behind
// its own old node, and the next contender is woken by the delete itself.
// Otherwise the node may belong to a session being replaced and is
// deleted in the background, only while it is still owner's. It returns
// an error only when the delete could not even be queued (or owner is 0,
// zkrecipes.ErrInvalidArgument); a closed client's session takes its
// ephemeral nodes with it. The wait is bounded by
// framework.WithReleaseTimeout.
func Leave(c *framework.Client, path string, owner int64) error {
	err := c.Delete(context.Background(), path, -1, framework.OwnedBy(owner), framework.InBackground())
	if err == nil || errors.Is(err, zkrecipes.ErrClosed) || errors.Is(err, zkrecipes.ErrDeferred) {
		return nil
	}
	return err
}

// Nodes lists the queue under dir in Curator's order, as full paths: the
// one participant listing of every recipe. A missing dir is an empty queue.
func Nodes(ctx context.Context, c *framework.Client, dir string, markers ...string) ([]string, error) {
	kids, _, err := c.Children(ctx, dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, Err(err, false)
	}
	sorted := Sort(kids, markers...)
	for i, k := range sorted {
		sorted[i] = framework.Join(dir, k)
	}
	return sorted, nil
}

// Participants returns the data of the queue's nodes (the participant ids)
// in queue order; a node that leaves while we look is skipped.
func Participants(ctx context.Context, c *framework.Client, dir string, markers ...string) ([]string, error) {
	nodes, err := Nodes(ctx, c, dir, markers...)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(nodes))
	for _, n := range nodes {
		data, _, err := c.Get(ctx, n)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, Err(err, false)
		}
		ids = append(ids, string(data))
	}
	return slices.Clip(ids), nil
}

// CheckCall says why a call with client and ctx cannot be made: a nil
// client or context. Nothing is sent then.
func CheckCall(client *framework.Client, ctx context.Context) error {
	switch {
	case client == nil:
		return fmt.Errorf("%w: nil client", zkrecipes.ErrInvalidArgument)
	case ctx == nil:
		return zkrecipes.ErrNilContext
	}
	return nil
}

// CheckData says why data cannot be the data of a recipe's queue nodes in
// dir (named each of names, then a sequence number): their create would be
// over the client's request size limit (zkrecipes.ErrTooLarge). A recipe
// checks its participant id with it when it is made, so that nothing it
// sends later is refused for it.
func CheckData(c *framework.Client, dir string, data []byte, names ...string) error {
	for _, name := range names {
		err := c.CheckCreate(framework.Join(dir, name), data, framework.WithMode(framework.EphemeralSequential), framework.Protected())
		if err != nil {
			return fmt.Errorf("participant id of %d bytes: %w", len(data), err)
		}
	}
	return nil
}
