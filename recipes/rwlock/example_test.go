package rwlock_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
)

func ExampleRWLock() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ",")) // "zk1:2181,zk2:2181,zk3:2181"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	l, err := rwlock.New(client, "/locks/catalog")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()

	// Rebuild under the write lock, then keep reading what was written
	// without letting another writer in between: downgrade.
	if _, err := l.WriteLock().Acquire(ctx); err != nil {
		fmt.Println(err)
		return
	}
	read, err := l.ReadLock().Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = l.WriteLock().Release()
	fmt.Println("reading, trusted:", read.Err() == nil)
	_ = l.ReadLock().Release()
	// Output: reading, trusted: true
}
