package discovery_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// Close refuses a Register from its start on, then ends the registrations
// side by side while their forwarders still run: before Close returns, a
// subscriber has been told each registration's last status (not in place,
// closed), then its end; and nothing is left running.
func TestCloseRefusesRegistersThenTellsEachRegistrationsLastStatus(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs(), framework.WithReleaseTimeout(4*time.Second))
	leaks := testkit.LeakBase()
	d, err := discovery.New(c, "/closing")
	require.NoError(t, err)
	var ids []string
	for range 3 {
		inst := discovery.NewInstance("s")
		require.NoError(t, d.Register(ctxT(t, 30*time.Second), inst))
		ids = append(ids, inst.ID)
	}
	sub := d.Subscribe()
	defer sub.Close()

	// The link down, each delete waits: Close is under way long enough
	// for a Register to meet it.
	p.Blackhole()
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		return errors.Is(d.Register(ctx, discovery.NewInstance("late")), zkrecipes.ErrClosed)
	}, 10*time.Second, time.Millisecond, "a Register during Close is refused")
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) before a Register was refused", err)
	default:
	}
	p.Heal()
	require.NoError(t, <-closed)

	// Everything was published before Close returned: the channel holds it
	// all, then closes.
	lastStatus, ended := map[string]int{}, map[string]int{}
	n := 0
	for r := range sub.Changes() {
		n++
		st, ok := r.Statuses[r.Changed]
		switch {
		case ok && !st.InPlace && errors.Is(st.Err, zkrecipes.ErrClosed):
			lastStatus[r.Changed] = n
		case !ok && r.Changed != "":
			ended[r.Changed] = n
		}
	}
	for _, id := range ids {
		require.Contains(t, lastStatus, id, "the last status of %s was not told", id)
		require.Contains(t, ended, id, "the end of %s was not told", id)
		assert.Less(t, lastStatus[id], ended[id], "%s: its last status after its end", id)
	}
	require.NoError(t, c.Drain(ctxT(t, 30*time.Second)))
	goleak.VerifyNone(t, leaks...)
}
