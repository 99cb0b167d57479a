package shared_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

// Processes that share a count add to it with a compare-and-set loop: an
// increment made by another between the read and the write makes TrySet
// fail with the fresh count, and the loop tries again from there, so no
// increment is ever lost. A Curator SharedCount on the same path sees the
// same count.
func ExampleCount_TrySet() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	count, err := shared.NewCount(client, "/example/visitors", 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer count.Close()
	if err := count.Start(ctx); err != nil { // makes the node with the seed if missing
		fmt.Println(err)
		return
	}

	cur, err := count.Get()
	for err == nil {
		var ok bool
		if cur, ok, err = count.TrySet(ctx, cur, cur.Value+1); ok {
			break
		}
	}
	if err != nil {
		fmt.Println(err) // errors.Is(err, zkrecipes.ErrOutcomeUnknown): it may have been applied
		return
	}
	fmt.Println("visitors:", cur.Value, "version:", cur.Version)
	// Output: visitors: 1 version: 1
}

// A process follows a shared value: every change arrives on the
// subscription, newest last, and Err says when the value may be stale (a
// cut link, an expired session, a deleted node).
func ExampleValue_Subscribe() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	config, err := shared.NewValue(client, "/example/config", []byte("mode=a"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer config.Close()
	if err := config.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	sub := config.Subscribe()
	defer sub.Close()
	fmt.Printf("%s\n", (<-sub.Changes()).Value) // the value held

	if _, err := config.Set(ctx, []byte("mode=b")); err != nil { // anyone's Set arrives the same way
		fmt.Println(err)
		return
	}
	fmt.Printf("%s stale=%v\n", (<-sub.Changes()).Value, config.Err() != nil)
	// Output:
	// mode=a
	// mode=b stale=false
}
