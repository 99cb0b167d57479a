package framework_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
)

// Dial starts the session every recipe is made on. The servers come from
// the service's configuration (here the ZK_SERVERS variable); the options
// set what every recipe on the client shares: a namespace, a session
// timeout, credentials, ACLs, retries.
func ExampleDial() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	servers := strings.Split(os.Getenv("ZK_SERVERS"), ",") // "zk1:2181,zk2:2181,zk3:2181"

	client, err := framework.Dial(ctx, servers,
		framework.WithNamespace("billing"),           // every path under /billing
		framework.WithSessionTimeout(10*time.Second), // asked of the server, which may grant another
	)
	if err != nil {
		fmt.Println(err) // after 15 s without a session, the last attempt's error
		return
	}
	defer client.Close() // ends the session: its ephemeral nodes go with it

	s := client.Session() // its ID, the timeout granted, and the channels that close on trouble
	fmt.Println(client.State(), "session:", s.ID != 0, "namespace:", client.Namespace())
	// Output: Connected session: true namespace: /billing
}

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
