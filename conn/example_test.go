package conn_test

import (
	"context"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/integration/zktest"
)

// Dial a session, then watch it: a holder of anything built on the session
// selects on Session().Suspended (or Lost) to learn at once that it can no
// longer trust it.
func ExampleDial() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	servers := zktest.MainAddrs() // in a service: []string{"zk1:2181", "zk2:2181", "zk3:2181"}

	c, err := conn.Dial(ctx, servers, conn.WithSessionTimeout(10*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	sub := c.Subscribe()
	go func() {
		for ev := range sub.Events() {
			_ = ev // log it, or react: Suspended, Reconnected, Lost, ...
		}
	}()

	s := c.Session()
	fmt.Println("state:", c.State(), "negotiated timeout:", s.Timeout)
	select {
	case <-s.Suspended:
		fmt.Println("link lost: stop trusting the session")
	default:
		fmt.Println("session trusted")
	}
	c.Close()
	<-s.Lost
	fmt.Println("closed: the session is gone")
	// Output:
	// state: Connected negotiated timeout: 10s
	// session trusted
	// closed: the session is gone
}
