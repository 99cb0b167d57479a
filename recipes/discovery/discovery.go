package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
)

const recipe = "service discovery"

// The errors of this package's own.
var (
	// ErrNotRegistered: Update or Unregister of an instance this
	// Discovery did not register (Curator's "Service not registered").
	ErrNotRegistered = errors.New("instance not registered here")
	// ErrNoInstance: a Provider has no instance to give: none registered,
	// or all disabled or noted down (Curator's getInstance returns null).
	ErrNoInstance = errors.New("no instance available")
)

// Discovery is Curator's ServiceDiscovery: it registers this process's
// instances under its base path and finds everyone's. Make one with New;
// its methods may be called from any goroutine.
type Discovery struct {
	client   *framework.Client
	basePath string
	rt       *framework.Runtime // runs the registrations' forwarders and Close's stops

	mu   sync.Mutex
	regs map[string]*registration      // by instance id; none added once rt is closed
	feed framework.Feed[Registrations] // published under mu
}

// New returns a Discovery whose services live under basePath
// (basePath/<name>/<id>), as Curator's ServiceDiscoveryBuilder.basePath.
// Nothing is sent.
func New(client *framework.Client, basePath string) (*Discovery, error) {
	if client == nil {
		return nil, framework.RecipeErr(recipe, basePath, fmt.Errorf("%w: nil client", zkrecipes.ErrInvalidArgument))
	}
	if err := framework.ValidateRecipePath(basePath); err != nil {
		return nil, framework.RecipeErr(recipe, basePath, err)
	}
	return &Discovery{client: client, basePath: basePath, rt: framework.NewRuntime(client, recipe, basePath),
		regs: map[string]*registration{}}, nil
}

func (d *Discovery) usable() error {
	if d == nil || d.client == nil {
		return framework.Invalid(recipe, "Discovery", "New")
	}
	return nil
}

func (d *Discovery) err(err error) error { return framework.RecipeErr(recipe, d.basePath, err) }

// Path returns the base path.
func (d *Discovery) Path() string {
	if d == nil {
		return ""
	}
	return d.basePath
}

// NewInstance returns an enabled (as is every Instance: see Disabled), Dynamic instance of service name with a
// random UUID id and the current time, as Curator's
// ServiceInstance.builder() (which also fills in the first local address;
// set Address yourself).
func NewInstance(name string) Instance {
	return Instance{Name: name, ID: uuid.NewString(), RegistrationTimeUTC: time.Now().UnixMilli(), ServiceType: Dynamic}
}

// checkSegment refuses a name or id that is not one path segment.
func checkSegment(what, s string) error {
	if s == "" || strings.Contains(s, "/") {
		return fmt.Errorf("%w: %s %q is not one path segment", zkrecipes.ErrInvalidArgument, what, s)
	}
	return framework.ValidatePath("/" + s)
}

// check refuses an instance that cannot be registered, before anything
// is sent, and returns its JSON.
func (d *Discovery) check(inst Instance) ([]byte, error) {
	if err := checkSegment("name", inst.Name); err != nil {
		return nil, err
	}
	if err := checkSegment("id", inst.ID); err != nil {
		return nil, err
	}
	if inst.ServiceType != "" && !inst.ServiceType.Valid() {
		return nil, fmt.Errorf("%w: service type %q", zkrecipes.ErrInvalidArgument, inst.ServiceType)
	}
	if len(inst.Payload) > 0 && !json.Valid(inst.Payload) {
		return nil, fmt.Errorf("%w: payload is not JSON", zkrecipes.ErrInvalidArgument)
	}
	data, err := json.Marshal(inst)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", zkrecipes.ErrInvalidArgument, err)
	}
	if err := d.client.CheckCreate(d.instancePath(inst.Name, inst.ID), data); err != nil {
		return nil, fmt.Errorf("instance of %d bytes: %w", len(data), err)
	}
	return data, nil
}

func (d *Discovery) namePath(name string) string { return framework.Join(d.basePath, name) }

func (d *Discovery) instancePath(name, id string) string {
	return framework.Join(d.namePath(name), id)
}

