package engine_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
)

// firstN is a driver of a user's own, as Curator's users write a
// LockInternalsDriver: the first n nodes of the queue hold, and every
// other node waits on the one n places ahead of it, so that one release
// wakes one waiter.
func firstN(n int) engine.Driver {
	return engine.DriverFunc(func(sorted []string, ours int) engine.Decision {
		if ours < n {
			return engine.Decision{Holds: true}
		}
		// Only the node n places ahead keeps us out when it is the head:
		// nothing can queue ahead later, its deletion grants without a
		// re-list.
		return engine.Decision{Watch: ours - n, OnlyObstacle: ours == n}
	})
}

// slots is a lock of a user's own, built on the public engine as the
// module's mutex is: n holders at a time, in queue order. Its holds are
// the module's: a fencing token, and a signal when one can no longer be
// trusted.
type slots struct {
	client *framework.Client
	dir    string
	n      int
}

// Acquire queues for a slot and waits for it (ctx is the timeout). Enter
// deletes the node of an acquire that fails; engine.Follow watches the
// granted node and the session under the client's error policy.
func (s slots) Acquire(ctx context.Context) (*hold.Hold, error) {
	g, err := engine.Enter(ctx, engine.Request{Client: s.client, Dir: s.dir, Name: "slot-", Driver: firstN(s.n)})
	if err != nil {
		return nil, framework.RecipeErr("slots", s.dir, err)
	}
	node := engine.Follow(s.client, *g, engine.WithRecipe("slots", s.dir), engine.WithMetrics("slots", s.dir))
	h, err := node.NewHold(func(*hold.Hold) error { return node.Release() })
	if err != nil {
		// Lost between the grant and now: the node is ours to delete.
		return nil, framework.RecipeErr("slots", s.dir, fmt.Errorf("%w (released: %v)", err, node.Release()))
	}
	return h, nil
}

// A lock of your own: two slots on one path, the third contender waits
// until a holder releases.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	lock := slots{client: client, dir: "/example/slots", n: 2}
	first, err := lock.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	second, err := lock.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}

	third := make(chan *hold.Hold)
	go func() {
		h, err := lock.Acquire(ctx)
		if err != nil {
			fmt.Println(err)
		}
		third <- h
	}()
	select {
	case <-third:
		fmt.Println("a third holder while two hold")
	case <-time.After(300 * time.Millisecond):
		fmt.Println("the third waits")
	}

	if err := first.Release(); err != nil {
		fmt.Println(err)
	}
	h := <-third
	fmt.Println("the third holds, its token is the newest:", h.Token() > second.Token())
	if err := hold.ReleaseAll(second, h); err != nil {
		fmt.Println(err)
	}
	// Output:
	// the third waits
	// the third holds, its token is the newest: true
}
