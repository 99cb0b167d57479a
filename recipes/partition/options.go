package partition

import (
	"bytes"
	"context"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
)

// Items is the set of work items a Partitioner shares: a fixed List, or
// the children of a node (ChildrenOf), followed live. The zero Items is
// neither: New refuses it.
type Items struct {
	list []string
	path string
}

// List is a fixed set of items. Each is one path segment (its lock is
// <path>/items/<item>); there must be at least one, and no duplicate.
func List(items ...string) Items { return Items{list: append([]string{}, items...)} }

// ChildrenOf makes the children of the node at path the items, followed
// live with a cache (package cache): a child made is an item to own, a child
// deleted an item to let go. A missing node has no children: no items.
// path is read with the Partitioner's client, under its namespace.
func ChildrenOf(path string) Items { return Items{path: path} }

// Worker runs the work of one owned item: ctx is cancelled when the item
// must move to another member (a join), when its hold is lost (ctx's cause
// is the hold's Err), and at Close. The item's lock is held until Worker
// returns, so the next owner starts only after it has: return promptly once
// ctx is done. h is the item's hold: hand h.Token() to what the work
// writes. Returning early does not give the item up; it stays owned until it
// moves.
type Worker func(ctx context.Context, item string, h *hold.Hold)

// Option configures a Partitioner (New).
type Option interface{ applyPartition(*config) }

type config struct {
	framework.Settings
	worker    Worker
	workerSet bool
	payload   []byte
}

type optionFunc func(*config)

func (f optionFunc) applyPartition(c *config) { f(c) }

// WithWorker runs w for every item this member acquires, and releases the
// item's lock only once w has returned: the graceful handoff (see the
// package documentation). Without it, an item that must move is released
// at once, and the Released event says so. w must not be nil. w runs on a
// goroutine of its own (framework.Runtime.Go).
func WithWorker(w Worker) Option {
	return optionFunc(func(c *config) { c.worker, c.workerSet = w, true })
}

// WithPayload sets the data of this member's node in the group of members
// (default: framework.DefaultParticipantID(), as Curator's GroupMember).
func WithPayload(p []byte) Option {
	p = bytes.Clone(p)
	return optionFunc(func(c *config) { c.payload = p })
}
