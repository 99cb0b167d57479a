package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// zkr elect -w gives up waiting to lead as zkr lock -w does: 124 while
// someone else leads, COMMAND never run, its queue node gone. Before,
// elect had no -w (nor -n).
func TestElectTimeoutGivesUpWhileAnotherLeads(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	holdMutex(t, newMutex(t, c, "/elect-w", "leader"))
	started := time.Now()
	r := zkr(t, args(connect, cmd("elect", "-w", "1", "/elect-w"), sh("echo ran"))...)
	assert.Equal(t, exitTimeout, r.code, r.stderr)
	assert.Empty(t, r.stdout, "COMMAND ran without leading")
	assert.Contains(t, r.stderr, "timed out")
	assert.Less(t, time.Since(started), 20*time.Second)
	assert.Len(t, children(t, c, "/elect-w"), 1, "the campaign's node outlived it")
}

// -w bounds the wait to lead, not the term: a COMMAND that leads in time
// runs to its end, however long after -w.
func TestElectTimeoutDoesNotCutATermShort(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	r := zkr(t, args(connect, cmd("elect", "-w", "0.5", "/elect-w-term", "-c", "sleep 1.5; echo done"))...)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "done\n", r.stdout)
	assert.Empty(t, children(t, c, "/elect-w-term"))
}
