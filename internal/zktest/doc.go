// Package zktest runs real ZooKeeper servers for the project's own tests,
// and under the test kit for users' tests (github.com/zkrecipes/zkrecipes/zktest,
// a module of its own, which imports this package: Go lets it, as its path
// is under github.com/zkrecipes/zkrecipes/). It imports nothing of the
// library, which is why it may sit at the bottom, in internal/.
//
// It runs a standalone server or an N-node ensemble on 127.0.0.1, each
// behind a TCP fault proxy that can cut, blackhole or delay a client's
// links.
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
//  3. Containers, when a container backend was given (WithContainers) and
//     its engine answers (standalone only). The library's module holds no
//     container library: the test kit's module, github.com/zkrecipes/zkrecipes/zktest,
//     gives one built on testcontainers-go. The library's own tests have
//     none, and need a local install or ZK_CONNECT.
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
//
// # The test kit
//
// The kit's module (zktest/ in the repository) calls Standalone, Ensemble,
// the options, the methods of Cluster, Server and Proxy, ExpireSession,
// MainWith, MainCluster and the Containers interface. A user's build may
// pair a kit release with a newer library, so these keep working across
// library releases: add, do not change, until a kit release goes with it.
package zktest
