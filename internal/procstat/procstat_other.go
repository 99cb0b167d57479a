//go:build !unix

// Package procstat reads what the process has spent, for the benchmarks
// that report the client's own cost per operation (zkr-bench, the mutex's
// cost benchmarks).
package procstat

import "time"

// CPU is not measured here: it reads 0.
func CPU() time.Duration { return 0 }
