// Package lagread tests the reads that decide something when they are
// served by a follower that lags the leader: a follower answers reads from
// what it has applied, so a read that no write of the caller's own
// precedes may miss a write another client saw committed before the read
// began. A recipe whose answer depends on such a read must sync first
// (framework.Client.Sync), as the protected create's lookup does. A read
// after a write of the caller's own needs none (the reply to the write
// comes once the follower has applied everything before it), nor does the
// first read after a reconnect to the same session (the follower takes the
// session back only after the leader's answer, which comes after every
// commit before it).
//
// Each test runs a 3-node ensemble whose followers reach the leader through
// peer proxies (zktest.WithPeerProxies), connects one client to the leader
// and one to a follower, lags that follower, and checks that a call on
// the lagging client decides as the leader's state says it must.
//
// These are this repository's own tests, not library API.
package lagread
