package retry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failing returns an op that fails with errs in turn and then succeeds,
// along with a pointer to its call count.
func failing(errs ...error) (func(context.Context) error, *int) {
	calls := 0
	return func(context.Context) error {
		calls++
		if calls <= len(errs) {
			return errs[calls-1]
		}
		return nil
	}, &calls
}

func always(err error) (func(context.Context) error, *int) {
	calls := 0
	return func(context.Context) error {
		calls++
		return err
	}, &calls
}

// await returns the result of Do started on another goroutine. The timeout is
// only a guard against a hung test; a passing run never waits on it.
func await(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Do did not return")
		return nil
	}
}

func TestDoSucceedsFirstTry(t *testing.T) {
	clk := newFakeClock()
	op, calls := failing()
	require.NoError(t, Do(context.Background(), NTimes(3, time.Second), op, withClock(clk)))
	assert.Equal(t, 1, *calls)
	assert.Empty(t, clk.Sleeps())
}

func TestDoSucceedsAfterRetryableFailures(t *testing.T) {
	clk := newAutoClock()
	start := clk.Now()
	op, calls := failing(zk.ErrConnectionClosed, zk.ErrSessionMoved, zk.ErrNoServer)
	require.NoError(t, Do(context.Background(), NTimes(5, time.Second), op, withClock(clk)))
	assert.Equal(t, 4, *calls)
	assert.Equal(t, []time.Duration{time.Second, time.Second, time.Second}, clk.Sleeps())
	assert.Equal(t, 3*time.Second, clk.Now().Sub(start))
}

func TestDoReturnsNonRetryableErrorAsIs(t *testing.T) {
	wrapped := fmt.Errorf("create /a: %w", zk.ErrNodeExists)
	for _, want := range []error{errors.New("boom"), zk.ErrSessionExpired, wrapped} {
		clk := newFakeClock()
		op, calls := failing(want)
		err := Do(context.Background(), Forever(time.Second), op, withClock(clk))
		assert.Same(t, want, err)
		assert.Equal(t, 1, *calls)
		assert.Empty(t, clk.Sleeps())
	}
}

func TestDoExhaustedWrapsLastError(t *testing.T) {
	clk := newAutoClock()
	last := fmt.Errorf("get /a: %w", zk.ErrConnectionClosed)
	op, calls := failing(zk.ErrNoServer, zk.ErrNoServer, last)
	err := Do(context.Background(), NTimes(2, time.Second), op, withClock(clk))

	require.Error(t, err)
	assert.Equal(t, 3, *calls)
	assert.ErrorIs(t, err, last)
	assert.ErrorIs(t, err, zk.ErrConnectionClosed)
	assert.NotErrorIs(t, err, zk.ErrNoServer, "only the last error is kept")
	assert.Contains(t, err.Error(), "3 attempts")
	assert.Contains(t, err.Error(), last.Error())

	var ex *ExhaustedError
	require.ErrorAs(t, err, &ex)
	assert.Equal(t, 3, ex.Attempts)
	assert.Same(t, last, ex.Err)
	assert.False(t, Retryable(err), "an outer loop must not retry an exhausted one")
}

func TestDoNeverMakesOneAttempt(t *testing.T) {
	op, calls := always(zk.ErrConnectionClosed)
	err := Do(context.Background(), Never(), op, withClock(newFakeClock()))
	assert.ErrorIs(t, err, zk.ErrConnectionClosed)
	assert.Contains(t, err.Error(), "after 1 attempt:")
	assert.Equal(t, 1, *calls)
}

func TestDoZeroPolicyMeansDefault(t *testing.T) {
	clk := newAutoClock()
	op, calls := always(zk.ErrConnectionClosed)
	err := Do(context.Background(), Policy{}, op, withClock(clk))
	assert.ErrorIs(t, err, zk.ErrConnectionClosed)
	assert.Equal(t, 11, *calls)
	assert.Len(t, clk.Sleeps(), 10)
}

