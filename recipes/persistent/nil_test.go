package persistent_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/recipes/persistent"
)

// Every method of a nil or zero TTLNode, those of its Node included,
// answers with zkrecipes.ErrInvalidArgument or a zero value: none panics.
func TestNilTTLNodeMethodsDoNotPanic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for name, n := range map[string]*persistent.TTLNode{"nil": nil, "zero": {}} {
		t.Run(name, func(t *testing.T) {
			assert.NotPanics(t, func() {
				assert.Empty(t, n.Path())
				assert.Empty(t, n.ActualPath())
				assert.Nil(t, n.Data())
				assert.ErrorIs(t, n.Start(ctx), zkrecipes.ErrInvalidArgument)
				assert.ErrorIs(t, n.Set(ctx, nil), zkrecipes.ErrInvalidArgument)
				assert.ErrorIs(t, n.Wait(ctx), zkrecipes.ErrInvalidArgument)
				assert.ErrorIs(t, n.Err(), zkrecipes.ErrInvalidArgument)
				assert.ErrorIs(t, n.Status().Err, zkrecipes.ErrInvalidArgument)
				sub := n.Subscribe()
				_, open := <-sub.Changes()
				assert.False(t, open)
				assert.ErrorIs(t, n.Close(), zkrecipes.ErrInvalidArgument)
			})
		})
	}
}
