// Package framework is the layer every recipe stands on, as Curator's
// CuratorFramework: a Client over one conn.Conn that adds
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
//     reply is ErrOutcomeUnknown, never a resend that could redo the write
//     or undo another client's in between.
//
// ValidateRecipePath is the check every recipe's constructor makes of its
// paths: ValidatePath, and not the root.
//
// Every path is checked before anything is sent; errors wrap the ZooKeeper
// sentinel and name the operation and path, so both errors.Is(err,
// zk.ErrNoNode) and a readable message work.
//
// A Client records metrics for itself and its recipes through the
// OpenTelemetry metric API (WithMeterProvider; the global provider by
// default) and logs through one *slog.Logger (WithLogger; silent by
// default). The README's "Running in production" lists the instruments
// and the log attributes.
package framework
