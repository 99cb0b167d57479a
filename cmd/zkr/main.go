// Command zkr will be the distributed flock: run a command while holding a
// ZooKeeper lock, semaphore lease or leadership, with the fencing token in
// its environment. Not built yet: see the README's roadmap.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "zkr: not built yet; see the roadmap in README.md")
	os.Exit(2)
}
