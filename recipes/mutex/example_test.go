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
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

func ExampleMutex() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	m, err := mutex.New(client, "/locks/billing-run")
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

	// Run the protected work under the hold's context: it is cancelled the
	// moment the hold can no longer be trusted. Pass the fencing token to
	// every resource you write to.
	work := h.Context(ctx)
	fmt.Println("held, token > 0:", h.Token() > 0, "trusted:", work.Err() == nil)
	// Output: held, token > 0: true trusted: true
}

// A SemaphoreMutex is taken in one goroutine and given back in another:
// the hold, not the goroutine, is what is released.
func ExampleSemaphoreMutex() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	m, err := mutex.NewSemaphoreMutex(client, "/locks/export")
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
	released := make(chan error)
	go func() { released <- h.Release() }() // e.g. a completion callback
	fmt.Println("released elsewhere:", <-released)
	fmt.Println("again:", h.Release())
	// Output:
	// released elsewhere: <nil>
	// again: semaphore mutex /locks/export: released
}

// A MultiLock takes several locks all or nothing, always in the order
// given.
func ExampleMultiLock() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	from, err := mutex.New(client, "/locks/accounts/17")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer from.Close()
	to, err := mutex.New(client, "/locks/accounts/42")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer to.Close()
	both, err := mutex.NewMultiLock(from, to)
	if err != nil {
		fmt.Println(err)
		return
	}
	holds, err := both.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("holds:", len(holds))
	fmt.Println("release:", hold.ReleaseAll(holds...))
	// Output:
	// holds: 2
	// release: <nil>
}

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

// A service that locks per entity takes each key's lock once, with the
// package's Acquire: no Mutex per key to make and close. The hold is the
// same as a Mutex's (fencing token, loss signal), and its Release leaves
// nothing behind.
func ExampleAcquire() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	debit := func(ctx context.Context, account string) error {
		h, err := mutex.Acquire(ctx, client, "/locks/accounts/"+account)
		if err != nil {
			return err
		}
		defer h.Release()
		work := h.Context(ctx) // cancelled the moment the hold is in doubt
		// ... write the account's balance under work, with h.Token() ...
		return work.Err()
	}
	fmt.Println("debit a-17:", debit(ctx, "a-17"))
	fmt.Println("debit a-42:", debit(ctx, "a-42"))
	// Output:
	// debit a-17: <nil>
	// debit a-42: <nil>
}