// QueryForNames lists the services under the base path, sorted.
func (d *Discovery) QueryForNames(ctx context.Context) ([]string, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, d.err(zkrecipes.ErrNilContext)
	}
	names, _, err := d.client.Children(ctx, d.basePath)
	if errors.Is(err, zk.ErrNoNode) {
		return []string{}, nil
	}
	if err != nil {
		return nil, d.err(err)
	}
	sort.Strings(names)
	return names, nil
}

// QueryForInstances reads every instance of service name, sorted by id.
// An instance whose node is not Curator's JSON fails it with
// zkrecipes.ErrBadData, as Curator's query throws.
func (d *Discovery) QueryForInstances(ctx context.Context, name string) ([]Instance, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, d.err(zkrecipes.ErrNilContext)
	}
	if err := checkSegment("name", name); err != nil {
		return nil, d.err(err)
	}
	ids, _, err := d.client.Children(ctx, d.namePath(name))
	if errors.Is(err, zk.ErrNoNode) {
		return []Instance{}, nil
	}
	if err != nil {
		return nil, d.err(err)
	}
	sort.Strings(ids)
	out := make([]Instance, 0, len(ids))
	for _, id := range ids {
		inst, ok, err := d.queryForInstance(ctx, name, id)
		if err != nil {
			return nil, d.err(err)
		}
		if ok {
			out = append(out, inst)
		}
	}
	return out, nil
}

// QueryForInstance reads instance id of service name; false if there is
// none.
func (d *Discovery) QueryForInstance(ctx context.Context, name, id string) (Instance, bool, error) {
	if err := d.usable(); err != nil {
		return Instance{}, false, err
	}
	if ctx == nil {
		return Instance{}, false, d.err(zkrecipes.ErrNilContext)
	}
	if err := checkSegment("name", name); err != nil {
		return Instance{}, false, d.err(err)
	}
	if err := checkSegment("id", id); err != nil {
		return Instance{}, false, d.err(err)
	}
	inst, ok, err := d.queryForInstance(ctx, name, id)
	return inst, ok, d.err(err)
}

func (d *Discovery) queryForInstance(ctx context.Context, name, id string) (Instance, bool, error) {
	path := d.instancePath(name, id)
	data, _, err := d.client.Get(ctx, path)
	if errors.Is(err, zk.ErrNoNode) {
		return Instance{}, false, nil
	}
	if err != nil {
		return Instance{}, false, err
	}
	inst, err := decode(path, data)
	return inst, err == nil, err
}

func decode(path string, data []byte) (Instance, error) {
	var inst Instance
	if err := json.Unmarshal(data, &inst); err != nil {
		return Instance{}, fmt.Errorf("%w: %s: %w", zkrecipes.ErrBadData, path, err)
	}
	return inst, nil
}

// Close unregisters every instance this Discovery registered (deleting
// their nodes, guaranteed), as Curator's close, and ends the
// subscriptions. A Register, Update or Unregister from its start on
// returns zkrecipes.ErrClosed. The registrations end side by side, each
// telling the subscriptions its last status (not in place, closed) and
// then its end, before Close returns; each subscription delivers what it
// had queued, then its channel is closed. Caches and providers made from
// it are the caller's to close. It is idempotent.
func (d *Discovery) Close() error {
	if err := d.usable(); err != nil {
		return err
	}
	return d.rt.CloseAfter(d.drain, func(context.Context) error {
		d.feed.End(nil)
		return nil
	})
}

// drain is Close's, once the runtime refuses new registrations and while
// the forwarders still run: it ends the registrations (end) side by side.
// Each waits up to the client's release timeout for its delete, and Close
// keeps that bound however many there are. The runtime refuses only once
// the client is closing: its deletes then fail at once, one after the
// other.
func (d *Discovery) drain(context.Context) error {
	d.mu.Lock()
	regs := make([]*registration, 0, len(d.regs))
	for _, id := range slices.Sorted(maps.Keys(d.regs)) {
		regs = append(regs, d.regs[id])
	}
	d.mu.Unlock()
	var wg sync.WaitGroup
	for _, reg := range regs {
		wg.Add(1)
		end := func(context.Context) {
			defer wg.Done()
			d.end(reg)
		}
		if !d.rt.Go(end) {
			end(context.Background())
		}
	}
	wg.Wait()
	return nil
}
