//go:build race

package framework

// raceEnabled: under the race detector, whose instrumentation moves values
// to the heap, allocation counts mean nothing.
const raceEnabled = true
