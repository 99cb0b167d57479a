package counter_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/counter"
	"github.com/zkrecipes/zkrecipes/retry"
)

// A value over the server's limit fails Swap and Set at once with ErrTooLarge:
// nothing was sent, so the outcome is known (before: zkrecipes.ErrOutcomeUnknown,
// for a write the server cannot have applied, after it had closed the
// link and with it every hold on the client).
func TestBytesSwapOverTheSizeLimitFailsAtOnce(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	h := holdMutex(t, c, "/size/lock")
	v, err := counter.NewBytes(c, "/size/value")
	require.NoError(t, err)
	t.Cleanup(func() { _ = v.Close() })
	_, err = v.Initialize(ctxT(t, 10*time.Second), []byte("small"))
	require.NoError(t, err)
	big := bytes.Repeat([]byte{'v'}, 1200*1024)
	link := testkit.WatchLink(t, c)

	start := time.Now()
	res, err := v.Swap(ctxT(t, 10*time.Second), big)
	require.ErrorIs(t, err, zkrecipes.ErrTooLarge)
	assert.NotErrorIs(t, err, zkrecipes.ErrOutcomeUnknown)
	assert.False(t, res.Succeeded)
	err = v.Set(ctxT(t, 10*time.Second), big)
	require.ErrorIs(t, err, zkrecipes.ErrTooLarge)
	assert.Less(t, time.Since(start), 2*time.Second, "refused at once")

	link.RequireUnbroken(t)
	require.NoError(t, h.Err(), "the hold on the same client stands")
	got, ok := raw(t, c, "/size/value")
	require.True(t, ok)
	assert.Equal(t, "small", string(got), "nothing was written")
}

// With a promoted lock the participant id is the data of the lock's node:
// one too large for the server is refused when the counter is made.
func TestNewBytesRefusesAParticipantIDOverTheSizeLimit(t *testing.T) {
	c := newClient(t, zktest.Standalone(t).Addrs())
	_, err := counter.NewBytes(c, "/size/value",
		counter.WithPromotedToLock("/size/lock", time.Second, retry.Default()),
		counter.WithParticipantID(strings.Repeat("i", framework.DefaultMaxRequestSize)))
	require.ErrorIs(t, err, zkrecipes.ErrTooLarge)
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
}
