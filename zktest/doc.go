// Package zktest is the test kit for services built on zkrecipes: real
// ZooKeeper servers for your tests, and the faults your service must
// survive, what Curator users get from curator-test (TestingServer,
// TestingCluster, KillSession).
//
// It is a module of its own, github.com/zkrecipes/zkrecipes/zktest, so that
// only your tests pay for it: it requires testcontainers-go (for servers in
// Docker), and the library's module requires no container library.
//
// # Servers
//
// [Standalone] starts one server for a test and [Ensemble] an n-node
// ensemble; t.Cleanup stops them, and every server gets its own temporary
// data directory and free ports on 127.0.0.1. The servers come from, in
// this order:
//
//  1. ZK_CONNECT, a comma-separated list of an external server's
//     addresses. A test that needs to stop servers or expire a session
//     skips with a message: the kit cannot inject those faults there.
//  2. A local install: ZK_HOME (the Apache tarball layout), or Debian's
//     zookeeper package (/usr/share/java). Ensembles need one.
//  3. Docker, through testcontainers-go, when a daemon answers: a
//     standalone server in a zookeeper:3.8 container ([WithImage] names
//     another). [WithDocker] asks for Docker even where a local install
//     exists.
//
// With none of them the test fails with the command that installs
// ZooKeeper; it never passes by skipping.
//
// # Faults
//
// Clients connect through a [Proxy], a TCP proxy in front of every server.
// [Cluster.ConnectString] goes through the cluster's shared proxy; give the
// client under test a proxy of its own ([Cluster.NewProxy]) so that a fault
// hits it alone. A proxy can [Proxy.Cut] its links, [Proxy.Blackhole] them
// (the client hears nothing, as in a partition), [Proxy.Delay] them, or drop
// requests or replies; [Proxy.Heal] ends the fault. [Proxy.ExpireSession]
// makes the server really expire a client's session, which is what Curator's
// KillSession stands for: the client learns of it the way it would in
// production, when it reconnects. [Server.Stop], [Server.Kill] and
// [Server.Start] take a server down and bring it back on the same data.
//
// A test of a service's failure handling:
//
//	func TestReportStopsWhenItsSessionExpires(t *testing.T) {
//		cluster := zktest.Standalone(t)
//		proxy := cluster.NewProxy() // the service's own links
//		client, err := framework.Dial(ctx, proxy.Addrs())
//		// ... the service takes its lock and starts its work under
//		// the hold's Context ...
//		proxy.ExpireSession(client.Session().ID)
//		// ... assert that the work stopped ...
//	}
//
// The package's Example runs it in full. docs/testing-your-service.md in
// the repository is the guide.
//
// # Examples
//
// A package whose Examples need a server starts one for all of them in
// TestMain with [Main]; [MainCluster] returns it.
package zktest
