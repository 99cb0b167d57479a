// Package framework is the layer every recipe stands on, as Curator's
// CuratorFramework: a Client over one ZooKeeper session (whose states
// package conn names) that adds
//
//   - a context on every call that can block, and retries per a
//     retry.Policy;
//   - a namespace (chroot-like path prefix) and an ACL provider;
//   - an error policy that says when a session problem invalidates what was
//     built on it (Standard: from Suspended on; SessionOnly: from Lost on);
//   - protected create in Curator's exact node-name format, so a create whose
//     reply was lost finds its node, and a failed one leaves nothing behind;
//   - guaranteed delete: a delete that fails for connection reasons goes on in
//     the background until the node is gone;
//   - writes sent at most once (CreateAtMostOnce, DeleteAtMostOnce): a lost
//     reply is zkrecipes.ErrOutcomeUnknown, never a resend that could redo the write
//     or undo another client's in between.
//
// ValidateRecipePath is the check every recipe's constructor makes of its
// paths: ValidatePath, and not the root.
//
// Every path is checked before anything is sent, and so is the context: a
// nil one is refused with an error wrapping zkrecipes.ErrInvalidArgument, as by
// every call of this module that takes one (retry, hold and the recipes). Errors wrap the ZooKeeper sentinel and name the operation and
// path, so both errors.Is(err, zk.ErrNoNode) and a readable message work.
//
// A call returns the moment its context's deadline passes. A context with
// no deadline, cancelled while a request is in flight on a link that is
// up, is noticed when the request returns: within a round trip; if the
// link dies with the request sent, once go-zookeeper finds it dead (its
// receive timeout, two thirds of the session timeout); if the link dies
// with the request still queued, once go-zookeeper's reconnect has tried
// every server (at worst ten receive timeouts each, for a server that
// accepts the connection and never answers it). That is what spares a
// request answered at once a hand-off to another goroutine; the call then
// returns the context's error, and what the request did is handled as for
// any abandoned request (a protected create's node is deleted). Give a
// call a deadline to bound its wait exactly. The requests of a recipe's
// background work and of its Start (Runtime), and any under a context
// marked by HandOff, always hand off: a Close that ends them and waits for
// them returns within the release timeout, whatever a request still waits
// for.
//
// Every write is measured before it is sent, as the server will count it:
// a ZooKeeper server closes the connection on a request over its
// jute.maxbuffer (0xfffff bytes by default, header and data and ACLs
// together; for a multi, all of its ops), and with the connection go the
// trust of every hold on the client. A request over the client's limit
// (WithMaxRequestSize, by default DefaultMaxRequestSize) fails at once
// with zkrecipes.ErrTooLarge and nothing is sent; CheckCreate and CheckMulti measure
// one without sending it. Raise the limit only with the servers' own
// jute.maxbuffer; a request over the default is then sent at most once,
// whatever the retry policy, so that a server that refuses it closes the
// connection once, not on every reconnect.
//
// A Client records metrics for itself and its recipes through the
// OpenTelemetry metric API (WithMeterProvider; the global provider by
// default) and logs through one *slog.Logger (WithLogger; silent by
// default). docs/production.md in the repository lists the instruments
// and the log attributes; docs/framework.md tours this package.
package framework
