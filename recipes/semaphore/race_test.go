//go:build race

package semaphore_test

// raceEnabled: the tests run under the race detector.
const raceEnabled = true
