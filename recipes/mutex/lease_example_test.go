package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// A hold with a lease time ends by itself if its holder forgets it: here
// the holder extends it once, then stops, and the lease runs out.
func ExampleWithLeaseTime() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	m, err := mutex.New(client, "/locks/nightly-report", mutex.WithLeaseTime(200*time.Millisecond))
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
	fmt.Println("extend:", h.Extend(300*time.Millisecond)) // still working: keep it a while longer

	<-h.Done() // the holder forgot it: the lease ends, then its node is deleted
	fmt.Println(errors.Is(h.Err(), zkrecipes.ErrLeaseExpired))
	err = m.Release()
	fmt.Println(errors.Is(err, zkrecipes.ErrHoldLost), errors.Is(err, zkrecipes.ErrLeaseExpired))
	// Output:
	// extend: <nil>
	// true
	// true true
}
