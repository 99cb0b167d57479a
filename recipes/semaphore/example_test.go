package semaphore_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

func ExampleSemaphore() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	// At most two exports run at once, across every process using the path
	// (Curator's InterProcessSemaphoreV2 included).
	sem, err := semaphore.New(client, "/semaphores/exports", 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sem.Close()

	leases, err := sem.Acquire(ctx, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	lease := leases[0]
	defer lease.Release()

	// Run the work under the lease's context: it is cancelled the moment the
	// lease can no longer be trusted.
	work := lease.Context(ctx)
	fmt.Println("leased, token > 0:", lease.Token() > 0, "trusted:", work.Err() == nil)

	_, err = sem.TryAcquire(ctx, 2)
	fmt.Println("two more at once:", err)
	// Output:
	// leased, token > 0: true trusted: true
	// two more at once: semaphore /semaphores/exports: not enough leases free: would block
}

func ExampleNewShared() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	// The maximum lives in a Curator SharedCount node that operators (or
	// Curator's SharedCount.setCount) can change while the semaphore is used.
	workers, err := shared.NewCount(client, "/counts/workers", 4) // made with 4 if missing
	if err != nil {
		fmt.Println(err)
		return
	}
	defer workers.Close()
	if err := workers.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	sem, err := semaphore.NewShared(client, "/semaphores/workers", "/counts/workers")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sem.Close()
	max, err := sem.MaxLeases(ctx)
	fmt.Println("max leases:", max, err)
	// Output: max leases: 4 <nil>
}
