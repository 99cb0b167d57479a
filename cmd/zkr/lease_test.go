package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --lease ends a hold by itself (the recipes' lease time): held without
// COMMAND, zkr exits 122 with a message when it runs out, and the lock is
// free again, for every lock kind.
func TestLeaseEndsAHoldWithoutCommand(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	for name, a := range map[string][]string{
		"lock":  {"lock", "--lease", "1", "/lease"},
		"wlock": {"wlock", "--lease", "1s", "/lease-rw"},
		"sem":   {"sem", "--max", "1", "--lease", "1", "/lease-sem"},
	} {
		t.Run(name, func(t *testing.T) {
			started := time.Now()
			p, _ := startFed(t, args(connect, a)...) // stdin stays open
			_, node := tokenAndNode(t, p.heldLine(t))
			r := p.wait(t, 30*time.Second)
			assert.Equal(t, exitLost, r.code, r.stderr)
			assert.Contains(t, r.stderr, "lease")
			assert.GreaterOrEqual(t, time.Since(started), time.Second, "ended before the lease")
			ok, _, err := c.Exists(t.Context(), node)
			require.NoError(t, err)
			assert.False(t, ok, "%s outlived the lease", node)
		})
	}
	r := zkr(t, args(connect, cmd("lock", "-n", "/lease", "--", "echo", "free"))...)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "free\n", r.stdout)
}

// A COMMAND still running when the lease is about to end is stopped as on
// a lost hold, early enough to be dead before the lease ends and the next
// holder starts: even one that ignores SIGTERM never overlaps the waiter.
// zkr exits 122.
func TestLeaseStopsCommandBeforeTheNextHolderStarts(t *testing.T) {
	_, connect := server(t)
	stamps := filepath.Join(t.TempDir(), "stamps")
	holder := start(t, args(connect, cmd("lock", "--lease", "2", "--grace", "500ms", "/lease-cmd"),
		sh(`trap '' TERM; echo ready; while :; do echo "holder $(date +%s%N)" >> `+stamps+`; sleep 0.01; done`))...)
	holder.expectLine(t, "ready")
	waiter := start(t, args(connect, cmd("lock", "/lease-cmd"), sh(`echo "waiter $(date +%s%N)" >> `+stamps))...)
	r := holder.wait(t, 30*time.Second)
	assert.Equal(t, exitLost, r.code, r.stderr)
	assert.Contains(t, r.stderr, "--lease 2s ends at")
	assert.Contains(t, r.stderr, "SIGKILL after 500ms")
	assert.Equal(t, 0, waiter.wait(t, 30*time.Second).code)
	assertHolderEndedFirst(t, stamps)
}
