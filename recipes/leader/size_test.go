package leader_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/leader"
)

// The participant id is the data of the latch's or selector's node: one
// too large for the server is refused when the recipe is made, not each
// time it queues.
func TestNewRefusesAParticipantIDOverTheSizeLimit(t *testing.T) {
	c := newClient(t, zktest.Standalone(t).Addrs())
	big := leader.WithParticipantID(strings.Repeat("i", framework.DefaultMaxRequestSize))
	_, err := leader.NewLatch(c, "/elect/big-id", big)
	require.ErrorIs(t, err, zkrecipes.ErrTooLarge)
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "participant id")
	_, err = leader.NewSelector(c, "/elect/big-id", func(context.Context, *hold.Hold) error { return nil }, big)
	require.ErrorIs(t, err, zkrecipes.ErrTooLarge)
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
}
