// Package conn is the vocabulary of a ZooKeeper session as every part of
// this module sees it, with Apache Curator's semantics: its states, the
// events that move it from one to the next, and the Session a caller
// checks to know whether what it built on the session can still be
// trusted. A framework.Client runs one session and reports it in these
// terms (Client.State, Client.Session, Client.Subscribe).
//
// The states a session goes through, in the order a subscriber sees them:
//
//	Connected        the first session is established
//	Suspended        the link is down; the session may still be alive
//	Reconnected      the link is back, on the same session or a new one
//	Lost             the session is gone: the server said so, or Suspended
//	                 lasted the negotiated session timeout (simulated expiry)
//	ReadOnly         connected to a server that serves reads only
//	Closed           the client was closed: the last event
//
// Lost is final for that session: everything it owned (ephemeral nodes,
// watches, locks) must be treated as gone, even if the client later
// reconnects to the same session id after a simulated expiry (a
// whole-ensemble outage can bring sessions back). The next Reconnected
// starts a new epoch.
//
// For code that only needs to know "is the session I started with still
// trustworthy", a Session carries channels that close on the next
// Suspended and on Lost, without a goroutine per caller; which of the two
// a recipe obeys is the client's error policy (framework.ErrorPolicy).
package conn
