// Package rwlock will hold the Curator-compatible read-write lock
// (InterProcessReadWriteLock) with downgrade from write to read.
//
// Not built yet: see the README's roadmap.
package rwlock
