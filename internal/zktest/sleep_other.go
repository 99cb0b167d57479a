//go:build !linux

package zktest

import "time"

// preciseBelow: elsewhere every wait uses the runtime's timers.
const preciseBelow = 0

func preciseSleep(d time.Duration) { time.Sleep(d) }
