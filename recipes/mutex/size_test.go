package mutex_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// A fenced write is one multi with the check of the hold's node: the
// whole multi counts against the server's limit. Exactly the limit is
// applied; one byte more is refused before anything is sent, and the hold
// and the link stand.
func TestFencedWriteOverTheSizeLimitIsRefusedBeforeSending(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	mustCreateNode(t, c, "/cfg", "v0")
	h, err := newMutex(t, c, "/locks/size").Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)

	// The request header; then each op's header (type, done, err) and
	// body; then the end marker: the check (path, version) and the set
	// (path, data's length, version).
	overhead := 8 + (9 + 4 + len(h.Path()) + 4) + (9 + 4 + len("/cfg") + 4 + 4) + 9
	n := framework.DefaultMaxRequestSize - overhead
	set := func(n int) error {
		_, err := h.Fenced(ctxT(t, 5*time.Second), &zk.SetDataRequest{Path: "/cfg", Data: bytes.Repeat([]byte{'x'}, n), Version: -1})
		return err
	}
	link := testkit.WatchLink(t, c)
	err = set(n + 1)
	require.ErrorIs(t, err, zkrecipes.ErrTooLarge)
	assert.NotErrorIs(t, err, zkrecipes.ErrOutcomeUnknown)
	link.RequireUnbroken(t)
	require.NoError(t, h.Err(), "the hold stands")

	require.NoError(t, set(n), "exactly the limit")
	_, st, err := c.Get(ctxT(t, 10*time.Second), "/cfg")
	require.NoError(t, err)
	assert.EqualValues(t, n, st.DataLength)
	link.RequireUnbroken(t)
	require.NoError(t, h.Err())
}

// The participant id is the data of the lock node: one too large for the
// server is refused when the mutex is made, not at each Acquire.
func TestNewRefusesAParticipantIDOverTheSizeLimit(t *testing.T) {
	c := newClient(t, zktest.Standalone(t).Addrs())
	big := mutex.WithParticipantID(strings.Repeat("i", framework.DefaultMaxRequestSize))
	_, err := mutex.New(c, "/locks/big-id", big)
	require.ErrorIs(t, err, zkrecipes.ErrTooLarge)
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "participant id")
	_, err = mutex.NewSemaphoreMutex(c, "/locks/big-id", big)
	require.ErrorIs(t, err, zkrecipes.ErrTooLarge)
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
}
