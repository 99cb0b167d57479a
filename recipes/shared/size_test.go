package shared_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

// A value over the server's limit (1.2 MiB: under go-zookeeper's own
// 1.5 MiB buffer, so it would be sent) fails Set and TrySet at once with
// ErrTooLarge, and nothing is sent: the link stays up, so every hold on
// the same client stands and the value stays fresh. (Sent, it made the
// server close the link; Set resent it on every reconnect until its
// context ended, each time losing every hold on the client, and TrySet
// said zkrecipes.ErrOutcomeUnknown for a write that could not have been applied.)
func TestValueOverTheSizeLimitFailsAtOnceAndKeepsTheLink(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	m, err := mutex.New(c, "/size/lock")
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	h, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	v := newValue(t, c, "/size/value", []byte("small"))
	prev, err := v.Get()
	require.NoError(t, err)
	big := bytes.Repeat([]byte{'v'}, 1200*1024)
	link := testkit.WatchLink(t, c)

	start := time.Now()
	_, err = v.Set(ctxT(t, 10*time.Second), big)
	require.ErrorIs(t, err, zkrecipes.ErrTooLarge)
	_, _, err = v.TrySet(ctxT(t, 10*time.Second), prev, big)
	require.ErrorIs(t, err, zkrecipes.ErrTooLarge)
	assert.NotErrorIs(t, err, zkrecipes.ErrOutcomeUnknown)
	assert.Less(t, time.Since(start), 2*time.Second, "refused at once")

	link.RequireUnbroken(t)
	require.NoError(t, h.Err(), "the hold on the same client stands")
	require.NoError(t, v.Err(), "the value is fresh")
	got, err := v.Get()
	require.NoError(t, err)
	assert.Equal(t, prev, got, "nothing was written")
	_, err = v.Set(ctxT(t, 10*time.Second), []byte("after"))
	require.NoError(t, err, "the value stays usable")
}

// The seed is the data of the node Start makes: one over the limit is
// refused when the value is made.
func TestNewValueRefusesASeedOverTheSizeLimit(t *testing.T) {
	c := newClient(t, zktest.Standalone(t).Addrs())
	_, err := shared.NewValue(c, "/size/seed", bytes.Repeat([]byte{'s'}, framework.DefaultMaxRequestSize))
	require.ErrorIs(t, err, zkrecipes.ErrTooLarge)
	assert.Contains(t, err.Error(), "/size/seed")
}
