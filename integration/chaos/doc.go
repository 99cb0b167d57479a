// Package chaos is a Jepsen-style fault suite for the recipes: contender
// processes loop on a recipe against a 3-node ensemble, each behind its own
// fault proxy, while a nemesis kills, freezes and cuts them off and restarts
// and kills servers; a fenced register records every write; and a checker
// reads the whole history afterwards (overlaps of trusted holds, capacity,
// linearizability with porcupine, loss-signal deadlines, fencing, progress,
// leftover nodes, leaked goroutines).
//
// TestChaos in this package runs it (make chaos); docs/chaos.md describes the
// checks and the numbers of real runs.
package chaos
