package main

import (
	"fmt"
	"os"

	"github.com/zkrecipes/zkrecipes/zkserver"
)

const devHelp = `NAME
    zkr dev - run a throwaway local ZooKeeper for trying zkr out

SYNOPSIS
    zkr dev [--port P]

DESCRIPTION
    Starts a standalone ZooKeeper 3.8 server on 127.0.0.1 with a temporary
    data directory, prints its connect string as the first line of stdout,
    and serves until SIGINT, SIGTERM or SIGHUP; then it stops the server and
    removes its data. If zkr dev is killed outright, the server dies with it
    (its data directory stays in $TMPDIR).

    The server is the one this module's tests run: a 200ms tick, session
    timeouts from 1s to 60s, no fsync. Not for production.

    It needs a local ZooKeeper: Debian's zookeeper package (the jars in
    /usr/share/java; apt-get install zookeeper) or ZK_HOME, and a java.
    zkr dev always starts its own server: ZK_CONNECT is ignored.

OPTIONS
    --port P
           listen on port P (default: a free port, printed).

EXIT STATUS
    0      stopped by a signal, server stopped and removed.
    2      Usage error.
    125    the server could not start (why, and its log, on stderr).

ENVIRONMENT
    ZK_HOME       an Apache ZooKeeper tarball to run instead of Debian's.
    JAVA_HOME     the java to run it with.

EXAMPLES
    zkr dev --port 2181 &
    zkr lock /demo -- echo hello

    # a free port, read from the first line (zkr dev runs until stopped):
    coproc DEV { zkr dev; }
    read -r ZK_CONNECT <&"${DEV[0]}"; export ZK_CONNECT
`

func runDev(a *app, g *globals, args []string) int {
	var port int
	fs := newFlagSet("dev")
	g.register(fs)
	fs.IntVar(&port, "port", 0, "")
	code, ok := a.parseArgs("dev", devHelp, func() error {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if len(fs.Args()) > 0 {
			return fmt.Errorf("unexpected argument %q", fs.Args()[0])
		}
		if port < 0 || port > 65535 {
			return fmt.Errorf("--port %d: out of range", port)
		}
		return nil
	})
	if !ok {
		return code
	}
	log := a.logger("dev", g)
	// Catch signals before the server starts, so that one arriving during
	// the start still stops and removes it.
	sig := watchSignals(nil)
	defer sig.stop()
	// ZK_CONNECT is for clients; zkr dev is the server.
	os.Unsetenv("ZK_CONNECT")
	connect, stop, err := zkserver.StartDev(port)
	if err != nil {
		log.printf("%v", err)
		return exitFailed
	}
	defer stop()
	fmt.Fprintln(a.stdout, connect)
	log.printf("ZooKeeper serving at %s; Ctrl-C stops it and removes its data", connect)
	<-sig.ctx.Done()
	s, _ := sig.received()
	log.infof("%v: stopping the server", s)
	return 0
}
