// Package conn holds one ZooKeeper session and its connection state machine,
// with Apache Curator's semantics, over github.com/go-zookeeper/zk.
//
// The states a session goes through, in the order a listener sees them:
//
//	Connected        the first session is established
//	Suspended        the link is down; the session may still be alive
//	Reconnected      the link is back, on the same session or a new one
//	Lost             the session is gone: the server said so, or Suspended
//	                 lasted the negotiated session timeout (simulated expiry)
//	ReadOnly         connected to a server that serves reads only
//
// Lost is final for that session: everything it owned (ephemeral nodes,
// watches, locks) must be treated as gone, even if the client later reconnects
// to the same session id after a simulated expiry (a whole-ensemble outage
// can bring sessions back). The next Reconnected starts a new epoch.
//
// Events reach listeners through [Conn.Subscribe] in order, on channels that
// never block the client's own goroutine and never drop Lost or Reconnected,
// however slow the reader. For code that only needs to know "is the session I
// started with still trustworthy", [Conn.Session] returns channels that close
// on the next Suspended and on Lost, without a goroutine per caller.
//
// go-zookeeper's event channel holds six events and drops the rest; this
// package uses its event callback instead and never blocks in it.
package conn
