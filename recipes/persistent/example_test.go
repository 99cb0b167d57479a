package persistent_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/persistent"
)

// A process announces itself with an ephemeral node that survives session
// loss: whenever the session expires, the node is made again, with the
// data of the last Set. Subscribe says when it is (not) in place.
func ExampleNode() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	node, err := persistent.New(client, "/example/workers/worker-", []byte("idle"),
		persistent.Protected(), persistent.Sequential())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer node.Close() // deletes the node
	if err := node.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	st := node.Status()
	fmt.Println("in place:", st.InPlace, framework.IsProtected(framework.Base(st.Path)))

	if err := node.Set(ctx, []byte("busy")); err != nil { // kept for every re-creation
		fmt.Println(err)
		return
	}
	data, _, err := client.Get(ctx, node.ActualPath())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(data))
	// Output:
	// in place: true true
	// busy
}
