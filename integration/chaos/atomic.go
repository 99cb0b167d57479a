package chaos

// The atomic counter's run (recipes/counter): contenders add to one
// counter, compare-and-set it and read it, under the same nemesis, and the
// checker proves, with porcupine, that every write that said it succeeded
// happened once, at a point within its call, and that no write was applied
// twice or applied after it was reported failed. Writes whose reply was
// lost (zkrecipes.ErrOutcomeUnknown) and writes of a contender killed mid-call may
// or may not have happened: they are modelled as operations that never
// return, which porcupine may place last (no effect) or anywhere after
// their call (applied once).

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/counter"
	"github.com/zkrecipes/zkrecipes/retry"
)

// Atomic is the atomic counter (recipes/counter's Long, promoted to a lock
// under the recipe's path).
const Atomic Recipe = "atomic"

// What an atomic contender reports.
const (
	// KindCounterCall: an operation begins. Mode is "add", "cas" or
	// "read"; Detail is the delta (add) or "expected new" (cas).
	KindCounterCall Kind = "counter-call"
	// KindCounterReturn: it returned. Accepted says it succeeded; Detail is
	// "<outcome> <pre> <post> <promoted tries>", outcome being ok, no (lost
	// to other writers), unknown (zkrecipes.ErrOutcomeUnknown) or error (then the
	// error).
	KindCounterReturn Kind = "counter-return"
)

// counterPath is the counter: outside the recipe's path, which must be
// left empty (the counter is a persistent node, kept for the checker).
func counterPath() string { return "/chaos-counter/" + string(Atomic) }

// atomicLoop adds, compares-and-sets and reads the counter until ctx ends.
// Values only grow (every write adds 1-3), so a value names the one write
// that made it, which the model relies on.
func (c *contender) atomicLoop(ctx context.Context) error {
	l, err := counter.NewLong(c.client, counterPath(),
		counter.WithOptimisticRetry(retry.NTimes(2, time.Millisecond)),
		counter.WithPromotedToLock(c.spec.Path+"/lock", 2*time.Second, retry.NTimes(3, time.Millisecond)),
		counter.WithParticipantID(c.spec.ID))
	if err != nil {
		return err
	}
	defer l.Close()
	var last int64
	for ctx.Err() == nil {
		c.op++
		op := c.op
		if s := c.client.Session().ID; s != c.session && s != 0 {
			c.session = s
			c.emit(Event{Kind: KindSession, Session: s})
		}
		c.maybeFreeze()
		octx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var r counter.Result[int64]
		var err error
		var mode string
		switch n := c.rng.IntN(4); {
		case n < 2:
			mode = "add"
			delta := int64(1 + c.rng.IntN(3))
			c.emit(Event{Kind: KindCounterCall, Op: op, Mode: mode, Detail: strconv.FormatInt(delta, 10)})
			r, err = l.Add(octx, delta)
		case n == 2:
			mode = "cas"
			next := last + int64(1+c.rng.IntN(3))
			c.emit(Event{Kind: KindCounterCall, Op: op, Mode: mode, Detail: fmt.Sprintf("%d %d", last, next)})
			r, err = l.CompareAndSet(octx, last, next)
		default:
			mode = "read"
			c.emit(Event{Kind: KindCounterCall, Op: op, Mode: mode})
			r, err = l.Get(octx)
		}
		cancel()
		outcome := "ok"
		switch {
		case errors.Is(err, zkrecipes.ErrOutcomeUnknown):
			outcome = "unknown"
		case err != nil:
			outcome = "error"
		case !r.Succeeded:
			outcome = "no"
		}
		detail := fmt.Sprintf("%s %d %d %d", outcome, r.PreValue, r.PostValue, r.Stats.PromotedTries)
		if err != nil && outcome == "error" {
			detail += " " + err.Error()
		}
		c.emit(Event{Kind: KindCounterReturn, Op: op, Mode: mode, Accepted: r.Succeeded && err == nil, Detail: detail, Class: errClassOf(err)})
		if err == nil {
			last = r.PostValue
			if !r.Succeeded {
				last = r.PreValue
			}
		}
		if err != nil && outcome == "error" {
			sleep(ctx, 50*time.Millisecond) // a broken link is not hammered
		}
		sleep(ctx, time.Duration(c.rng.IntN(10))*time.Millisecond)
	}
	return nil
}

