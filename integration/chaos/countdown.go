package chaos

// The countdown latch (recipes/countdown) in the suite. It hands out no
// holds, so it has its own contender loop and its own checker; the nemesis
// aims its "holder" faults at a contender with a latch call in flight.
//
// Rounds: each contender sets latches of its own, /chaos/countdown/<id>-<k>
// with a count of countdownCount, counts down latches it finds under
// /chaos/countdown (its own or others'), and awaits its own. Only a
// round's owner sets it, once, so a path is one latch. At quiesce every
// contender counts down what is left until it is open, so nothing stays
// behind.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/countdown"
)

// Countdown is the countdown latch's run.
const Countdown Recipe = "countdown"

// countdownCount is every round's count.
const countdownCount = 3

// What countdown contenders report. Detail is the round's path, then a
// space and the call's error if it failed; Mode is the outcome.
const (
	// KindCDSet: TrySetCount called. KindCDSetDone: it returned; Mode
	// "set", "not-set", "unknown" (zkrecipes.ErrOutcomeUnknown) or "error".
	KindCDSet     Kind = "cd-set"
	KindCDSetDone Kind = "cd-set-done"
	// KindCDCall: CountDown called. KindCDDone: it returned; Mode
	// "counted", "noop" (nothing to count), "unknown" or "error" (known
	// not to have counted).
	KindCDCall Kind = "cd-call"
	KindCDDone Kind = "cd-done"
	// KindCDAwait: Wait called. KindCDAwaitDone: it returned; Mode "open",
	// "timeout" or "error".
	KindCDAwait     Kind = "cd-await"
	KindCDAwaitDone Kind = "cd-await-done"
)

// countdownBusy says whether e starts (1) or ends (-1) a latch call, for
// the nemesis's aim: a contender in a call counts as holding.
func countdownBusy(e Event) int {
	switch e.Kind {
	case KindCDSet, KindCDCall, KindCDAwait:
		return 1
	case KindCDSetDone, KindCDDone, KindCDAwaitDone:
		return -1
	}
	return 0
}

// writesRegister reports whether the recipe's holds write the fenced
// ZooKeeper register: every recipe with *hold.Hold holds.
func (r Recipe) writesRegister() bool {
	switch r {
	case Mutex, RWLock, Semaphore, Latch:
		return true
	}
	return false
}

func (c *contender) countdownLoop(ctx context.Context) error {
	base := c.spec.Path
	for k := 1; ctx.Err() == nil; k++ {
		round := fmt.Sprintf("%s/%s-%d", base, c.spec.ID, k)
		set := c.cdSet(ctx, round)
		for range 4 {
			if ctx.Err() != nil {
				break
			}
			target := c.cdPick(ctx, base)
			if target == "" {
				target = round
			}
			c.cdCountDown(ctx, target)
			c.think(ctx)
		}
		if set && ctx.Err() == nil {
			c.cdAwait(ctx, round)
		}
	}
	return c.cdSweep(base)
}

// cdPick returns a random round under base, "" if none or on error.
func (c *contender) cdPick(ctx context.Context, base string) string {
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	kids, _, err := c.client.Children(lctx, base)
	if err != nil || len(kids) == 0 {
		return ""
	}
	return framework.Join(base, kids[c.rng.IntN(len(kids))])
}

// cdOutcome names how a call that returned err ended.
func cdOutcome(err error, ok bool, yes, no string) string {
	switch {
	case errors.Is(err, zkrecipes.ErrOutcomeUnknown):
		return "unknown"
	case err != nil:
		return "error"
	case ok:
		return yes
	}
	return no
}

func cdDetail(round string, err error) string {
	if err == nil {
		return round
	}
	return round + " " + err.Error()
}

func (c *contender) cdSet(ctx context.Context, round string) bool {
	l, err := countdown.New(c.client, round, countdownCount, countdown.WithParticipantID(c.spec.ID))
	if err != nil {
		c.emit(Event{Kind: KindCDSetDone, Detail: cdDetail(round, err), Mode: "error"})
		return false
	}
	defer l.Close()
	c.op++
	op := c.op
	c.emit(Event{Kind: KindCDSet, Op: op, Detail: round, Session: c.client.Session().ID})
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	ok, err := l.TrySetCount(sctx)
	cancel()
	c.emit(Event{Kind: KindCDSetDone, Op: op, Detail: cdDetail(round, err), Mode: cdOutcome(err, ok, "set", "not-set")})
	return err == nil && ok
}

