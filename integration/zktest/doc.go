// Package zktest runs real ZooKeeper servers for tests: a standalone server or
// an N-node ensemble on 127.0.0.1, each behind a TCP fault proxy that can cut,
// blackhole or delay a client's links.
//
// No test in this project mocks ZooKeeper for behaviour the server decides;
// every package's tests get their servers here.
//
// # Where the server comes from
//
// In this order:
//
//  1. ZK_CONNECT: an external server. Tests that need to stop, kill or restart
//     servers, or to expire a session through the server, skip with a message.
//  2. A local install: ZK_HOME (the Apache tarball layout), or the jars of
//     Debian's zookeeper package under /usr/share/java.
//  3. Docker, when the docker command finds a daemon that answers
//     (standalone only): a zookeeper:3.8 container, driven through the docker
//     command line so that the library's module needs no container library.
//
// Otherwise the test fails with the command that installs ZooKeeper; the suite
// is never skipped silently.
//
// Every JVM started here is stopped by t.Cleanup, gets its own temporary data
// directory and free ports, and is marked on its command line with the test
// process's pid, so a test can prove that none survived (see OwnJVMs).
//
// # Faults
//
// Clients connect through a [Proxy]. [Cluster.Proxy] is shared by clients that
// do not need their own faults; [Cluster.NewProxy] gives one client a private
// set of links so a fault hits that client alone. [ExpireSession] blackholes a
// proxy until the server has really expired the session.
package zktest
