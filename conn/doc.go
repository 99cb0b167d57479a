// Package conn will hold one ZooKeeper session and its state machine, with
// Curator's semantics: Connected, Suspended, Reconnected, Lost (reported by
// the server or simulated after the session timeout) and ReadOnly, delivered
// to listeners that never block the client and never miss Lost.
//
// Not built yet: see the connection framework issue in the README's roadmap.
package conn