// cdCountDown counts round down once. Asked to freeze, the contender stops
// itself with the call in flight: its reply may come while it is stopped,
// and its session may expire meanwhile.
func (c *contender) cdCountDown(ctx context.Context, round string) (ok bool, err error) {
	l, err := countdown.New(c.client, round, 0, countdown.WithParticipantID(c.spec.ID))
	if err != nil {
		return false, err
	}
	defer l.Close()
	c.op++
	op := c.op
	c.emit(Event{Kind: KindCDCall, Op: op, Detail: round, Session: c.client.Session().ID})
	type result struct {
		ok  bool
		err error
	}
	out := make(chan result, 1)
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	go func() {
		ok, err := l.CountDown(dctx)
		out <- result{ok, err}
	}()
	c.freezePoint()
	r := <-out
	c.emit(Event{Kind: KindCDDone, Op: op, Detail: cdDetail(round, r.err), Mode: cdOutcome(r.err, r.ok, "counted", "noop")})
	return r.ok, r.err
}

func (c *contender) cdAwait(ctx context.Context, round string) {
	l, err := countdown.New(c.client, round, 0)
	if err != nil {
		return
	}
	defer l.Close()
	c.op++
	op := c.op
	c.emit(Event{Kind: KindCDAwait, Op: op, Detail: round, Session: c.client.Session().ID})
	actx, cancel := context.WithTimeout(ctx, c.acquireTimeout())
	err = l.Wait(actx)
	cancel()
	mode := "open"
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		mode = "timeout"
	case err != nil:
		mode = "error"
	}
	c.emit(Event{Kind: KindCDAwaitDone, Op: op, Detail: cdDetail(round, err), Mode: mode})
}

// cdSweep counts down every latch left under base until it is open, so
// that nothing stays behind after the run. Every call is reported as in
// the loop.
func (c *contender) cdSweep(base string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		kids, _, err := c.client.Children(ctx, base)
		if err != nil || len(kids) == 0 {
			return nil // gone (or unreachable: the orphan check says so)
		}
		for _, k := range kids {
			for range 2 * countdownCount {
				ok, err := c.cdCountDown(ctx, framework.Join(base, k))
				if err == nil && !ok {
					break // open, and deleted by that call
				}
			}
		}
	}
	return nil
}

// CountdownStats is what the countdown checker counted.
type CountdownStats struct {
	Rounds, RoundsSet, RoundsOpened int
	Sets                            map[string]int // TrySetCount outcomes
	CountDowns                      map[string]int // CountDown outcomes
	Awaits                          map[string]int // Wait outcomes
}

// cdCall is one latch call rebuilt from the history.
type cdCall struct {
	client     string
	op         int
	kind       Kind // KindCDSet, KindCDCall or KindCDAwait
	call, done int64
	outcome    string // "" while no answer came (the process was killed)
}

