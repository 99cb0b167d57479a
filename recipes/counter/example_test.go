package counter_test

import (
	"bytes"
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
		counter.WithOptimisticRetry(retry.NTimes(10, 10*time.Millisecond)),
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

// A count of workers that Java services read with Curator's
// DistributedAtomicInteger, incremented as each worker starts.
func ExampleNewInteger() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	workers, err := counter.NewInteger(client, "/example/counters/workers")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer workers.Close()

	if _, err := workers.Initialize(ctx, 10); err != nil { // only if no one has yet
		fmt.Println(err)
		return
	}
	r, err := workers.Increment(ctx)
	if err != nil || !r.Succeeded {
		fmt.Println("not counted:", err)
		return
	}
	fmt.Println("worker", r.PostValue)
	// Output: worker 11
}

// A configuration blob changed by read-modify-write: Get, then
// CompareAndSet from what was read, again if someone else wrote first.
func ExampleNewBytes() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	hosts, err := counter.NewBytes(client, "/example/config/hosts") // Curator's DistributedAtomicValue
	if err != nil {
		fmt.Println(err)
		return
	}
	defer hosts.Close()

	for {
		cur, err := hosts.Get(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		next := append(bytes.Clone(cur.PostValue), "db1;"...)
		r, err := hosts.CompareAndSet(ctx, cur.PostValue, next)
		if err != nil {
			fmt.Println(err) // zkrecipes.ErrOutcomeUnknown: read before trying again
			return
		}
		if r.Succeeded {
			fmt.Printf("%q -> %q\n", r.PreValue, r.PostValue)
			return
		}
	}
	// Output: "" -> "db1;"
}
