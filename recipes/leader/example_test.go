package leader_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/recipes/leader"
)

// A scheduler that runs its job only while it leads: the job's context is
// cancelled the moment leadership is in doubt, and the fencing token goes
// with every write the job makes.
func ExampleSelector() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	done := make(chan struct{})
	s, err := leader.NewSelector(client, "/schedulers/billing", func(ctx context.Context, h *hold.Hold) error {
		defer close(done)
		fmt.Println("leading; running the nightly job with token > 0:", h.Token() > 0)
		return nil // returning gives leadership up
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	if err := s.Start(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	<-done
	// Output: leading; running the nightly job with token > 0: true
}

// A latch keeps a participant in the election until Close; Await hands out
// the term as a hold, whose Release steps down.
func ExampleLatch() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	l, err := leader.NewLatch(client, "/elections/indexer", leader.WithParticipantID("indexer-1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	if err := l.Start(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	term, err := l.Await(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Lead under the term's context: it is cancelled the moment leadership
	// is in doubt.
	work := term.Context(ctx)
	_, leading := l.Held()
	fmt.Println("leading:", leading, "trusted:", work.Err() == nil)
	fmt.Println("step down:", term.Release())
	// Output:
	// leading: true trusted: true
	// step down: <nil>
}

// An operator's view of an election: who leads, from when, with which
// token; then every change, until the context ends.
func ExampleObserve() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	l, err := leader.NewLatch(client, "/elections/observed", leader.WithParticipantID("indexer-1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	if err := l.Start(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := l.Await(ctx); err != nil {
		fmt.Println(err)
		return
	}

	watching, stop := context.WithCancel(ctx)
	defer stop()
	obs, err := leader.Observe(watching, client, "/elections/observed")
	if err != nil {
		fmt.Println(err)
		return
	}
	for change := range obs.Changes() { // the first is who leads now
		if !change.HasLeader() {
			fmt.Println("nobody leads")
			stop() // the channel closes
			continue
		}
		fmt.Println(change.ID, "leads; token > 0:", change.Token > 0)
		l.Close() // step down: the next change is the vacancy
	}
	fmt.Println("stream ended:", obs.Err())
	// Output:
	// indexer-1 leads; token > 0: true
	// nobody leads
	// stream ended: leader observer /elections/observed: context canceled
}
