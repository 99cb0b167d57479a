// Package participant is Curator's default participant id, shared by every
// recipe that writes one into its nodes (the mutex, the semaphore...), so
// that no recipe has to import another for it.
package participant

import (
	"context"
	"net"
	"os"
	"sync"
	"time"
)

// Default is Curator's default participant id: the address this host's name
// resolves to (Java's InetAddress.getLocalHost().getHostAddress(), often
// 127.0.1.1 or 127.0.0.1 on Debian), else the hostname itself. It is worked
// out once per process, as the JVM caches getLocalHost: every recipe's
// constructor asks, and a slow resolver must not cost each of them up to
// two seconds.
var Default = sync.OnceValue(lookup)

func lookup() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "unknown"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil || len(addrs) == 0 {
		return host
	}
	for _, a := range addrs {
		if a.IP.To4() != nil {
			return a.IP.String()
		}
	}
	return addrs[0].IP.String()
}
