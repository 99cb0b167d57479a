package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
)

// The partitioner (recipes/partition) in the suite. Every contender is a
// member of one partition over a fixed list of items, with a worker per
// owned item that reports the grant (acquire-ok, with the item and its
// fencing token), checks its hold and may be frozen there as a lock's
// holder is, takes 50-200 ms to wind down once its context ends, and
// reports the end: release-call as it returns (the partitioner must give
// the lock back only after that), or loss the moment the hold's loss
// signal fired, winding down or not. The checker (CheckPartition) rebuilds
// each item's holds and fails on an item owned by two members at once: in
// token order, each grant must come after every earlier holder of the item
// stopped trusting its hold (its loss signal, its worker's return, its
// process killed, its node deleted by the nemesis), as the mutex checker
// has it for a lock; a
// holder frozen until its session expired is the fencing token's business,
// counted apart. Once quiet (after quiesce), each contender waits, before it
// leaves, until every item is held by a member of the partition on the
// server and what it owns is what the server says; an item without an
// owner then is a violation.

// Partition is the partitioner's recipe name.
const Partition Recipe = "partition"

// partitionItems is the number of items the contenders share: a few per
// contender, so that joins, leaves and losses move some and not all.
const partitionItems = 12

// KindPartitionFinal: after quiesce, whether (Accepted) every item had an
// owner among the members on the server and this contender's items were
// its own there; Detail: what it owned, or what was wrong.
const KindPartitionFinal Kind = "partition-final"

func partitionItemNames() []string {
	out := make([]string, partitionItems)
	for i := range out {
		out[i] = fmt.Sprintf("item-%02d", i)
	}
	return out
}

// partitionLoop is a partition contender: a member until ctx ends, then the
// final check, then Close (which gives every item back).
func (c *contender) partitionLoop(ctx context.Context) error {
	var mu sync.Mutex // c.op and c.rng, from the workers' goroutines
	think := func(ctx context.Context) bool {
		mu.Lock()
		d := 20*time.Millisecond + time.Duration(c.rng.IntN(130))*time.Millisecond
		mu.Unlock()
		return sleep(ctx, d) && ctx.Err() == nil
	}
	worker := func(wctx context.Context, item string, h *hold.Hold) {
		mu.Lock()
		c.op++
		op := c.op
		mu.Unlock()
		c.emit(Event{Kind: KindAcquireOK, Op: op, Item: item, Token: h.Token(), Granted: h.Granted().UnixNano(), Session: h.SessionID()})
		// The loss signal is watched on its own: a loss ends the trust
		// when the library says so, whatever the worker is doing then
		// (winding down, say), since the library cannot stop a worker
		// that does not listen. The signal the partitioner's own release
		// fires is no loss: it must come after the worker returned.
		returned, watched := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(watched)
			select {
			case <-h.Done():
				select {
				case <-returned:
				default:
					if err := h.Err(); lostHold(err) {
						c.emit(Event{Kind: KindLoss, Op: op, Item: item, Detail: err.Error()})
					}
				}
			case <-returned:
			}
		}()
		for think(wctx) {
			c.emit(Event{Kind: KindTrusted, Op: op, Item: item, Token: h.Token()})
			c.freezePoint()
		}
		// A real worker takes its time to stop (a flush, a checkpoint),
		// deaf to its context: the partitioner must wait for it before
		// it gives the lock back, and a lock given back sooner shows as
		// the next grant of the item before this report.
		mu.Lock()
		windDown := 50*time.Millisecond + time.Duration(c.rng.IntN(151))*time.Millisecond
		mu.Unlock()
		time.Sleep(windDown)
		c.emit(Event{Kind: KindReleaseCall, Op: op, Item: item})
		close(returned)
		<-watched
	}
	items := partitionItemNames()
	p, err := partition.New(c.client, c.spec.Path, c.spec.ID, partition.List(items...), partition.WithWorker(worker))
	if err != nil {
		return err
	}
	defer p.Close()
	if !startRetrying(ctx, p.Start, "start") {
		return nil
	}
	<-ctx.Done()
	c.partitionFinal(p, items)
	return p.Close()
}

// lostHold reports whether a hold's Err is a loss: not its release nor its
// recipe's Close, the holder's own doing.
func lostHold(err error) bool {
	return err != nil && !errors.Is(err, zkrecipes.ErrReleased) && !errors.Is(err, zkrecipes.ErrClosed)
}

