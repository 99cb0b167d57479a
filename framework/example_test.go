package framework_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
)

// A protected, ephemeral-sequential create: the building block of every lock.
// If the reply to the create is lost, the client finds its node by the
// protected prefix instead of leaving a second one behind.
func ExampleClient_Create() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	servers := strings.Split(os.Getenv("ZK_SERVERS"), ",") // "zk1:2181,zk2:2181,zk3:2181"

	client, err := framework.Dial(ctx, servers, framework.WithNamespace("example"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	path, err := client.Create(ctx, "/locks/job/lock-", []byte("worker-1"),
		framework.WithMode(framework.EphemeralSequential),
		framework.WithParentContainers(),
		framework.Protected())
	if err != nil {
		fmt.Println(err)
		return
	}
	name := framework.Base(path)
	fmt.Println(framework.IsProtected(name), framework.StripProtected(name))
	// Output: true lock-0000000000
}
