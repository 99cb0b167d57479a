package reentrant

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/hold"
)

// Every error of the engine reaches callers with a sentinel the recipes
// document (mutex.ErrSessionLost is hold.ErrSessionLost, and so on). Before,
// a TryAcquire whose node went with its session returned
// contend.ErrSessionLost, which no recipe documents.
func TestEnterErrorsCarryTheRecipesSentinels(t *testing.T) {
	for name, tc := range map[string]struct {
		err    error
		closed bool
		want   []error
	}{
		"would block":   {fmt.Errorf("x: %w", contend.ErrWouldBlock), false, []error{ErrWouldBlock}},
		"session lost":  {fmt.Errorf("%w: node gone", contend.ErrSessionLost), false, []error{hold.ErrSessionLost, contend.ErrSessionLost}},
		"client closed": {fmt.Errorf("op: %w", framework.ErrClosed), false, []error{ErrClosed, framework.ErrClosed}},
		"closing":       {zk.ErrClosing, false, []error{ErrClosed}},
		"lock closed":   {context.Canceled, true, []error{ErrClosed, context.Canceled}},
		"deadline":      {context.DeadlineExceeded, false, []error{context.DeadlineExceeded}},
		"no auth":       {fmt.Errorf("create: %w", zk.ErrNoAuth), false, []error{zk.ErrNoAuth}},
	} {
		t.Run(name, func(t *testing.T) {
			got := enterError(tc.err, tc.closed)
			for _, w := range tc.want {
				assert.True(t, errors.Is(got, w), "%v is not %v", got, w)
			}
		})
	}
}
