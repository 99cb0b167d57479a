//go:build race

package testkit

// RaceEnabled: the tests run under the race detector.
const RaceEnabled = true
