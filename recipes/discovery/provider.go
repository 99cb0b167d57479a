package discovery

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
)

// Strategy picks one instance of a non-empty list, as Curator's
// ProviderStrategy. RoundRobin, Random and Sticky are Curator's.
type Strategy interface {
	Pick(instances []Instance) Instance
}

type roundRobin struct {
	mu   sync.Mutex
	next int
}

// RoundRobin takes the instances in turn (Curator's RoundRobinStrategy, the
// default).
func RoundRobin() Strategy { return &roundRobin{} }

func (r *roundRobin) Pick(instances []Instance) Instance {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := r.next % len(instances)
	r.next = (r.next + 1) % (1 << 30)
	return instances[i]
}

type random struct{}

// Random takes an instance at random (Curator's RandomStrategy).
func Random() Strategy { return random{} }

func (random) Pick(instances []Instance) Instance { return instances[rand.IntN(len(instances))] }

type sticky struct {
	master Strategy
	mu     sync.Mutex
	ours   *Instance
}

// Sticky keeps giving the instance it gave first for as long as it is
// available, then picks another with master (Curator's StickyStrategy).
// master must not be nil: a Provider with Sticky(nil) is refused.
func Sticky(master Strategy) Strategy { return &sticky{master: master} }

// check refuses a sticky strategy with nothing to pick the first
// instance with, when the Provider is made, not at its first pick.
func (s *sticky) check() error {
	if s.master == nil {
		return fmt.Errorf("%w: Sticky over a nil strategy", zkrecipes.ErrInvalidArgument)
	}
	return nil
}

func (s *sticky) Pick(instances []Instance) Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ours != nil {
		for _, inst := range instances {
			if inst.Name == s.ours.Name && inst.ID == s.ours.ID {
				return inst
			}
		}
	}
	inst := s.master.Pick(instances)
	s.ours = &inst
	return inst
}

// ProviderOption configures a Provider (Discovery.NewProvider).
type ProviderOption interface{ applyProvider(*providerConfig) }

type providerOption func(*providerConfig)

func (f providerOption) applyProvider(c *providerConfig) { f(c) }

type providerConfig struct {
	strategy  Strategy
	downFor   time.Duration
	threshold int
	err       error
}

// WithStrategy sets how the Provider picks (default RoundRobin()).
func WithStrategy(s Strategy) ProviderOption {
	return providerOption(func(c *providerConfig) {
		if s == nil && c.err == nil {
			c.err = fmt.Errorf("%w: nil strategy", zkrecipes.ErrInvalidArgument)
		}
		// A strategy over another (Sticky) says whether it can pick.
		if v, ok := s.(interface{ check() error }); ok && c.err == nil {
			c.err = v.check()
		}
		c.strategy = s
	})
}

// WithDownInstancePolicy sets Curator's DownInstancePolicy: an instance
// noted in error threshold times (NoteError) is left out for d from its
// first error (default 30 s and 2). d must be positive, threshold at
// least 1.
func WithDownInstancePolicy(d time.Duration, threshold int) ProviderOption {
	return providerOption(func(c *providerConfig) {
		if (d <= 0 || threshold < 1) && c.err == nil {
			c.err = fmt.Errorf("%w: down instance policy %v, %d errors", zkrecipes.ErrInvalidArgument, d, threshold)
		}
		c.downFor, c.threshold = d, threshold
	})
}

// Provider is Curator's ServiceProvider: it gives one instance of a
// service at a time, from a Cache, leaving out disabled instances and
// those noted down. Make one with Discovery.NewProvider.
type Provider struct {
	cache *Cache
	cfg   providerConfig

	mu   sync.Mutex
	down map[string]*downStatus // by id
}

type downStatus struct {
	since  time.Time
	errors int
}

// NewProvider returns a Provider of service name's instances. Nothing is
// sent before Start.
func (d *Discovery) NewProvider(name string, opts ...ProviderOption) (*Provider, error) {
	cache, err := d.NewCache(name)
	if err != nil {
		return nil, err
	}
	cfg := providerConfig{strategy: RoundRobin(), downFor: 30 * time.Second, threshold: 2}
	for _, o := range opts {
		if o != nil {
			o.applyProvider(&cfg)
		}
	}
	if cfg.err != nil {
		return nil, framework.RecipeErr(providerRecipe, cache.path, cfg.err)
	}
	// The cache's lifecycle is the Provider's, and says so in its errors.
	cache.rt = framework.NewRuntime(d.client, providerRecipe, cache.path)
	return &Provider{cache: cache, cfg: cfg, down: map[string]*downStatus{}}, nil
}

// providerRecipe is the Provider's name in its errors.
const providerRecipe = "service provider"

func (p *Provider) usable() error {
	if p == nil || p.cache == nil {
		return framework.Invalid(providerRecipe, "Provider", "Discovery.NewProvider")
	}
	return nil
}

func (p *Provider) err(err error) error {
	return framework.RecipeErr(providerRecipe, p.cache.path, err)
}

// Path returns basePath/<name>.
func (p *Provider) Path() string {
	if p == nil {
		return ""
	}
	return p.cache.Path()
}

// Start starts the Provider's cache (Cache.Start).
func (p *Provider) Start(ctx context.Context) error {
	if err := p.usable(); err != nil {
		return err
	}
	return p.cache.rt.Start(ctx, p.cache.begin)
}

// Instances returns every instance the cache holds, disabled and down ones
// included (Curator's getAllInstances), and the cache's staleness.
func (p *Provider) Instances() ([]Instance, error) {
	if err := p.usable(); err != nil {
		return nil, err
	}
	insts, err := p.cache.instances()
	return insts, p.err(err)
}

// Instance picks an enabled instance not noted down, with the strategy;
// ErrNoInstance if there is none. A stale view is used all the same
// (Curator's is too): it is the last the cache read.
func (p *Provider) Instance() (Instance, error) {
	if err := p.usable(); err != nil {
		return Instance{}, err
	}
	all, err := p.cache.instances()
	if all == nil && err != nil {
		return Instance{}, p.err(err)
	}
	p.mu.Lock()
	now := time.Now()
	for id, st := range p.down {
		if now.Sub(st.since) >= p.cfg.downFor {
			delete(p.down, id)
		}
	}
	usable := make([]Instance, 0, len(all))
	for _, inst := range all {
		if st, ok := p.down[inst.ID]; !inst.Disabled && (!ok || st.errors < p.cfg.threshold) {
			usable = append(usable, inst)
		}
	}
	p.mu.Unlock()
	if len(usable) == 0 {
		return Instance{}, p.err(ErrNoInstance)
	}
	return p.cfg.strategy.Pick(usable), nil
}

// NoteError notes that inst failed (Curator's noteError): once it has
// failed as often as the policy's threshold, Instance leaves it out until
// the policy's time has passed since its first error.
func (p *Provider) NoteError(inst Instance) {
	if p.usable() != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.down[inst.ID]
	if !ok {
		st = &downStatus{since: time.Now()}
		p.down[inst.ID] = st
	}
	st.errors++
}

// Close closes the Provider's cache. It is idempotent.
func (p *Provider) Close() error {
	if err := p.usable(); err != nil {
		return err
	}
	return p.cache.Close()
}
