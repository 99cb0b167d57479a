package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// A holder writes a config node through Fenced: the write commits only
// while the hold is held, so a holder that lost the lock (a GC pause, a
// cut link, an expired session) can never overwrite its successor's.
func ExampleMutex_fenced() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	m, err := mutex.New(client, "/locks/config-writer")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	h, err := m.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Release()

	_, err = h.Fenced(ctx, &zk.CreateRequest{Path: "/example-config", Data: []byte("primary=db-7")})
	switch {
	case errors.Is(err, zkrecipes.ErrHoldLost):
		fmt.Println("lost the lock: nothing written") // the hold ends too
	case errors.Is(err, zkrecipes.ErrOutcomeUnknown):
		fmt.Println("reply lost: read the node to know") // all or nothing was applied
	case err != nil:
		fmt.Println(err) // one of the ops failed (*framework.MultiOpError): nothing applied
	}
	data, _, err := client.Get(ctx, "/example-config")
	fmt.Println(string(data), err)
	// Output: primary=db-7 <nil>
}
