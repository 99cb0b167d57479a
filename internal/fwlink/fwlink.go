// Package fwlink hands the engine and the recipes the parts of a
// *framework.Client that users must not reach: the pipelined queue create,
// deletes bound to the session that made a node, and the error policy's
// loss signal. Package framework registers them from init; only this module
// can import an internal package (the pattern of
// google.golang.org/grpc/internal).
package fwlink

import (
	"context"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
)

// Queued is a node made by Enqueue.
type Queued struct {
	// Path is the new node, without the namespace.
	Path string
	// Czxid is the zxid that created it.
	Czxid int64
	// Owner is the session that created it.
	Owner int64
	// Children of the parent, listed after the create: they include Path.
	Children []string
	// Changed, if not nil, is the listing's child watch: it fires (or is
	// closed) at the first change of the parent's children after the
	// listing, Path's deletion included. It is nil unless Path's create was
	// the last change to the parent's children before the listing (its
	// pzxid is Czxid), so that Path was not deleted, or deleted and made
	// again, before the watch was set.
	Changed <-chan zk.Event
}

// Client is the plumbing of one *framework.Client.
type Client interface {
	// Enqueue makes a protected ephemeral-sequential node at path (parents
	// as containers) and lists its parent, pipelined.
	Enqueue(ctx context.Context, path string, data []byte) (*Queued, error)
	// DeleteLater deletes path in the background, guaranteed; with owner
	// not 0, only while it is an ephemeral of session owner.
	DeleteLater(path string, owner int64) error
	// DeleteOwn deletes a node session owner made: sent at once while
	// owner is current and the link up, else DeleteLater.
	DeleteOwn(ctx context.Context, path string, owner int64) error
	// LossSignal closes when, under the client's error policy, what was
	// built on s can no longer be trusted.
	LossSignal(s conn.Session) <-chan struct{}
	// Metrics is the client's instruments (never nil).
	Metrics() *metrics.Client
	// OnClose registers f to run first thing in the client's Close (at
	// once if it is closed already); remove unregisters it.
	OnClose(f func()) (remove func())
	// Closing is closed when the client's Close begins to stop its work.
	Closing() <-chan struct{}
	// Conn is the client's connection, whose Close must not be called
	// behind the client's back.
	Conn() *conn.Conn
	// GetWRaw sets a data watch on path and returns go-zookeeper's own
	// channel, with no goroutine to forward it: the caller watches its ctx
	// and Closing itself, and must not read the event's path. The stat is
	// the node's as the watch was set.
	GetWRaw(ctx context.Context, path string) (<-chan zk.Event, *zk.Stat, error)
	// MultiOnce is Multi sent at most once: never again after it may have
	// reached the server; an error that leaves its outcome unknown wraps
	// framework.ErrOutcomeUnknown. For fenced writes.
	MultiOnce(ctx context.Context, ops ...any) ([]zk.MultiResponse, error)
	// Heads is the client's memory of the queue nodes it granted with
	// nothing ahead of them.
	Heads() *Heads
	// Go runs f on one of the client's workers, which Close waits for; false
	// (f not run) once Close has begun. A worker has grown its stack on
	// earlier work, where a new goroutine would copy its own as it grows.
	Go(f func()) bool
}

// Heads remembers the last queue nodes a client granted with nothing ahead
// of them, by path and czxid: a waiter of the same client that watched
// such a node knows, when it goes, that nothing is ahead of it either
// (sequence numbers only grow, so nothing can queue ahead later), and need
// not list the queue again. A node forgotten only costs that listing, so
// the memory is a small ring. The zero value is ready to use.
type Heads struct {
	mu   sync.Mutex
	set  map[headKey]struct{}
	ring [headsKept]headKey
	next int
}

// headsKept bounds the memory: a successor looks its predecessor up within
// a round trip of the grant, and a client rarely grants this many holds in
// one.
const headsKept = 1024

type headKey struct {
	path  string
	czxid int64
}

// Note remembers that the node at path, created at czxid, was granted with
// nothing ahead of it.
func (h *Heads) Note(path string, czxid int64) {
	k := headKey{path, czxid}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.set == nil {
		h.set = make(map[headKey]struct{}, headsKept)
	}
	delete(h.set, h.ring[h.next])
	h.ring[h.next] = k
	h.next = (h.next + 1) % headsKept
	h.set[k] = struct{}{}
}

// Was reports whether the node at path created at czxid was noted, and
// forgets it: a node has one successor.
func (h *Heads) Was(path string, czxid int64) bool {
	k := headKey{path, czxid}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.set[k]
	delete(h.set, k)
	return ok
}

var of func(c any) Client

// Register is called once, by package framework.
func Register(f func(c any) Client) { of = f }

// Of returns the plumbing of c, a *framework.Client.
func Of(c any) Client { return of(c) }