// maybeFreeze stops the process, if the nemesis asked, a moment into the
// next operation: wherever the operation is then (between its read and
// its write, with its write in flight...), as a GC pause would.
func (c *contender) maybeFreeze() {
	c.freezeMu.Lock()
	defer c.freezeMu.Unlock()
	if !c.freeze {
		return
	}
	c.freeze = false
	c.emit(Event{Kind: KindFreezing})
	d := time.Duration(c.rng.IntN(3000)) * time.Microsecond
	go func() {
		time.Sleep(d)
		stopHere()
	}()
}

// CounterReport is what the atomic run's checker found.
type CounterReport struct {
	// Calls counts operations by mode; OK, No, Unknown and Errors by
	// outcome; InFlight the operations of killed contenders.
	Calls                                 map[string]int
	OK, No, Unknown, Errors, InFlight     int
	Promoted                              int // operations that took the lock
	Final                                 int64
	SucceededAdded, UnknownAdded, Written int64
}

// counterInput is one write in the counter model. Reads are not in it:
// ZooKeeper serves them from any server, possibly behind the leader
// (sequential, not linearizable, consistency); checkReads checks them.
type counterInput struct {
	client string
	mode   string // "add", "cas" or "final"
	// pre is the value the write was made against (a compare-and-set of
	// the version read, so it applies only there); known false for a write
	// of a killed contender, which applies wherever it lands.
	pre, post int64
	known     bool
	// unknown: it may not have happened (it never returns).
	unknown bool
}

func counterModel() porcupine.Model {
	return porcupine.Model{
		Init: func() any { return int64(0) },
		Step: func(state, input, _ any) (bool, any) {
			s, in := state.(int64), input.(counterInput)
			switch {
			case in.mode == "final":
				return s == in.post, s
			case !in.known:
				return true, s + (in.post - in.pre) // killed: delta in post-pre
			case in.unknown && s != in.pre:
				return true, s // its compare-and-set could not apply here
			}
			return s == in.pre, in.post
		},
		DescribeOperation: func(input, _ any) string {
			in := input.(counterInput)
			switch {
			case in.mode == "final":
				return fmt.Sprintf("final = %d", in.post)
			case !in.known:
				return fmt.Sprintf("%s +%d (killed)", in.mode, in.post-in.pre)
			case in.unknown:
				return fmt.Sprintf("%s %d -> %d (unknown)", in.mode, in.pre, in.post)
			}
			return fmt.Sprintf("%s %d -> %d", in.mode, in.pre, in.post)
		},
		DescribeState: func(state any) string { return strconv.FormatInt(state.(int64), 10) },
	}
}

