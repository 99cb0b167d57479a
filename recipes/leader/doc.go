// Package leader will hold LeaderLatch and LeaderSelector, Curator-compatible
// leader election that tells the leader the moment its leadership is in doubt.
//
// Not built yet: see the README's roadmap.
package leader
