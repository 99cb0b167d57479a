package counter_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/counter"
	"github.com/zkrecipes/zkrecipes/retry"
)

// A page-hit counter shared with Java services using Curator's
// DistributedAtomicLong on the same path.
func ExampleNewLong() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	hits, err := counter.NewLong(client, "/example/counters/hits",
		counter.WithRetryPolicy(retry.NTimes(10, 10*time.Millisecond)),
		counter.WithPromotedToLock("/example/counters/hits-lock", 5*time.Second, retry.NTimes(10, 10*time.Millisecond)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer hits.Close()

	r, err := hits.Add(ctx, 5)
	switch {
	case errors.Is(err, zkrecipes.ErrOutcomeUnknown):
		// The reply was lost: the 5 may or may not have been added (once).
		fmt.Println("unknown: read the counter before adding again")
	case err != nil:
		fmt.Println(err)
	case !r.Succeeded:
		fmt.Println("too much contention: not added")
	default:
		fmt.Printf("%d -> %d\n", r.PreValue, r.PostValue)
	}
	// Output: 0 -> 5
}