func TestDoContextDoneBeforeFirstAttempt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	op, calls := failing()
	err := Do(ctx, Forever(time.Second), op, withClock(newFakeClock()))
	assert.Equal(t, context.Canceled, err)
	assert.Zero(t, *calls)
}

func TestDoContextCancelledDuringSleep(t *testing.T) {
	clk := newFakeClock()
	clk.created = make(chan *fakeTimer, 1)
	start := clk.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	op, calls := always(zk.ErrConnectionClosed)

	done := make(chan error, 1)
	go func() { done <- Do(ctx, Forever(time.Hour), op, withClock(clk)) }()

	timer := <-clk.created // Do is now asleep, or about to be.
	cancel()
	err := await(t, done)

	assert.Equal(t, start, clk.Now(), "Do returned without the clock moving")
	assert.True(t, timer.Stopped(), "the pending timer was stopped")
	assert.Equal(t, 1, *calls)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, zk.ErrConnectionClosed)
	assert.False(t, Retryable(err))
	var ie *InterruptedError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, 1, ie.Attempts)
	assert.Equal(t, "retry: context canceled after 1 attempt: zk: connection closed", err.Error())
}

func TestDoContextCauseIsKept(t *testing.T) {
	clk := newFakeClock()
	clk.created = make(chan *fakeTimer, 1)
	ctx, cancel := context.WithCancelCause(context.Background())
	op, _ := always(zk.ErrNoServer)
	cause := errors.New("shutting down")

	done := make(chan error, 1)
	go func() { done <- Do(ctx, Forever(time.Minute), op, withClock(clk)) }()
	<-clk.created
	cancel(cause)
	err := await(t, done)

	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, cause)
	assert.ErrorIs(t, err, zk.ErrNoServer)
	assert.Contains(t, err.Error(), "shutting down")
}

func TestDoContextCancelledByOperation(t *testing.T) {
	clk := newFakeClock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	op := func(context.Context) error {
		calls++
		cancel()
		return zk.ErrConnectionClosed
	}
	err := Do(ctx, Forever(time.Second), op, withClock(clk))
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, zk.ErrConnectionClosed)
	assert.Equal(t, 1, calls)
	assert.Empty(t, clk.Sleeps(), "no timer once the context is done")
}

func TestDoRealClockCancelledDuringSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sleeping := make(chan struct{}, 1)
	op, _ := always(zk.ErrConnectionClosed)
	done := make(chan error, 1)
	go func() {
		done <- Do(ctx, Forever(time.Hour), op, WithNotify(func(error, int, time.Duration) {
			sleeping <- struct{}{}
		}))
	}()
	<-sleeping
	cancel()
	assert.ErrorIs(t, await(t, done), context.Canceled)
}

func TestDoZeroSleepNeedsNoTimer(t *testing.T) {
	clk := newFakeClock()
	op, calls := failing(zk.ErrConnectionClosed, zk.ErrConnectionClosed)
	require.NoError(t, Do(context.Background(), NTimes(2, 0), op, withClock(clk)))
	assert.Equal(t, 3, *calls)
	assert.Empty(t, clk.Sleeps())
}

func TestDoNegativeSleepFromBackOffMeansNow(t *testing.T) {
	clk := newFakeClock()
	odd := policy(func(backoff.Clock) backoff.BackOff {
		return backoff.WithMaxRetries(backoff.NewConstantBackOff(-5*time.Second), 1)
	})
	var slept []time.Duration
	op, calls := failing(zk.ErrConnectionClosed)
	require.NoError(t, Do(context.Background(), odd, op, withClock(clk),
		WithNotify(func(_ error, _ int, next time.Duration) { slept = append(slept, next) })))
	assert.Equal(t, 2, *calls)
	assert.Equal(t, []time.Duration{0}, slept)
}

