// Package session is one ZooKeeper session under framework.Client: it dials
// through go-zookeeper, turns the client's raw states into the module's
// connection states (conn.State), keeps the session's id and its proof of
// life (ProvenAt), and traces a create or delete through the wire. It is
// internal: users reach it only through framework.Client.
package session
