// Package semaphore will hold the Curator-compatible counting semaphore with
// leases (InterProcessSemaphoreV2), its maximum fixed or read from a shared
// count.
//
// Not built yet: see the README's roadmap.
package semaphore
