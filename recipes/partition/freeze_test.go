package partition_test

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
	"github.com/zkrecipes/zkrecipes/recipes/partition"
)

// thawEnv runs the test binary as a member that is frozen and thawed.
const thawEnv = "ZKRECIPES_PARTITION_THAW"

// runThawHelper owns every item of a partition alone, says "owned <n>
// <session>", and waits for a line on stdin (written while it is frozen,
// so read first thing on thaw); it then says how many items Owned gives
// it.
func runThawHelper(spec string) {
	parts := strings.Split(spec, "|") // addrs|path|sessionTimeout|items
	c := testkit.ChildDial(parts[0], parts[2])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	items := strings.Split(parts[3], ",")
	p, err := partition.New(c, parts[1], "frozen", partition.List(items...))
	if err == nil {
		err = p.Start(ctx)
	}
	testkit.ChildCheck(err)
	for len(p.Owned()) < len(items) {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Printf("owned %d %d\n", len(items), c.Session().ID)
	testkit.ReadLine()
	fmt.Printf("thawed owned=%d\n", len(p.Owned()))
	testkit.ReadLine() // until killed
}

// A member frozen for longer than its session timeout, whose items another
// member takes once the server expired its session, owns none of them
// when it is thawed: Owned, asked first thing on thaw, gives nothing,
// whatever the connection's reader has noticed.
func TestThawedMemberOwnsNothingAfterItsSessionExpired(t *testing.T) {
	const sessionTimeout = 2 * time.Second
	cl := zktest.Standalone(t)
	items := itemNames(3)
	p := testkit.StartProc(t, thawEnv, testkit.ChildSpec(strings.Join(cl.Addrs(), ","), "/part/thaw", sessionTimeout, strings.Join(items, ",")))
	var n int
	var session int64
	_, err := fmt.Sscanf(p.Expect(t, "owned ", 30*time.Second), "owned %d %d", &n, &session)
	require.NoError(t, err)

	p.Freeze(t)
	other := start(t, newClient(t, cl.Addrs()), "/part/thaw", "other", partition.List(items...), nil)
	waitStable(t, items, other)
	require.False(t, cl.SessionAlive(session))

	p.Say(t, "thawed")
	p.Thaw(t)
	assert.Equal(t, "thawed owned=0", p.Expect(t, "thawed ", 30*time.Second))
}
