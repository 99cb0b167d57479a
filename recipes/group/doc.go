// Package group is group membership, wire-compatible with Apache Curator's
// GroupMember: each process joins a group with a member id and a payload,
// and sees every member, Go or Java, on the same path.
//
// # Protocol
//
// A member is an ephemeral node path/<id> whose data is its payload,
// directly under the group's path (made as a container if missing), kept
// in place as Curator's PersistentNode keeps it: a persistent.Node, made
// again after a session loss or a delete by someone else, with the payload
// of the last Set. Members lists the group's children with their data,
// this member always included (Curator's getCurrentMembers does the same).
//
// # Beyond Curator
//
//   - Subscribe delivers joins, leaves and payload changes as events
//     (Curator's GroupMember offers none; one reads its cache).
//   - Members says when its view may be stale (its error), and the view
//     catches up after every gap; Status says whether this member's own
//     node is in place.
//
// The view is the module's cache (recipes/cache) in its Children shape:
// a change of one member costs one read, a gap one read per member, and
// each member holds a data watch (see the cache's costs). Its staleness is
// the cache's: zkrecipes.ErrStale with the reason.
//
// Every error names the recipe and the group's path ("group member
// /groups/workers: ...") and wraps the module's sentinels.
package group
