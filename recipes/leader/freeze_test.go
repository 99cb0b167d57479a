package leader_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/leader"
)

// awaitOnThaw is the helper's part after it leads: it waits for a line on
// stdin (written while it is frozen, so read first thing on thaw), then
// asks Await and Held for its term and says what they gave.
func awaitOnThaw(l *leader.Latch) {
	testkit.ReadLine()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, held := l.Held()
	h, err := l.Await(ctx)
	fmt.Printf("awaited term=%v held=%v err=%v\n", h != nil, held, err)
}

// A leader frozen for longer than its session timeout, whose session the
// server expires and whose lead another participant takes meanwhile, is
// not told it leads when it is thawed: Held and Await, asked first thing
// on thaw, give no term, whatever the connection's reader has noticed.
func TestThawedLeaderIsNotToldItLeadsAfterItsSessionExpired(t *testing.T) {
	const sessionTimeout = 2 * time.Second
	cl := zktest.Standalone(t)
	p := testkit.StartProc(t, helperEnv, testkit.ChildSpec(strings.Join(cl.Addrs(), ","), "/elect/thaw", "child", sessionTimeout, "thaw"))
	p.Expect(t, "leading", 30*time.Second)

	p.Freeze(t)
	other := newLatch(t, newClient(t, cl.Addrs()), "/elect/thaw", "other")
	require.NoError(t, other.Start(ctxT(t, 10*time.Second)))
	_, err := other.Await(ctxT(t, 30*time.Second))
	require.NoError(t, err, "the frozen leader's session did not expire")

	p.Say(t, "thawed")
	p.Thaw(t)
	got := p.Expect(t, "awaited ", 30*time.Second)
	assert.True(t, strings.HasPrefix(got, "awaited term=false held=false "), "on thaw: %s", got)
}
