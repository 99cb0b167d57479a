package group_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/group"
)

// Each process of a group joins with its id and payload, and sees every
// member: a Curator GroupMember on the same path is one of them.
func ExampleMember() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	m, err := group.New(client, "/example/group", "worker-1", []byte("10.0.0.7:8080"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close() // leaves the group
	if err := m.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	members, err := m.Members()
	if err != nil {
		fmt.Println(err) // the view may be stale: it is returned all the same
	}
	for id, payload := range members {
		fmt.Println(id, string(payload))
	}
	// Output: worker-1 10.0.0.7:8080
}
