package conn_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/integration/zktest"
	"github.com/zkrecipes/zkrecipes/internal/testkit"
)

// A nil context is bad input: Dial refuses it before it connects, and
// WaitConnected before it waits; the connection stays usable.
func TestEveryCallRefusesANilContext(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := dial(t, cl.Addrs())
	var nilCtx context.Context
	testkit.RefusesNilContext(t, map[string]func() error{
		"Dial": func() error {
			c, err := conn.Dial(nilCtx, p.Addrs())
			if c != nil {
				c.Close()
			}
			return err
		},
		"WaitConnected": func() error { _, err := c.WaitConnected(nilCtx); return err },
	})
	assert.Zero(t, p.Links(), "Dial connected")

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := c.WaitConnected(ctx)
	require.NoError(t, err)
	assert.Equal(t, c.Session().ID, s.ID)
}