// checkAtomic checks an atomic run's history against the counter's final
// value, read after every contender stopped.
func checkAtomic(history []Event, final int64, finalAt int64) *Report {
	events := append([]Event(nil), history...)
	sort.SliceStable(events, func(i, j int) bool { return events[i].T < events[j].T })
	r := &Report{Losses: map[string]int{}, Faults: map[string]int{}, NotGranted: map[string]int{}}
	cr := &CounterReport{Calls: map[string]int{}, Final: final}
	r.Counter = cr
	type call struct {
		e      Event
		client string
	}
	open := map[string]call{} // client/op
	ids := map[string]int{}
	id := func(client string) int {
		if i, ok := ids[client]; ok {
			return i
		}
		ids[client] = len(ids)
		return ids[client]
	}
	var ops []porcupine.Operation
	var lastWrite, maxGap int64
	never := int64(math.MaxInt64)
	lastSeen := map[string]int64{} // client -> highest value it saw
	seen := func(client string, v int64, what string) {
		if v < lastSeen[client] {
			r.violate("counter-went-back", "%s saw %d (%s) after it had seen %d", client, v, what, lastSeen[client])
		}
		lastSeen[client] = max(lastSeen[client], v)
	}
	for _, e := range events {
		key := fmt.Sprintf("%s/%d", e.Client, e.Op)
		switch e.Kind {
		case KindFault:
			if strings.HasPrefix(e.Client, "c") {
				r.FaultsOnHolder++
			}
			r.Faults[strings.Fields(e.Detail)[0]]++
		case KindKill:
			for k, c := range open {
				if c.client != e.Client {
					continue
				}
				delete(open, k)
				cr.InFlight++
				if c.e.Mode == "read" {
					continue
				}
				in := counterInput{client: c.client, mode: c.e.Mode, post: delta(c.e)}
				ops = append(ops, porcupine.Operation{ClientId: id(c.client), Input: in, Call: c.e.T, Return: never})
			}
		case KindCounterCall:
			open[key] = call{e, e.Client}
			cr.Calls[e.Mode]++
			r.Asks++
			if lastWrite == 0 {
				lastWrite = e.T
			}
		case KindCounterReturn:
			c, ok := open[key]
			if !ok {
				r.violate("harness", "%s op %d returned without a call", e.Client, e.Op)
				continue
			}
			delete(open, key)
			f := strings.Fields(e.Detail)
			if len(f) < 3 {
				r.violate("harness", "%s op %d: return %q", e.Client, e.Op, e.Detail)
				continue
			}
			pre, _ := strconv.ParseInt(f[1], 10, 64)
			post, _ := strconv.ParseInt(f[2], 10, 64)
			in := counterInput{client: e.Client, mode: e.Mode, pre: pre, post: post, known: true}
			if len(f) > 3 {
				if n, _ := strconv.Atoi(f[3]); n > 0 {
					cr.Promoted++
				}
			}
			switch f[0] {
			case "ok":
				cr.OK++
				seen(e.Client, post, e.Mode)
				if e.Mode == "read" {
					continue
				}
				cr.SucceededAdded += post - pre
				r.Grants++
				maxGap = max(maxGap, e.T-lastWrite)
				lastWrite = e.T
				ops = append(ops, porcupine.Operation{ClientId: id(e.Client), Input: in, Call: c.e.T, Return: e.T})
			case "unknown":
				cr.Unknown++
				cr.UnknownAdded += post - pre
				in.unknown = true
				ops = append(ops, porcupine.Operation{ClientId: id(e.Client), Input: in, Call: c.e.T, Return: never})
			case "no":
				// Lost to other writers: nothing applied. The value it last
				// read may be stale (any server answers reads), so it is
				// no observation.
				cr.No++
			default:
				// Nothing of an operation that failed otherwise was
				// applied: the model holds it to that by leaving it out.
				cr.Errors++
				r.NotGranted[counterErrClass(e.Class)]++
			}
		case KindQuiesce:
			maxGap = max(maxGap, e.T-lastWrite)
		}
	}
	for _, c := range open {
		r.violate("harness", "%s op %d never returned (and was not killed)", c.client, c.e.Op)
	}
	r.MaxGap = time.Duration(maxGap)
	if r.MaxGap > stallLimit {
		r.violate("stall", "no write succeeded for %s", r.MaxGap.Round(time.Millisecond))
	}
	if cr.OK == 0 || cr.SucceededAdded == 0 {
		r.violate("no-progress", "no write to the counter succeeded")
	}
	cr.Written = final
	if final < cr.SucceededAdded {
		r.violate("counter-lost-write", "the counter is %d, below the %d that writes reported added", final, cr.SucceededAdded)
	}
	ops = append(ops, porcupine.Operation{ClientId: id("checker"), Input: counterInput{mode: "final", post: final, known: true}, Call: finalAt, Return: finalAt})
	r.model = counterModel()
	r.Linearizable, r.info = porcupine.CheckOperationsVerbose(r.model, ops, time.Minute)
	switch r.Linearizable {
	case porcupine.Illegal:
		r.violate("not-linearizable", "the counter's history fits no order of its writes (a write lost, doubled or applied after it failed; see the visualisation)")
	case porcupine.Unknown:
		r.violate("not-linearizable", "porcupine gave up after a minute")
	}
	return r
}

