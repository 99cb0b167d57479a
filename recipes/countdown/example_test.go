package countdown_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/countdown"
)

// A coordinator sets a latch for three workers and waits until each has
// counted down once; the workers may be other processes, and the latch
// outlives any of them.
func ExampleCountdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	latch, err := countdown.New(client, "/jobs/42/done", 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer latch.Close()
	set, err := latch.TrySetCount(ctx) // false: another coordinator set it first
	fmt.Println("set:", set, err)

	for range 3 { // each worker, when its part is done
		worker, _ := countdown.New(client, "/jobs/42/done", 0)
		counted, err := worker.CountDown(ctx) // exactly once, even if a reply is lost
		fmt.Println("counted:", counted, err)
		worker.Close()
	}

	fmt.Println("open:", latch.Wait(ctx))
	n, err := latch.Count(ctx)
	fmt.Println("count:", n, err)
	// Output:
	// set: true <nil>
	// counted: true <nil>
	// counted: true <nil>
	// counted: true <nil>
	// open: <nil>
	// count: 0 <nil>
}