// partitionFinal waits until every item is held, on the server, by a
// member of the partition, and this contender's items are those the
// server says are its own, and reports whether that happened within a
// minute (the others leave one by one meanwhile, and their items move).
func (c *contender) partitionFinal(p *partition.Partitioner, items []string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var diff string
	for {
		owners, members, err := c.readOwners(ctx, items)
		if err == nil {
			var unowned, mine []string
			for _, it := range items {
				switch o, ok := owners[it]; {
				case !ok || !members[o]:
					unowned = append(unowned, fmt.Sprintf("%s (%q)", it, o))
				case o == c.spec.ID:
					mine = append(mine, it)
				}
			}
			got := p.Items()
			switch {
			case len(unowned) > 0:
				diff = "items without a member holding them: " + strings.Join(unowned, ", ")
			case !slices.Equal(got, mine):
				diff = fmt.Sprintf("it owns %v, the server says %v", got, mine)
			default:
				c.emit(Event{Kind: KindPartitionFinal, Accepted: true, Detail: fmt.Sprintf("owned %d of %d among %d members", len(mine), len(items), len(members))})
				return
			}
		} else {
			diff = "reading the server: " + err.Error()
		}
		if !sleep(ctx, 50*time.Millisecond) { // polling until the moves settle
			c.emit(Event{Kind: KindPartitionFinal, Detail: diff})
			return
		}
	}
}

// readOwners reads, after a sync, the member ids of the partition and the
// holder of each item: the data of the first node of its lock.
func (c *contender) readOwners(ctx context.Context, items []string) (map[string]string, map[string]bool, error) {
	if err := c.client.Sync(ctx, "/"); err != nil {
		return nil, nil, err
	}
	ids, _, err := c.client.Children(ctx, framework.Join(c.spec.Path, "members"))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, nil, err
	}
	members := map[string]bool{}
	for _, id := range ids {
		members[id] = true
	}
	owners := map[string]string{}
	for _, it := range items {
		dir := partition.ItemPath(c.spec.Path, it)
		kids, _, err := c.client.Children(ctx, dir)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		for _, k := range engine.Sort(kids, "lock-") {
			data, _, err := c.client.Get(ctx, framework.Join(dir, k))
			if errors.Is(err, zk.ErrNoNode) {
				continue // released meanwhile: the next one is first
			}
			if err != nil {
				return nil, nil, err
			}
			owners[it] = string(data)
			break
		}
	}
	return owners, members, nil
}

// PartitionStats are a partition run's numbers.
type PartitionStats struct {
	Grants, Losses, Releases int
	// FrozenOverlap counts grants of an item while a holder frozen
	// (SIGSTOP) until its session expired still believed it held it: the
	// fencing token's case, not the partitioner's.
	FrozenOverlap int
	// ReportedAfterThaw counts the holds granted before a freeze of their
	// process and reported only after the thaw (zombies' holds).
	ReportedAfterThaw int
	Finals            int
	Details           []string
}

type partHold struct {
	client, item string
	op           int
	token        int64
	// granted is when the partitioner granted it (hold.Hold.Granted),
	// trusted from then until end; the report (acquire-ok) may come later.
	granted, end int64
	reported     int64 // its acquire-ok
	endedBy      string
	// zombieEnd: for a hold whose holder froze (SIGSTOP) until its session
	// expired, end is the freeze and zombieEnd when it stopped believing.
	zombieEnd int64
}

