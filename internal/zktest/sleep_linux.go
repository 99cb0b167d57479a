package zktest

import (
	"errors"
	"syscall"
	"time"
)

// preciseBelow is the longest wait that preciseSleep serves; longer ones
// use the runtime's timers, whose millisecond steps do not matter there.
const preciseBelow = 5 * time.Millisecond

// preciseSleep blocks the calling thread for d, to within tens of
// microseconds.
func preciseSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var left syscall.Timespec
		err := syscall.Nanosleep(&ts, &left)
		if !errors.Is(err, syscall.EINTR) {
			return
		}
		ts = left
	}
}
