package persistent_test

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
	"github.com/zkrecipes/zkrecipes/recipes/persistent"
)

// thawEnv runs the test binary as a node's keeper that is frozen and thawed.
const thawEnv = "ZKRECIPES_PERSISTENT_THAW"

// runThawHelper keeps an ephemeral node in place, says "inplace <session>",
// and waits for a line on stdin (written while it is frozen, so read first
// thing on thaw); it then says whether Status calls the node in place.
func runThawHelper(spec string) {
	parts := strings.Split(spec, "|") // addrs|path|sessionTimeout
	c := testkit.ChildDial(parts[0], parts[2])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := persistent.New(c, parts[1], []byte("x"))
	if err == nil {
		err = n.Start(ctx)
	}
	testkit.ChildCheck(err)
	fmt.Printf("inplace %d\n", c.Session().ID)
	testkit.ReadLine()
	fmt.Printf("thawed inplace=%v\n", n.Status().InPlace)
	testkit.ReadLine() // until killed
}

// A keeper frozen for longer than its session timeout, whose node the
// server deleted with the session, does not call it in place when thawed,
// whatever its connection's reader has noticed.
func TestThawedNodeIsNotInPlaceAfterItsSessionExpired(t *testing.T) {
	const sessionTimeout = 2 * time.Second
	cl := zktest.Standalone(t)
	p := testkit.StartProc(t, thawEnv, testkit.ChildSpec(strings.Join(cl.Addrs(), ","), "/pn/thaw", sessionTimeout))
	var session int64
	_, err := fmt.Sscanf(p.Expect(t, "inplace ", 30*time.Second), "inplace %d", &session)
	require.NoError(t, err)

	p.Freeze(t)
	obs := newClient(t, cl.Addrs())
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		_, st := onServer(t, obs, "/pn/thaw")
		assert.Nil(ct, st, "the frozen keeper's node outlived its session")
	}, 30*time.Second, 50*time.Millisecond)
	require.False(t, cl.SessionAlive(session))

	p.Say(t, "thawed")
	p.Thaw(t)
	assert.Equal(t, "thawed inplace=false", p.Expect(t, "thawed ", 30*time.Second))
}