// CheckPartition checks a partition run's history (see the comment at the
// top of this file).
func CheckPartition(history []Event) (*Report, PartitionStats) {
	events := append([]Event(nil), history...)
	sort.SliceStable(events, func(i, j int) bool { return events[i].T < events[j].T })
	r := &Report{Losses: map[string]int{}, Faults: map[string]int{}, NotGranted: map[string]int{}}
	var s PartitionStats
	open := map[string]map[int]*partHold{} // client -> op -> hold
	deleted := provenDeletes(events)
	pauses := map[string][]pause{}
	var holds []*partHold
	end := func(h *partHold, t int64, by string) {
		if h.endedBy == "" {
			h.end, h.endedBy = t, by
			delete(open[h.client], h.op)
		}
	}
	for _, e := range events {
		switch e.Kind {
		case KindAcquireOK:
			h := &partHold{client: e.Client, item: e.Item, op: e.Op, token: e.Token, granted: e.Granted, reported: e.T}
			if h.granted == 0 {
				h.granted = e.T
			}
			if open[e.Client] == nil {
				open[e.Client] = map[int]*partHold{}
			}
			open[e.Client][e.Op] = h
			holds = append(holds, h)
		case KindLoss:
			s.Losses++
			r.Losses[lossReason(e.Detail)]++
			if h := open[e.Client][e.Op]; h != nil {
				end(h, e.T, "loss")
			}
		case KindReleaseCall:
			// A worker returns after a loss too: only a return that ends
			// a hold is a release.
			if h := open[e.Client][e.Op]; h != nil {
				s.Releases++
				end(h, e.T, "its worker's return")
			}
		case KindKill:
			for _, h := range open[e.Client] {
				end(h, e.T, "kill")
			}
		case KindStop:
			pauses[e.Client] = append(pauses[e.Client], pause{from: e.T})
		case KindCont:
			if ps := pauses[e.Client]; len(ps) > 0 {
				ps[len(ps)-1].to = e.T
				ps[len(ps)-1].expired = e.Detail == "expired"
			}
		case KindFault:
			r.Faults[strings.Fields(e.Detail + " ?")[0]]++
			// A lock node deleted from outside ends its hold there and
			// then: the next member may be granted the item at once.
			// Only a delete the servers' reply proves, of the hold with
			// that token.
			if f := strings.Fields(e.Detail); len(f) >= 3 && f[0] == string(DeleteNode) && strings.HasSuffix(e.Detail, "(holding)") {
				r.FaultsOnHolder++
				if d, ok := deleted[e.Client+"/"+strconv.FormatInt(e.Token, 10)]; ok && d.T == e.T {
					for _, h := range open[e.Client] {
						if h.token == e.Token {
							end(h, e.T, "deleted")
						}
					}
				}
			}
		case KindPartitionFinal:
			s.Finals++
			if e.Accepted {
				s.Details = append(s.Details, e.Client+": "+e.Detail)
			} else {
				r.violate("unowned-after-quiesce", "%s: %s", e.Client, e.Detail)
			}
		}
	}
	s.Grants = len(holds)
	r.Grants = len(holds)
	byItem := map[string][]*partHold{}
	for _, h := range holds {
		if h.endedBy == "" {
			r.violate("open-hold", "%s: %s's hold (token %d) never ended", h.item, h.client, h.token)
			continue
		}
		switch effect, p := freezeOf(pauses[h.client], h.granted, h.end); effect {
		case frozenHolder:
			h.zombieEnd, h.end, h.endedBy = h.end, p.from, "freeze"
			if h.reported >= p.to {
				s.ReportedAfterThaw++
			}
		case grantedWhileFrozen:
			r.violate("grant-while-frozen", "%s: %s's hold (token %d) granted at %s, while its process was stopped (from %s to %s)",
				h.item, h.client, h.token, stamp(h.granted), stamp(p.from), stamp(p.to))
		}
		byItem[h.item] = append(byItem[h.item], h)
	}
	for item, hs := range byItem {
		sort.Slice(hs, func(i, j int) bool { return hs[i].token < hs[j].token })
		for j, b := range hs {
			for _, a := range hs[:j] {
				if b.granted < a.granted {
					r.violateOn([]int64{b.token, a.token}, "token-order", "%s: %s was granted token %d before %s was granted the lower token %d", item, b.client, b.token, a.client, a.token)
					continue
				}
				if b.granted >= a.end {
					if b.granted < a.zombieEnd {
						s.FrozenOverlap++
					}
					continue
				}
				r.violateOn([]int64{b.token, a.token}, "owned-twice", "%s: %s was granted it (token %d) %s before %s stopped trusting its hold (token %d, ended by %s)",
					item, b.client, b.token, time.Duration(a.end-b.granted), a.client, a.token, a.endedBy)
			}
		}
	}
	if s.Grants == 0 {
		r.violate("no-progress", "no item was ever granted")
	}
	if s.Finals == 0 {
		r.violate("no-progress", "no contender reached the end of the run")
	}
	slices.Sort(s.Details)
	return r, s
}

// lossReason is the short form of a loss's error, for the counts.
func lossReason(detail string) string {
	if i := strings.LastIndex(detail, ": "); i >= 0 {
		return detail[i+2:]
	}
	return detail
}

// finishPartition checks the run and writes its files: the partitioner's
// end of Run.
func (r *run) finishPartition(history []Event) *Result {
	r.t.Helper()
	rep, stats := CheckPartition(history)
	attribute(rep, r.replicas, holdTokens(history), func(drop map[int64]bool) []Violation {
		again, _ := CheckPartition(withoutHolds(history, drop))
		return again.Violations
	})
	r.addRunFindings(rep)
	var b strings.Builder
	fmt.Fprintf(&b, "chaos %s: seed %d, %d contenders, %d items, session timeout %s, %s\n",
		r.cfg.Recipe, r.cfg.Seed, r.cfg.Contenders, partitionItems, r.cfg.SessionTimeout, time.Since(r.started).Round(time.Second))
	fmt.Fprintf(&b, "  %d grants, %d releases (moves and the end), %d losses (%s); %d grants while a frozen holder's session had expired; %d granted before a freeze and reported after the thaw\n",
		stats.Grants, stats.Releases, stats.Losses, counts(rep.Losses), stats.FrozenOverlap, stats.ReportedAfterThaw)
	fmt.Fprintf(&b, "  %d contenders saw every item owned at the end: %s\n", stats.Finals, strings.Join(stats.Details, ", "))
	fmt.Fprintf(&b, "  faults: %s\n", counts(rep.Faults))
	writeViolations(&b, rep)
	res := &Result{Config: r.cfg, Report: rep, Summary: b.String()}
	r.writeFiles(history, res)
	return res
}