// delta is the most a call's write adds: for a killed contender's call,
// whose value read is unknown, the model's known=false input carries it
// as post (pre 0).
func delta(e Event) int64 {
	f := strings.Fields(e.Detail)
	switch e.Mode {
	case "add":
		d, _ := strconv.ParseInt(f[0], 10, 64)
		return d
	case "cas":
		exp, _ := strconv.ParseInt(f[0], 10, 64)
		next, _ := strconv.ParseInt(f[1], 10, 64)
		return next - exp
	}
	return 0
}

// counterErrClass names a failed counter call's error class for the
// summary: a hold lost here is the lock the counter was promoted to.
func counterErrClass(class string) string {
	switch class {
	case ClassHoldLost:
		return "promoted lock lost"
	case "":
		return ClassError
	}
	return class
}

// readCounter is the counter's value once every contender has stopped.
func readCounter(ctx context.Context, c *framework.Client) (int64, error) {
	l, err := counter.NewLong(c, counterPath())
	if err != nil {
		return 0, err
	}
	defer l.Close()
	if err := c.Sync(ctx, counterPath()); err != nil {
		return 0, err
	}
	r, err := l.Get(ctx)
	return r.PostValue, err
}

func summarizeAtomic(cfg Config, rep *Report, took time.Duration) string {
	var b strings.Builder
	cr := rep.Counter
	fmt.Fprintf(&b, "chaos %s: seed %d, %d contenders, session timeout %s, %s\n",
		cfg.Recipe, cfg.Seed, cfg.Contenders, cfg.SessionTimeout, took.Round(time.Second))
	fmt.Fprintf(&b, "  operations %s: ok %d, lost to other writers %d, outcome unknown %d, failed %d (%s), in flight when killed %d; promoted to the lock %d\n",
		counts(cr.Calls), cr.OK, cr.No, cr.Unknown, cr.Errors, counts(rep.NotGranted), cr.InFlight, cr.Promoted)
	fmt.Fprintf(&b, "  counter %d: %d added by writes that succeeded, up to %d more by writes of unknown outcome; longest wait for a write %s\n",
		cr.Final, cr.SucceededAdded, cr.UnknownAdded, rep.MaxGap.Round(time.Millisecond))
	fmt.Fprintf(&b, "  faults: %s; %d hit a contender\n", counts(rep.Faults), rep.FaultsOnHolder)
	fmt.Fprintf(&b, "  linearizable (porcupine, counter model, unknown outcomes as maybe-applied): %s\n", rep.Linearizable)
	writeViolations(&b, rep)
	return b.String()
}

// resetCounter deletes the counter a run of an earlier test left on the
// same ensemble: the model starts from 0.
func (r *run) resetCounter() {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.operator.Delete(ctx, counterPath(), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		r.t.Fatalf("chaos: resetting the counter %s: %v", counterPath(), err)
	}
}

// checkCounter reads the counter, all contenders being stopped, and checks
// the history against it.
func (r *run) checkCounter(history []Event) *Report {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	final, err := readCounter(ctx, r.operator)
	if err != nil {
		r.t.Fatalf("chaos: reading the counter %s: %v", counterPath(), err)
	}
	return checkAtomic(history, final, now())
}
