package barrier_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/barrier"
)

// Three workers start a phase together and finish it together. In real use
// each worker is its own process with its own client.
func ExampleDoubleBarrier() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	var wg sync.WaitGroup
	results := make([]error, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := barrier.NewDouble(client, "/barriers/phase-1", 3)
			if err != nil {
				results[i] = err
				return
			}
			defer d.Close()
			if err := d.Enter(ctx); err != nil { // returns once all 3 are in
				results[i] = err
				return
			}
			// ... the phase's work ...
			results[i] = d.Leave(ctx) // returns once all 3 are out
		}()
	}
	wg.Wait()
	fmt.Println(results)
	// Output: [<nil> <nil> <nil>]
}

// A coordinator holds workers at a gate until it is ready.
func ExampleBarrier() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	gate, err := barrier.New(client, "/barriers/start")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer gate.Close()
	if err := gate.Set(ctx); err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan error, 1)
	go func() { done <- gate.Wait(ctx) }() // a worker, blocked while the gate stands
	if err := gate.Remove(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("worker released:", <-done)
	// Output: worker released: <nil>
}
