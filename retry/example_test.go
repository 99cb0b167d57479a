package retry_test

import (
	"context"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/retry"
)

func ExampleDo() {
	failures := 2
	create := func(ctx context.Context) error {
		// A real operation would call the ZooKeeper client here.
		if failures > 0 {
			failures--
			return zk.ErrConnectionClosed
		}
		fmt.Println("created /app/config")
		return nil
	}

	err := retry.Do(context.Background(), retry.NTimes(3, 250*time.Millisecond), create,
		retry.WithNotify(func(err error, attempt int, next time.Duration) {
			fmt.Printf("attempt %d: %v; retrying in %v\n", attempt, err, next)
		}),
		retry.WithClock(instantClock{}), // only so the example runs without waiting
	)
	fmt.Println("error:", err)
	// Output:
	// attempt 1: zk: connection closed; retrying in 250ms
	// attempt 2: zk: connection closed; retrying in 250ms
	// created /app/config
	// error: <nil>
}

// instantClock fires every timer at once.
type instantClock struct{}

func (instantClock) Now() time.Time { return time.Time{} }

func (instantClock) NewTimer(time.Duration) retry.Timer {
	t := firedTimer(make(chan time.Time, 1))
	t <- time.Time{}
	return t
}

type firedTimer chan time.Time

func (t firedTimer) C() <-chan time.Time { return t }
func (t firedTimer) Stop() bool          { return false }
