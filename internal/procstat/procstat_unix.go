//go:build unix

// Package procstat reads what the process has spent, for the benchmarks
// that report the client's own cost per operation (zkr-bench, the mutex's
// cost benchmarks).
package procstat

import (
	"syscall"
	"time"
)

// CPU is the user and system time of every thread of the process.
func CPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