// CheckCountdown checks a countdown run: per round, no more count-downs
// report counting than the count; no Wait returns open, and no CountDown
// reports nothing to count, before count count-downs of that round can
// have been made (calls invoked before it whose outcome is counted,
// unknown, or never known); and the run made progress: count-downs
// counted and rounds opened, with no stretch longer than stallLimit
// without a counted count-down.
func CheckCountdown(history []Event, count int) *Report {
	events := append([]Event(nil), history...)
	sort.SliceStable(events, func(i, j int) bool { return events[i].T < events[j].T })
	r := &Report{Losses: map[string]int{}, Faults: map[string]int{}, NotGranted: map[string]int{}}
	st := &CountdownStats{Sets: map[string]int{}, CountDowns: map[string]int{}, Awaits: map[string]int{}}
	r.Countdown = st

	rounds := map[string][]*cdCall{}
	open := map[string]*cdCall{} // client/op -> call
	var order []string
	var lastCounted, first int64
	for _, e := range events {
		switch e.Kind {
		case KindFault:
			r.Faults[strings.Fields(e.Detail)[0]]++
			if strings.HasSuffix(e.Detail, "(holding)") {
				r.FaultsOnHolder++
			}
		case KindCDSet, KindCDCall, KindCDAwait:
			round := e.Detail
			if _, ok := rounds[round]; !ok {
				order = append(order, round)
			}
			c := &cdCall{client: e.Client, op: e.Op, kind: e.Kind, call: e.T}
			rounds[round] = append(rounds[round], c)
			open[fmt.Sprintf("%s/%d", e.Client, e.Op)] = c
			if first == 0 {
				first, lastCounted = e.T, e.T
			}
		case KindCDSetDone, KindCDDone, KindCDAwaitDone:
			c := open[fmt.Sprintf("%s/%d", e.Client, e.Op)]
			if c == nil {
				continue // failed before the call
			}
			c.done, c.outcome = e.T, e.Mode
			if e.Kind == KindCDDone && e.Mode == "counted" {
				r.MaxGap = max(r.MaxGap, time.Duration(e.T-lastCounted))
				lastCounted = e.T
			}
		case KindQuiesce:
			if lastCounted != 0 {
				r.MaxGap = max(r.MaxGap, time.Duration(e.T-lastCounted))
			}
		}
	}
	st.Rounds = len(order)
	for _, round := range order {
		calls := rounds[round]
		var set *cdCall
		counted := 0
		for _, c := range calls {
			switch c.kind {
			case KindCDSet:
				st.Sets[or(c.outcome, "no answer")]++
				if c.outcome == "set" {
					set = c
				}
			case KindCDCall:
				st.CountDowns[or(c.outcome, "no answer")]++
				if c.outcome == "counted" {
					counted++
					r.Grants++
				}
			case KindCDAwait:
				st.Awaits[or(c.outcome, "no answer")]++
			}
		}
		if counted > count {
			r.violate("overcount", "%s: %d count-downs report counting, count %d", round, counted, count)
		}
		if set == nil {
			continue // never set, or not known to be: the rest needs it
		}
		st.RoundsSet++
		// made says how many count-downs of round can have been made by t:
		// those invoked before t that did not end known not to count.
		made := func(t int64, except *cdCall) int {
			n := 0
			for _, c := range calls {
				if c.kind != KindCDCall || c == except || c.call > t {
					continue
				}
				if c.outcome == "" || c.outcome == "counted" || c.outcome == "unknown" || c.done > t {
					n++
				}
			}
			return n
		}
		opened := false
		for _, c := range calls {
			if c.call < set.done || c.outcome == "" {
				continue // began before the latch was known to be there
			}
			switch {
			case c.kind == KindCDAwait && c.outcome == "open":
				opened = true
				if n := made(c.done, nil); n < count {
					r.violate("early-open", "%s: Wait by %s returned open at %s with at most %d of %d count-downs made",
						round, c.client, stamp(c.done), n, count)
				}
			case c.kind == KindCDCall && c.outcome == "noop":
				if n := made(c.done, c); n < count {
					r.violate("false-noop", "%s: CountDown by %s found nothing to count at %s with at most %d of %d count-downs made",
						round, c.client, stamp(c.done), n, count)
				}
			}
		}
		if opened {
			st.RoundsOpened++
		}
	}
	r.Asks = st.CountDowns["counted"] + st.CountDowns["noop"] + st.CountDowns["unknown"] + st.CountDowns["error"] + st.CountDowns["no answer"]
	switch {
	case r.Grants == 0:
		r.violate("no-progress", "no count-down counted")
	case st.RoundsOpened == 0:
		r.violate("no-progress", "no Wait saw a round open")
	}
	if r.MaxGap > stallLimit {
		r.violate("stall", "no count-down counted for %s", r.MaxGap.Round(time.Millisecond))
	}
	return r
}

func or(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}

// summarizeCountdown is the countdown run's part of the summary.
func summarizeCountdown(b *strings.Builder, rep *Report) {
	st := rep.Countdown
	fmt.Fprintf(b, "  rounds %d (count %d): set %d, seen open by a Wait %d\n", st.Rounds, countdownCount, st.RoundsSet, st.RoundsOpened)
	fmt.Fprintf(b, "  TrySetCount: %s; CountDown: %s; Wait: %s\n", counts(st.Sets), counts(st.CountDowns), counts(st.Awaits))
	fmt.Fprintf(b, "  faults: %s; %d hit a contender in a latch call; longest stretch without a counted count-down %s\n",
		counts(rep.Faults), rep.FaultsOnHolder, rep.MaxGap.Round(time.Millisecond))
	writeViolations(b, rep)
}
