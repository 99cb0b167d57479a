package chaos

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A register check of the semaphore that asked only "was the token
// granted to its writer?" would let this pass. A fenced write proves its lease node
// existed when it committed, and a lease's node exists from its grant
// (before its first write) to its last write; so writes in czxid order
// c1, c2, c3, c1, c2 prove three leases alive at once at c3's write, over a
// maximum of 2. Here c1 released at 50 and c3 was granted at 60: c1's
// second write (czxid 140) committed after c1 gave its lease up, exactly
// what Fenced exists to refuse, and the checker must report it.
func TestRegisterSemaphoreOverCapacityIsCaught(t *testing.T) {
	var h hist
	h.holdOf("c1", 1, 0, 10, 50, 52, token(100))
	h.holdOf("c2", 1, 0, 12, 200, 202, token(200))
	h.holdOf("c3", 1, 55, 60, 210, 212, token(300))
	r := Check(Semaphore, 2, st, h)
	assert.Empty(t, r.Violations, "the history itself is clean")
	r.CheckRegister(Semaphore, h, []RegisterEntry{
		entry(110, 100, "c1", 1, ""), entry(120, 200, "c2", 1, ""), entry(130, 300, "c3", 1, ""),
		entry(140, 100, "c1", 1, ""), entry(150, 200, "c2", 1, ""),
	})
	assert.NotEmpty(t, r.Violations, "three leases provably alive at czxid 130 with a maximum of 2; a stale lease write committed")
}
