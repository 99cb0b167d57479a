// Package persistent keeps a node in place for as long as a process wants
// it, whatever happens to the session, wire-compatible with Apache
// Curator's PersistentNode (Node; PersistentEphemeralNode is its
// ephemeral case) and PersistentTtlNode (TTLNode): a Go process and a Java
// one see the same nodes at the same paths.
//
// A Node is made by Start and kept until Close: when the session is lost
// (its ephemeral node went with it) or someone deletes the node, the Node
// makes it again, with the data of the last Set. Status, Err and Subscribe
// say whether the node is in place now; Wait waits until it is.
//
// # Protocol
//
// By default the node is an ephemeral at exactly the Node's path. Options
// choose Curator's other kinds: Protected ("_c_<uuid>-<name>", Curator's
// useProtection), Sequential (a 10-digit sequence number appended by the
// server; it implies Protected), Persistent, WithTTL (PERSISTENT_WITH_TTL). Missing parents are
// made as containers, as Curator's default. Once made, the node keeps its
// name: a re-made node has the same protected prefix and sequence number
// (a non-sequential create at the name first given by the server), as in
// Curator. Close deletes the node, of whatever kind, as Curator's close.
//
// A TTLNode is a container at its path with the data, and a child "touch"
// made with the TTL (PERSISTENT_WITH_TTL) and touched every TTL/2, as
// Curator's PersistentTtlNode: when the process stops touching it the
// server deletes the child after the TTL, then the empty container. Close
// deletes nothing. TTL nodes need the servers' zookeeper.extendedTypesEnabled.
//
// # Beyond Curator
//
//   - Ownership is checked, not assumed: an ephemeral node of another
//     session found at the path (a process on the same path, or this one's
//     previous session, not yet expired) is never written to and never
//     taken for ours, as Curator's setData after NodeExists does; the Node
//     says so (ErrOtherOwner) and makes its own once that node is gone.
//   - "In place" is a signal the caller can follow: Status.InPlace, with
//     the node's czxid (higher for each re-creation) and owning session,
//     stops being true when the link drops (under the standard error
//     policy; when the session is lost under the session-only one), and
//     Subscribe delivers each change. Curator only offers a listener on
//     creation.
//   - Set returns once the data is on the node in place, and the data is
//     kept for every later re-creation even when Set gives up waiting.
//   - An unprotected create is sent at most once: after a lost reply the
//     Node looks instead of resending, and a Start that gives up, or a
//     Close, while a create is on its way waits for it to be answered (or
//     its link to go) and deletes the node it made. A sequential node is
//     always protected, so that a create whose reply was lost finds its
//     node: Curator's unprotected one makes a second, and the first stays.
//   - Close deletes only the Node's own node: one it made, or a
//     persistent one it found at its path and took (as Curator's setData
//     after NodeExists); never an ephemeral of another session, which no
//     Node, persistent or TTL-mode ones included, writes into or takes
//     for in place (Curator's PersistentNode only logs a warning).
//   - A TTLNode touches its child as soon as it starts (Curator waits a
//     period): a container that never had a child is not reaped by the
//     server, so an early crash would leave it forever.
//
// Every error names the recipe and its path ("persistent node
// /services/a: ...") and wraps the module's sentinels; ErrNotInPlace and
// ErrOtherOwner are this package's own.
package persistent
