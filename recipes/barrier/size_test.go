package barrier_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/barrier"
)

// The participant id is the data of the barrier's and the members' nodes:
// one too large for the server is refused when the barrier is made, not
// at Set or Enter.
func TestNewRefusesAParticipantIDOverTheSizeLimit(t *testing.T) {
	c := newClient(t, zktest.Standalone(t).Addrs())
	big := barrier.WithParticipantID(strings.Repeat("i", framework.DefaultMaxRequestSize))
	_, err := barrier.New(c, "/barrier/big-id", big)
	require.ErrorIs(t, err, zkrecipes.ErrTooLarge)
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "participant id")
	_, err = barrier.NewDouble(c, "/barrier/big-id", 2, big)
	require.ErrorIs(t, err, zkrecipes.ErrTooLarge)
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
}