func TestDoUntilElapsedCountsOperationTime(t *testing.T) {
	clk := newAutoClock()
	calls := 0
	op := func(context.Context) error {
		calls++
		clk.Advance(time.Second)
		return zk.ErrConnectionClosed
	}
	err := Do(context.Background(), UntilElapsed(10*time.Second, 3*time.Second), op, withClock(clk))
	// Attempts end at 1s, 5s and 9s; after the third, 9s+3s exceeds the budget.
	var ex *ExhaustedError
	require.ErrorAs(t, err, &ex)
	assert.Equal(t, 3, ex.Attempts)
	assert.Equal(t, 3, calls)
}

func TestDoNotify(t *testing.T) {
	type call struct {
		err     error
		attempt int
		next    time.Duration
	}
	var got []call
	op, _ := failing(zk.ErrNoServer, zk.ErrSessionMoved, zk.ErrConnectionClosed)
	err := Do(context.Background(), NTimes(2, time.Second), op, withClock(newAutoClock()),
		WithNotify(func(err error, attempt int, next time.Duration) {
			got = append(got, call{err, attempt, next})
		}))
	require.ErrorIs(t, err, zk.ErrConnectionClosed)
	assert.Equal(t, []call{
		{zk.ErrNoServer, 1, time.Second},
		{zk.ErrSessionMoved, 2, time.Second},
	}, got, "called before each sleep, not when giving up")
}

func TestDoWithRetryable(t *testing.T) {
	flaky := errors.New("flaky")
	op, calls := failing(flaky, flaky, zk.ErrConnectionClosed)
	onlyFlaky := func(err error) bool { return errors.Is(err, flaky) }
	err := Do(context.Background(), NTimes(5, time.Second), op, withClock(newAutoClock()), WithRetryable(onlyFlaky))
	assert.Same(t, zk.ErrConnectionClosed, err)
	assert.Equal(t, 3, *calls)
}

func TestDoIgnoresNilOptions(t *testing.T) {
	op, calls := failing(zk.ErrConnectionClosed)
	require.NoError(t, Do(context.Background(), NTimes(1, 0), op, nil, withClock(nil), WithRetryable(nil)))
	assert.Equal(t, 2, *calls)
}

func TestNestedDoDoesNotMultiplyAttempts(t *testing.T) {
	clk := newAutoClock()
	op, calls := always(zk.ErrConnectionClosed)
	inner := func(ctx context.Context) error {
		return Do(ctx, NTimes(1, time.Second), op, withClock(clk))
	}
	err := Do(context.Background(), NTimes(3, time.Second), inner, withClock(clk))
	var ex *ExhaustedError
	require.ErrorAs(t, err, &ex)
	assert.Equal(t, 2, ex.Attempts, "the inner loop's verdict stands")
	assert.Equal(t, 2, *calls)
}

// go-zookeeper hands a request the socket's own error when it cannot write
// it (found by review: a release's delete failing this way was dropped).
func TestRetryableCoversARequestTheSocketCouldNotWrite(t *testing.T) {
	for _, err := range []error{
		&net.OpError{Op: "write", Net: "tcp", Err: &os.SyscallError{Syscall: "write", Err: syscall.EPIPE}},
		&net.OpError{Op: "write", Net: "tcp", Err: &os.SyscallError{Syscall: "write", Err: syscall.ECONNRESET}},
		&net.OpError{Op: "write", Net: "tcp", Err: net.ErrClosed},
		fmt.Errorf("create /x: %w", &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}),
	} {
		assert.True(t, Retryable(err), "%v", err)
	}
	assert.False(t, Retryable(&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("refused")}))
}

// A call that succeeds at once, the framework's every request, costs no
// allocation of Do's own: no schedule, no configuration on the heap.
func TestDoAllocatesNothingWhenOpSucceedsAtOnce(t *testing.T) {
	ctx := context.Background()
	op := func(context.Context) error { return nil }
	for _, p := range []Policy{{}, Default(), Forever(time.Second)} {
		assert.Zero(t, testing.AllocsPerRun(100, func() { _ = Do(ctx, p, op) }))
		assert.Zero(t, testing.AllocsPerRun(100, func() { _ = Do(ctx, p, op, nil) }), "a nil option")
	}
}
