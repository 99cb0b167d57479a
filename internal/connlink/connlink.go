// Package connlink hands framework the parts of a *conn.Conn that users must
// not reach: the raw go-zookeeper connection (which bypasses every rule of
// the framework) and the wire traces of creates and deletes. Package conn
// registers them from init; only this module can import an internal
// package, so the plumbing stays out of the public API (the pattern of
// google.golang.org/grpc/internal).
package connlink

import "github.com/go-zookeeper/zk"

// Trace follows one create or delete through the wire.
type Trace interface {
	// Sent is closed once the request has been written to the server.
	Sent() <-chan struct{}
	// Result is the reply of a traced create: the path made, its czxid and
	// the session it was sent on; ok is false until it arrived.
	Result() (path string, zxid, session int64, ok bool)
	// Close stops tracing.
	Close()
}

// Conn is the plumbing of one *conn.Conn.
type Conn interface {
	// ZK is the go-zookeeper connection of the current session.
	ZK() *zk.Conn
	// TraceCreate traces the next create whose path starts with prefix and
	// lies in prefix's directory (a protected create's prefix).
	// onSent, if not nil, runs once, on the connection's send loop, right
	// before the first such request is written: a request sent on the
	// same session from then on is answered after it. It must not block.
	TraceCreate(prefix string, onSent func()) Trace
	// TraceDelete traces the next delete of path.
	TraceDelete(path string) Trace
	// Observe calls f with each state change from now on (ev is a
	// conn.Event), synchronously, in order, under the connection's lock:
	// f must be quick and must not call the connection. remove stops it.
	Observe(f func(ev any)) (remove func())
}

var of func(c any) Conn

// Register is called once, by package conn.
func Register(f func(c any) Conn) { of = f }

// Of returns the plumbing of c, a *conn.Conn.
func Of(c any) Conn { return of(c) }
