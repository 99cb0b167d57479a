package discovery_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// A service registers an instance, which stays registered through session
// loss until Close; a client of the service finds instances through a
// Provider, as with Curator's ServiceDiscovery and ServiceProvider (a Java
// process on the same base path sees the same instances).
func ExampleDiscovery() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	d, err := discovery.New(client, "/example/services")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close() // unregisters

	inst := discovery.NewInstance("billing")
	inst.Address = "10.0.0.7"
	port := 8080
	inst.Port = &port
	inst.URISpec, _ = discovery.ParseURISpec("{scheme}://{address}:{port}")
	// What a Curator reader of Map (or Object) payloads reads: see
	// Payloads in the package documentation.
	inst.Payload, err = discovery.JavaPayload("java.util.HashMap", map[string]string{"zone": "eu-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := d.Register(ctx, inst); err != nil {
		fmt.Println(err)
		return
	}

	p, err := d.NewProvider("billing", discovery.WithStrategy(discovery.RoundRobin()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	if err := p.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	got, err := p.Instance()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(got.BuildURI(nil))
	// Output: http://10.0.0.7:8080
}
