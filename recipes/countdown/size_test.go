package countdown_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/countdown"
)

// The participant id is the data of the nodes the latch's writes make:
// one too large for the server is refused when the handle is made, not at
// each TrySetCount or CountDown.
func TestNewRefusesAParticipantIDOverTheSizeLimit(t *testing.T) {
	c := newClient(t, zktest.Standalone(t).Addrs())
	big := countdown.WithParticipantID(strings.Repeat("i", framework.DefaultMaxRequestSize))
	_, err := countdown.New(c, "/latch/big-id", 3, big)
	require.ErrorIs(t, err, zkrecipes.ErrTooLarge)
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "participant id")
}
