package framework

import (
	"context"
	"errors"
	"time"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
)

// RecipeMeter records one recipe's instruments, the recipe rows of the
// table in docs/production.md: zkrecipes.acquire.duration,
// zkrecipes.hold.active, zkrecipes.hold.losses and
// zkrecipes.leader.leading, with the recipe's kind (and its path, under
// WithMetricPathAttribute). The module's recipes record through it, and a
// recipe of your own records the same instruments the same way. A nil
// *RecipeMeter records nothing; its methods are safe for concurrent use.
type RecipeMeter struct{ r *metrics.Recipe }

// RecipeMeter returns the instruments of a recipe of kind (the kind
// attribute's value, as "mutex" or your recipe's own name) on path, made
// with the client's MeterProvider.
func (c *Client) RecipeMeter(kind, path string) *RecipeMeter {
	if c.pathAttr {
		return &RecipeMeter{r: metrics.For(c.meters).Recipe(metrics.Kind(kind), path, true)}
	}
	// One per kind, made once: a lock per entity makes a recipe, and so
	// asks for its meter, per operation.
	c.metersMu.Lock()
	defer c.metersMu.Unlock()
	m, ok := c.recipeMeters[kind]
	if !ok {
		m = &RecipeMeter{r: metrics.For(c.meters).Recipe(metrics.Kind(kind), path, false)}
		if c.recipeMeters == nil {
			c.recipeMeters = map[string]*RecipeMeter{}
		}
		c.recipeMeters[kind] = m
	}
	return m
}

// Acquire records one acquire that began at start and ended with err: its
// outcome attribute is "acquired" for nil, "would_block" for
// zkrecipes.ErrWouldBlock, "timeout" for a deadline, "cancelled" for a
// cancelled context or zkrecipes.ErrClosed, and "error" otherwise. ctx
// carries the measurement's context (its baggage, say); a nil ctx records
// under context.Background.
func (m *RecipeMeter) Acquire(ctx context.Context, start time.Time, err error) {
	if m == nil {
		return
	}
	if ctx == nil {
		ctx = context.Background()
	}
	m.r.Acquire(ctx, start, outcome(err))
}

func outcome(err error) metrics.Outcome {
	switch {
	case err == nil:
		return metrics.Acquired
	case errors.Is(err, zkrecipes.ErrWouldBlock):
		return metrics.WouldBlock
	case errors.Is(err, context.DeadlineExceeded):
		return metrics.Timeout
	case errors.Is(err, context.Canceled), errors.Is(err, zkrecipes.ErrClosed):
		return metrics.Cancelled
	}
	return metrics.Failed
}

// LossReason is why a hold stopped being trusted before its release: the
// reason attribute of zkrecipes.hold.losses.
type LossReason int

// The reasons a hold is lost.
const (
	LostSuspended    LossReason = iota // the link was in doubt (ErrSuspended)
	LostSession                        // the session is gone (ErrSessionLost)
	LostNodeDeleted                    // its node was deleted or re-created by someone else (ErrNodeDeleted)
	LostClientClosed                   // its client was closed under it
	LostLeaseExpired                   // its lease time ran out (ErrLeaseExpired)
)

// lossReasons maps the public reasons to the instruments' own.
var lossReasons = [...]metrics.Reason{
	LostSuspended:    metrics.Suspended,
	LostSession:      metrics.SessionLost,
	LostNodeDeleted:  metrics.NodeDeleted,
	LostClientClosed: metrics.Closed,
	LostLeaseExpired: metrics.LeaseExpired,
}

// HoldStarted counts a hold that is now held and trusted.
func (m *RecipeMeter) HoldStarted() {
	if m == nil {
		return
	}
	m.r.HoldStarted()
}

// HoldEnded counts a hold that is no longer held: released (lost false),
// or lost for reason.
func (m *RecipeMeter) HoldEnded(lost bool, reason LossReason) {
	if m == nil {
		return
	}
	r := metrics.Reason(0)
	if lost && reason >= 0 && int(reason) < len(lossReasons) {
		r = lossReasons[reason]
	}
	m.r.HoldEnded(lost, r)
}

// Leading counts a participant that began (true) or stopped (false)
// leading.
func (m *RecipeMeter) Leading(leads bool) {
	if m == nil {
		return
	}
	m.r.Leading(leads)
}

// String is the reason attribute's value: "suspended", "session_lost",
// "node_deleted", "closed" or "lease_expired".
func (r LossReason) String() string {
	if r < 0 || int(r) >= len(lossReasons) {
		return "unknown"
	}
	return lossReasons[r].String()
}
