package partition_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
)

// Each scheduler process joins the partition with its id; the items are
// shared among the live members, each run by one member at a time under
// its hold, and moved when members come and go.
func ExamplePartitioner() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	started := make(chan string, 3)
	p, err := partition.New(client, "/example/scheduler", "worker-1",
		partition.List("billing", "emails", "reports"),
		partition.WithWorker(func(ctx context.Context, item string, h *hold.Hold) {
			started <- item
			// Run the item's work under ctx, handing h.Token() to what it
			// writes; return once ctx is done: the item moves (a member
			// joined), its hold was lost, or Close.
			<-ctx.Done()
		}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close() // stops the workers, then gives every item back
	if err := p.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	// Alone in the partition, this member gets every item.
	var items []string
	for range 3 {
		items = append(items, <-started)
	}
	fmt.Println(len(items), "items running")
	// Output: 3 items running
}
