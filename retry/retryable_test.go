package retry

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
)

// marked is how another package flags its own errors, without importing retry.
type marked struct {
	retry bool
	err   error
}

func (m marked) Error() string   { return fmt.Sprintf("marked(%v)", m.retry) }
func (m marked) Unwrap() error   { return m.err }
func (m marked) Retryable() bool { return m.retry }

func TestRetryable(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("get /a: %w", err) }
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"connection closed", zk.ErrConnectionClosed, true},
		{"session moved", zk.ErrSessionMoved, true},
		{"no server", zk.ErrNoServer, true},
		{"wrapped connection closed", wrap(zk.ErrConnectionClosed), true},
		{"doubly wrapped no server", wrap(wrap(zk.ErrNoServer)), true},
		{"session expired", zk.ErrSessionExpired, false},
		{"wrapped session expired", wrap(zk.ErrSessionExpired), false},
		{"no node", zk.ErrNoNode, false},
		{"node exists", zk.ErrNodeExists, false},
		{"canceled", context.Canceled, false},
		{"deadline exceeded", context.DeadlineExceeded, false},
		{"wrapped deadline exceeded", wrap(context.DeadlineExceeded), false},
		{"plain error", errors.New("boom"), false},
		{"canceled joined with connection closed", errors.Join(context.Canceled, zk.ErrConnectionClosed), false},
		{"expired joined with connection closed", errors.Join(zk.ErrConnectionClosed, zk.ErrSessionExpired), false},
		{"marked retryable", marked{retry: true}, true},
		{"marked not retryable", marked{retry: false}, false},
		{"wrapped marked retryable", wrap(marked{retry: true}), true},
		{"marked timeout wrapping deadline", marked{retry: true, err: context.DeadlineExceeded}, true},
		{"marker vetoes connection closed", marked{retry: false, err: zk.ErrConnectionClosed}, false},
		{"exhausted", &ExhaustedError{Attempts: 2, Err: zk.ErrConnectionClosed}, false},
		{"interrupted", &InterruptedError{Attempts: 1, CtxErr: context.Canceled, Err: zk.ErrConnectionClosed}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Retryable(tt.err))
		})
	}
}
