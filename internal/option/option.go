// Package option is the one option shape of every recipe: each recipe
// package declares
//
//	type Option func(*option.Config) error
//
// and exports the constructors that apply to it, built from the ones here,
// so that an option name means the same thing, and is checked the same
// way, in every recipe. A recipe builds its Config with Build, which also
// refuses an option that does not apply to it (two recipes of one package
// may take different options).
package option

import (
	"fmt"
	"slices"
	"time"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
	"github.com/zkrecipes/zkrecipes/internal/participant"
	"github.com/zkrecipes/zkrecipes/retry"
)

// Name names an option, as its constructor is called.
type Name string

// The options of the recipes.
const (
	ParticipantID Name = "WithParticipantID"
	Revocable     Name = "WithRevocable"
	AutoRequeue   Name = "WithAutoRequeue"
	ErrorHandler  Name = "WithErrorHandler"
	LeaseTime     Name = "WithLeaseTime"
	// The atomic counters' (recipes/atomic).
	RetryPolicy    Name = "WithRetryPolicy"
	PromotedToLock Name = "WithPromotedToLock"
)

// Config is what the options of one recipe set.
type Config struct {
	// ID is the data of the recipe's nodes: the participant id (default:
	// participant.Default(), as Curator).
	ID          []byte
	Revocable   bool
	AutoRequeue bool
	OnError     func(error)
	// Lease, if positive, is how long each hold lasts at most unless
	// extended (WithLeaseTime).
	Lease time.Duration
	// Kind, if set, is the recipe's kind in the metrics instead of its
	// own: a recipe built on another (a selector on a mutex) says what it
	// is. Only this module can set it (WithKind).
	Kind *metrics.Kind
	// Retry, if set, is the policy of a recipe's own retries (the atomic
	// counters' optimistic tries).
	Retry *retry.Policy
	// Promotion, if set, is the lock an atomic counter falls back to.
	Promotion *Promotion

	given []Name
}

// Func is the shape of every recipe's Option.
type Func = func(*Config) error

func mark(c *Config, n Name) { c.given = append(c.given, n) }

// WithParticipantID sets the participant id; it must not be empty.
func WithParticipantID(id string) Func {
	return func(c *Config) error {
		mark(c, ParticipantID)
		if id == "" {
			return fmt.Errorf("%w: empty participant id", zkrecipes.ErrInvalidArgument)
		}
		c.ID = []byte(id)
		return nil
	}
}

// CheckID refuses, when a recipe is made, a participant id too large for
// the server as the data of a node the recipe writes it to: check is the
// client's check (framework.Client.CheckCreate or CheckMulti) of the
// recipe's largest such write, given the id as its data. The error names
// the recipe and its path, and wraps zkrecipes.ErrInvalidArgument and check's
// (zkrecipes.ErrTooLarge).
func (c *Config) CheckID(recipe, path string, check func(id []byte) error) error {
	if err := check(c.ID); err != nil {
		return fmt.Errorf("%s %s: %w: participant id of %d bytes: %w", recipe, path, zkrecipes.ErrInvalidArgument, len(c.ID), err)
	}
	return nil
}

// CheckQueueID is CheckID for a recipe that queues with the engine: its
// nodes are protected ephemeral-sequential nodes named, in dir, each of
// names followed by a sequence number.
func (c *Config) CheckQueueID(client *framework.Client, recipe, dir string, names ...string) error {
	return c.CheckID(recipe, dir, func(id []byte) error {
		for _, name := range names {
			err := client.CheckCreate(framework.Join(dir, name), id,
				framework.WithMode(framework.EphemeralSequential), framework.Protected())
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// WithRevocable makes holds follow Curator's revocation requests.
func WithRevocable() Func {
	return func(c *Config) error { mark(c, Revocable); c.Revocable = true; return nil }
}

// WithLeaseTime makes every hold end by itself d after it is granted
// (unless extended), its node deleted; d must be positive.
func WithLeaseTime(d time.Duration) Func {
	return func(c *Config) error {
		mark(c, LeaseTime)
		if d <= 0 {
			return fmt.Errorf("%w: lease time %v is not positive", zkrecipes.ErrInvalidArgument, d)
		}
		c.Lease = d
		return nil
	}
}

// WithAutoRequeue makes a leader selector compete again after each term.
func WithAutoRequeue() Func {
	return func(c *Config) error { mark(c, AutoRequeue); c.AutoRequeue = true; return nil }
}

// WithErrorHandler receives a leader selector's errors; it must not be nil.
func WithErrorHandler(f func(error)) Func {
	return func(c *Config) error {
		mark(c, ErrorHandler)
		if f == nil {
			return fmt.Errorf("%w: nil error handler", zkrecipes.ErrInvalidArgument)
		}
		c.OnError = f
		return nil
	}
}

// Promotion is Curator's PromotedToLock: the mutex an atomic counter takes
// when its optimistic tries are used up, how long it waits for it, and the
// policy of its tries under it.
type Promotion struct {
	Path    string
	Timeout time.Duration
	Retry   retry.Policy
}

// WithRetryPolicy sets a recipe's own retry policy.
func WithRetryPolicy(p retry.Policy) Func {
	return func(c *Config) error { mark(c, RetryPolicy); c.Retry = &p; return nil }
}

// WithPromotedToLock sets the lock an atomic counter is promoted to: a
// valid lock path and a positive timeout.
func WithPromotedToLock(path string, timeout time.Duration, p retry.Policy) Func {
	return func(c *Config) error {
		mark(c, PromotedToLock)
		if err := framework.ValidateRecipePath(path); err != nil {
			return fmt.Errorf("%w: promoted lock path: %w", zkrecipes.ErrInvalidArgument, err)
		}
		if timeout <= 0 {
			return fmt.Errorf("%w: promoted lock timeout %v: must be positive", zkrecipes.ErrInvalidArgument, timeout)
		}
		c.Promotion = &Promotion{Path: path, Timeout: timeout, Retry: p}
		return nil
	}
}

// WithKind makes a recipe count in the metrics as kind: for a recipe built
// on another. It is no user's option: it is not marked, so every recipe
// takes it.
func WithKind(kind metrics.Kind) Func {
	return func(c *Config) error { c.Kind = &kind; return nil }
}

// KindOr is the kind the recipe counts as: Kind if set, else own.
func (c *Config) KindOr(own metrics.Kind) metrics.Kind {
	if c.Kind != nil {
		return *c.Kind
	}
	return own
}

// Build applies opts (nil ones are skipped) for recipe, refusing any
// option not in allowed with an error wrapping zkrecipes.ErrInvalidArgument.
func Build[O ~func(*Config) error](recipe string, allowed []Name, opts []O) (Config, error) {
	var c Config
	for _, o := range opts {
		if o == nil {
			continue
		}
		before := len(c.given)
		if err := o(&c); err != nil {
			return Config{}, fmt.Errorf("%s: %w", recipe, err)
		}
		if len(c.given) == before {
			continue
		}
		if n := c.given[len(c.given)-1]; !slices.Contains(allowed, n) {
			return Config{}, fmt.Errorf("%s: %w: %s does not apply", recipe, zkrecipes.ErrInvalidArgument, n)
		}
	}
	if c.ID == nil {
		c.ID = []byte(participant.Default())
	}
	return c, nil
}
