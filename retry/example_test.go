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

	err := retry.Do(context.Background(), retry.NTimes(3, 10*time.Millisecond), create,
		retry.WithNotify(func(err error, attempt int, next time.Duration) {
			fmt.Printf("attempt %d: %v; retrying in %v\n", attempt, err, next)
		}),
	)
	fmt.Println("error:", err)
	// Output:
	// attempt 1: zk: connection closed; retrying in 10ms
	// attempt 2: zk: connection closed; retrying in 10ms
	// created /app/config
	// error: <nil>
}
