// Package leader is leader election over ZooKeeper, wire-compatible with
// Apache Curator: Latch is Curator's LeaderLatch and Selector its
// LeaderSelector. Both are for work that must never run twice at once:
// leadership ends, and the leader is told, before anyone else's can begin.
//
//	latch, err := leader.NewLatch(client, "/schedulers/billing", leader.WithParticipantID("node-1"))
//	err = latch.Start(ctx)         // joins the election; leads in the background until Close
//	term, err := latch.Await(ctx)  // a *hold.Hold: Token fences, Done ends it, Release steps down
//	sub := latch.Subscribe()       // every change: elected, or not any more and why
//
//	sel, err := leader.NewSelector(client, "/schedulers/billing",
//		func(ctx context.Context, term *hold.Hold) error {
//			return runJobs(ctx, term.Token()) // ctx is cancelled the moment leadership is in doubt
//		}, leader.WithAutoRequeue())
//	err = sel.Start(ctx)
//
//	id, err := leader.Leader(ctx, client, "/schedulers/billing")   // any client can ask
//	obs, err := leader.Observe(ctx, client, "/schedulers/billing") // who leads now, then every change
//	for l := range obs.Changes() { // until ctx ends, the client closes or it fell behind; then obs.Err() says why
//		fmt.Println(l.ID, l.Token, l.Since, l.HasLeader())
//	}
//
// A leader learns that its leadership is in doubt the moment its session is
// (Suspended under the standard error policy, Lost under the session-only
// one), which is before the server can expire the session and elect
// another. Each term is a *hold.Hold, as every recipe's (package hold): its
// fencing token (the czxid of the leader's node) grows from each term to
// the next; hand it to what the leader writes to, and have that refuse
// lower tokens, or write to ZooKeeper through the term's Fenced.
//
// A latch leads only while its node is first and owned by its current
// session (CURATOR-696). It gives the term up on Suspended (standard
// policy) or Lost, before the server can elect anyone else, and after a
// brief cut on the same session it checks again and keeps leading instead
// of queueing again. A selector's function that returns, fails or panics
// gives leadership up (an error or panic goes to WithErrorHandler, else to
// the client's logger); with WithAutoRequeue the selector then competes
// again.
//
// Observe follows who leads any latch or selector path, this package's or
// Curator's, for operators and for services that only need to know. It
// keeps one watch at a time and never polls. After the observer's own cut
// or session expiry it looks again and reports a change only if the
// leader's node or token differs from the last one it reported: nothing
// missed, nothing reported twice. Its changes are queued for the reader
// like every subscription's (docs/vocabulary.md): a reader that falls too
// far behind is told, with zkrecipes.ErrFellBehind.
package leader
