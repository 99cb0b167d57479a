package semaphore_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

// The participant id is the data of the lease and lock nodes: one too
// large for the server is refused when the semaphore is made, not at each
// Acquire.
func TestNewRefusesAParticipantIDOverTheSizeLimit(t *testing.T) {
	c := newClient(t, zktest.Standalone(t).Addrs())
	big := semaphore.WithParticipantID(strings.Repeat("i", framework.DefaultMaxRequestSize))
	_, err := semaphore.New(c, "/sem/big-id", 2, big)
	require.ErrorIs(t, err, zkrecipes.ErrTooLarge)
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "participant id")
	_, err = semaphore.NewShared(c, "/sem/big-id", "/sem/count", big)
	require.ErrorIs(t, err, zkrecipes.ErrTooLarge)
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
}
