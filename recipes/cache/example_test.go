package cache_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// A process keeps the children of a path in memory: Start reads them,
// Children answers without asking the server, and the subscription
// delivers a snapshot and then every change, with Stale and Current when
// the link drops and the view has been read again.
func ExampleCache() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	if _, err := client.Create(ctx, "/example/workers/w1", []byte("10.0.0.1"), framework.WithParents()); err != nil {
		fmt.Println(err)
		return
	}

	workers, err := cache.New(client, "/example/workers", cache.Children())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer workers.Close()
	if err := workers.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	sub := workers.Subscribe()
	defer sub.Close()
	snap := <-sub.Changes()
	fmt.Println(snap.Type, len(snap.Nodes), "node(s), stale:", snap.Err != nil)

	// Anyone's changes arrive the same way.
	if _, err := client.Create(ctx, "/example/workers/w2", []byte("10.0.0.2"), framework.WithParents()); err != nil {
		fmt.Println(err)
		return
	}
	for ev := range sub.Changes() {
		switch ev.Type {
		case cache.Created, cache.Changed, cache.Deleted:
			fmt.Println(ev.Type, ev.Node.Path, string(ev.Node.Data))
		case cache.Stale:
			fmt.Println("the view may be stale:", ev.Err)
		case cache.Overflow:
			fmt.Println("fell behind; the view is now", len(ev.Nodes), "node(s)")
		}
		if ev.Type == cache.Created {
			break
		}
	}
	kids, err := workers.Children("/example/workers") // from memory
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, k := range kids {
		fmt.Println(k.Path, "version", k.Stat.Version)
	}
	// Output:
	// snapshot 1 node(s), stale: false
	// created /example/workers/w2 10.0.0.2
	// /example/workers/w1 version 0
	// /example/workers/w2 version 0
}
