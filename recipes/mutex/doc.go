// Package mutex will hold the fair, reentrant, Curator-compatible
// InterProcessMutex, with a fencing token and a loss signal on every hold,
// plus SemaphoreMutex and MultiLock.
//
// Not built yet: see the README's roadmap.
package mutex
