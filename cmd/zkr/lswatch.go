package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
)

// watch shows the queue at each change until ctx ends: ZooKeeper watches
// say when to look again, the connection's events when the view may be
// stale, and on a terminal a ticker redraws the times every second.
func (l *lister) watch(ctx context.Context) {
	sub := l.client.Subscribe()
	defer sub.Close()
	<-sub.Changes() // the state as it stands: the first look tells
	var tick <-chan time.Time
	if l.screen != nil {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
		defer l.screen.leave()
	}
	const minGap = 100 * time.Millisecond // looks at most ten times a second
	l.view = &staleView{log: l.log, what: "the queue"}
	if l.screen != nil {
		l.view.log = nil // the screen says it
	}
	for {
		start := time.Now()
		round, cancel := context.WithCancel(ctx)
		q, watches, err := readQueue(round, l.client, l.path, true)
		var retry <-chan time.Time
		switch {
		case ctx.Err() != nil:
			cancel()
			return
		case err != nil:
			l.note = fmt.Sprintf("no answer from ZooKeeper (%v); trying again", err)
			l.view.stale(l.note)
			retry = time.After(time.Second)
			l.redraw()
		default:
			l.note = ""
			l.show(q)
			l.view.current()
		}
		var w [3]<-chan zk.Event
		copy(w[:], watches)
		l.wait(ctx, w, retry, tick, sub)
		cancel() // the round's reads and waits are over
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(start.Add(minGap))):
		}
	}
}

// wait returns at the first sign that the queue may have changed, or when
// ctx ends, redrawing on each tick meanwhile.
func (l *lister) wait(ctx context.Context, w [3]<-chan zk.Event, retry, tick <-chan time.Time, sub *framework.Subscription[conn.Event]) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w[0]:
			return
		case <-w[1]:
			return
		case <-w[2]:
			return
		case <-retry:
			return
		case <-tick:
			l.redraw()
		case ev := <-sub.Changes():
			up := l.view.state(ev.State)
			if up || ev.State == conn.StateLost {
				// Looking again tells what changed meanwhile; a new
				// session has none of the old watches.
				return
			}
			l.note = l.view.why
			l.redraw()
		}
	}
}

// show displays a new look at the queue: on a terminal, a redraw; elsewhere
// the whole queue again, if it changed.
func (l *lister) show(q *queue) {
	roles := make(map[string]string, len(q.Nodes))
	granted := make(map[string]time.Time)
	for i := range q.Nodes {
		e := &q.Nodes[i]
		roles[e.Node] = e.Role
		at, seen := l.granted[e.Node]
		if !seen && e.Role == roleHolds && l.roles[e.Node] == roleWaits {
			at, seen = q.Time, true
		}
		if seen && e.Role == roleHolds {
			granted[e.Node], e.since = at, at
		}
	}
	l.roles, l.granted, l.last = roles, granted, q
	if l.screen != nil {
		l.redraw()
		return
	}
	key := q.key()
	if key == l.shown {
		return
	}
	if l.shown != "" && !l.out.json() {
		fmt.Fprintln(l.w)
	}
	l.shown = key
	if err := l.print(q, true); err != nil {
		l.log.printf("%v", err)
	}
}

// key is what a look shows, but the times: what must differ for a new
// table.
func (q *queue) key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%v|%v|", q.Kind, q.Also, q.Others)
	for _, e := range q.Nodes {
		fmt.Fprintf(&b, "%s %s %s|", e.Node, e.Role, e.ID)
	}
	return b.String()
}

// redraw draws the last look on the terminal, times as of now.
func (l *lister) redraw() {
	if l.screen == nil {
		return
	}
	rows, cols := l.screen.size()
	maxLines := 0
	if rows > 0 {
		maxLines = rows - 2 // the hint and the line the cursor rests on
	}
	var lines []string
	if l.last != nil {
		lines = l.last.table(time.Now(), true, maxLines)
	} else {
		lines = []string{l.path + ":"}
	}
	hint := "zkr ls --watch: Ctrl-C to quit"
	if l.note != "" {
		hint = l.note
	}
	lines = append(lines[:1], append([]string{hint}, lines[1:]...)...)
	l.screen.draw(lines, cols)
}

// screen is a terminal that zkr ls --watch redraws.
type screen struct {
	w     io.Writer
	fd    int
	drawn bool
}

// draw puts lines at the top of the screen, each cut to cols, and clears
// what was below them: no full clear after the first, so no flicker.
func (s *screen) draw(lines []string, cols int) {
	var b strings.Builder
	if !s.drawn {
		b.WriteString("\x1b[H\x1b[2J")
		s.drawn = true
	} else {
		b.WriteString("\x1b[H")
	}
	for _, l := range lines {
		if cols > 0 && utf8.RuneCountInString(l) > cols {
			l = string([]rune(l)[:cols])
		}
		b.WriteString(l)
		b.WriteString("\x1b[K\n")
	}
	b.WriteString("\x1b[J")
	_, _ = io.WriteString(s.w, b.String())
}

// leave ends on a fresh line below the last drawing.
func (s *screen) leave() {
	if s.drawn {
		_, _ = io.WriteString(s.w, "\n")
	}
}

func (s *screen) size() (rows, cols int) { return termSize(s.fd) }

// ansiTerminal says whether w is a terminal that takes ANSI escapes: a
// terminal device, and a TERM other than dumb.
func ansiTerminal(w io.Writer) (fd int, ok bool) {
	f, isFile := w.(*os.File)
	if !isFile {
		return 0, false
	}
	if t := os.Getenv("TERM"); t == "" || t == "dumb" {
		return 0, false
	}
	return int(f.Fd()), isTerminal(int(f.Fd()))
}

// isTerminal says whether fd is a terminal device.
func isTerminal(fd int) bool {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TCGETS, uintptr(unsafe.Pointer(&t)))
	return errno == 0
}

// termSize is the terminal's size, or zeros if it does not say.
func termSize(fd int) (rows, cols int) {
	var ws struct{ Row, Col, X, Y uint16 }
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCGWINSZ, uintptr(unsafe.Pointer(&ws))); errno != 0 {
		return 0, 0
	}
	return int(ws.Row), int(ws.Col)
}
