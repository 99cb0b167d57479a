// Package partition tests holders on a server that a network partition
// cuts off from the rest of its ensemble. Such a server goes on answering
// its clients' pings until it notices, syncLimit ticks after it last
// heard the leader, while the majority expires the sessions of its
// clients a session timeout after it last heard of them: a hold there must
// signal its loss before the majority can grant what it held.
//
// These are this repository's own tests, not library API.
package partition
