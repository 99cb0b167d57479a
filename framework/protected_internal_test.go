package framework

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
)

func TestProtectedPathIsJoinOfProtectedName(t *testing.T) {
	id := newProtectedID()
	for _, p := range []string{"/lock-", "/a/lock-", "/a/b/c", "/a/b/"} {
		assert.Equal(t, Join(Parent(p), protectedName(id, Base(p))), protectedPath(p, id), p)
	}
}

func TestNewProtectedIDIsARandomUUIDInCanonicalForm(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := newProtectedID()
		u, err := uuid.Parse(id)
		assert.NoError(t, err)
		assert.Equal(t, u.String(), id)
		assert.Equal(t, uuid.Version(4), u.Version())
		assert.Equal(t, uuid.RFC4122, u.Variant())
		assert.True(t, isDashedUUID(id))
		assert.False(t, seen[id])
		seen[id] = true
	}
}

func TestIsDashedUUIDAcceptsOnlyWhatStringWrites(t *testing.T) {
	good := "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	assert.True(t, isDashedUUID(good))
	for _, bad := range []string{"", good[1:], good + "0", "0A1B2C3D-4E5F-4A6B-8C7D-9E0F1A2B3C4D",
		"0a1b2c3d04e5f-4a6b-8c7d-9e0f1a2b3c4d", "urn:uuid:" + good, "{" + good[1:] + "}", "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4g"} {
		assert.False(t, isDashedUUID(bad), bad)
	}
}

func TestNewProtectedIDCostsOneAllocation(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	assert.LessOrEqual(t, testing.AllocsPerRun(100, func() { _ = newProtectedID() }), 1.0)
}
