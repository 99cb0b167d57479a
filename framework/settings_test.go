package framework_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
)

// fenceConfig, fenceOption and the With... functions below are the options
// of a recipe a user could write, in the shape of the module's own: the
// recipe's settings embed framework.Settings, and its options are an
// interface with an unexported method.
type fenceConfig struct {
	framework.Settings
	lease time.Duration
}

type fenceOption interface{ applyFence(*fenceConfig) }

type fenceOptionFunc func(*fenceConfig)

func (f fenceOptionFunc) applyFence(c *fenceConfig) { f(c) }

func withFenceParticipantID(id string) fenceOption {
	return fenceOptionFunc(func(c *fenceConfig) { c.SetParticipantID(id) })
}

func withFenceLease(d time.Duration) fenceOption {
	return fenceOptionFunc(func(c *fenceConfig) {
		if d <= 0 {
			c.Invalidf("lease time %v is not positive", d)
		}
		c.lease = d
	})
}

func configureFence(opts ...fenceOption) (fenceConfig, error) {
	return framework.Configure("fence", "/f", fenceConfig{lease: time.Minute}, opts, fenceOption.applyFence)
}

// A recipe's options go through Configure: its own defaults, the options
// in order, and the first bad value named with the recipe and its path.
func ExampleConfigure() {
	cfg, err := configureFence(withFenceLease(time.Second))
	fmt.Println(cfg.lease, cfg.ParticipantID() == framework.DefaultParticipantID(), err)

	_, err = configureFence(withFenceParticipantID(""), withFenceLease(-time.Second))
	fmt.Println(err)
	// Output:
	// 1s true <nil>
	// fence /f: invalid argument: empty participant id
}

func TestConfigureAppliesOptionsInOrderAndSkipsNil(t *testing.T) {
	cfg, err := configureFence(nil, withFenceParticipantID("a"), nil, withFenceParticipantID("b"))
	require.NoError(t, err)
	assert.Equal(t, "b", cfg.ParticipantID(), "the last id given wins")
	assert.Equal(t, time.Minute, cfg.lease, "the recipe's default stays")
	assert.NoError(t, cfg.Err())

	cfg, err = configureFence()
	require.NoError(t, err)
	assert.Equal(t, framework.DefaultParticipantID(), cfg.ParticipantID())
}

func TestConfigureKeepsTheFirstBadValue(t *testing.T) {
	cfg, err := configureFence(withFenceLease(0), withFenceParticipantID(""), withFenceParticipantID("a"))
	require.Error(t, err)
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	assert.EqualError(t, err, "fence /f: invalid argument: lease time 0s is not positive")
	var re *framework.RecipeError
	require.True(t, errors.As(err, &re))
	assert.Equal(t, "fence", re.Recipe)
	assert.Equal(t, "/f", re.Path)
	assert.Equal(t, re.Err, cfg.Err(), "the settings returned still hold it, without the name")
	assert.Equal(t, "a", cfg.ParticipantID(), "later options are still applied")
}

func TestSettingsInvalidfWrapsItsArguments(t *testing.T) {
	var s framework.Settings
	inner := errors.New("inner")
	s.Invalidf("promoted lock path: %w", inner)
	s.Invalidf("second")
	assert.ErrorIs(t, s.Err(), zkrecipes.ErrInvalidArgument)
	assert.ErrorIs(t, s.Err(), inner)
	assert.EqualError(t, s.Err(), "invalid argument: promoted lock path: inner")
}
