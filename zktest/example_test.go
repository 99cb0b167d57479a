package zktest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// A service runs its nightly report under a lock; the test expires the
// service's session and shows that the report stops: the hold's context
// ends before the server gives the lock to anyone else. In a test of your
// own, start the server with zktest.Standalone(t) instead of MainCluster.
func Example() {
	cluster := zktest.MainCluster()
	// The service connects through a proxy of its own, so that the fault
	// hits it alone.
	proxy := cluster.NewProxy()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := framework.Dial(ctx, proxy.Addrs(), framework.WithSessionTimeout(2*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	lock, err := mutex.New(client, "/locks/nightly-report")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Close()
	h, err := lock.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Release()

	// The service's work, under the hold's context.
	stopped := make(chan error, 1)
	go func() { stopped <- nightlyReport(h.Context(ctx)) }()

	session := client.Session().ID
	proxy.ExpireSession(session)

	select {
	case err := <-stopped:
		fmt.Println("report stopped:", errors.Is(err, zkrecipes.ErrSuspended) || errors.Is(err, zkrecipes.ErrSessionLost))
	case <-time.After(30 * time.Second):
		fmt.Println("report still running after its session expired")
	}
	fmt.Println("session alive:", cluster.SessionAlive(session))
	// Output:
	// report stopped: true
	// session alive: false
}

// nightlyReport stands for the service's code: it works until ctx ends and
// returns why it stopped.
func nightlyReport(ctx context.Context) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-tick.C:
			// one more row of the report
		}
	}
}
