package option

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/internal/participant"
)

type recipeOption func(*Config) error

func TestBuildAppliesOptionsAndDefaultsTheParticipantID(t *testing.T) {
	c, err := Build("r", []Name{ParticipantID, Revocable}, []recipeOption{nil, recipeOption(WithRevocable())})
	require.NoError(t, err)
	assert.True(t, c.Revocable)
	assert.Equal(t, participant.Default(), string(c.ID))

	c, err = Build("r", []Name{ParticipantID}, []recipeOption{recipeOption(WithParticipantID("me"))})
	require.NoError(t, err)
	assert.Equal(t, "me", string(c.ID))
}

func TestBuildRefusesBadValuesAndOptionsThatDoNotApply(t *testing.T) {
	for name, opts := range map[string][]recipeOption{
		"empty id":        {recipeOption(WithParticipantID(""))},
		"nil handler":     {recipeOption(WithErrorHandler(nil))},
		"does not apply":  {recipeOption(WithAutoRequeue())},
		"revocable, here": {recipeOption(WithParticipantID("x")), recipeOption(WithRevocable())},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Build("r", []Name{ParticipantID, ErrorHandler}, opts)
			assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
			assert.Contains(t, err.Error(), "r: ")
		})
	}
}
