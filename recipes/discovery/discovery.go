package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/errs"
	"github.com/zkrecipes/zkrecipes/recipes/persistent"
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

	mu     sync.Mutex
	closed bool
	regs   map[string]*registration // by instance id
}

// registration is one instance this Discovery keeps registered.
type registration struct {
	inst Instance
	node *persistent.Node
	// started is closed once the Register that made it has returned: its
	// node started, or the registration forgotten.
	started chan struct{}
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
	return &Discovery{client: client, basePath: basePath, regs: map[string]*registration{}}, nil
}

func (d *Discovery) usable() error {
	if d == nil || d.client == nil {
		return framework.RecipeErr(recipe, "", fmt.Errorf("%w: a nil or zero Discovery: make one with New", zkrecipes.ErrInvalidArgument))
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

// Register registers inst under basePath/<name>/<id> and keeps it
// registered until Unregister or Close: a Dynamic instance's ephemeral
// node is made again after a session loss, or a delete by someone else,
// as Curator re-registers on reconnection. A node at the path left by
// another session (this instance's previous process, say) is replaced,
// as Curator's registerService does. It returns once the node is in
// place. Registering an id again updates it (Update); a Register of
// the id still in progress, from another goroutine, is waited for
// first. Two live
// registrations of one id (two processes, say) do not take the node from
// each other: the one that finds the other's node waits, and its error
// when ctx ends wraps persistent.ErrOtherOwner.
func (d *Discovery) Register(ctx context.Context, inst Instance) error {
	if err := d.usable(); err != nil {
		return err
	}
	if ctx == nil {
		return d.err(errs.ErrNilContext)
	}
	data, err := d.check(inst)
	if err != nil {
		return d.err(err)
	}
	if inst.ServiceType == "" {
		inst.ServiceType = Dynamic
	}
	for {
		reg, err := d.registered(ctx, inst.ID)
		switch {
		case err != nil:
			return d.err(err)
		case reg != nil:
			return d.update(ctx, reg, inst, data)
		}
		d.mu.Lock()
		if d.closed {
			d.mu.Unlock()
			return d.err(zkrecipes.ErrClosed)
		}
		if _, ok := d.regs[inst.ID]; !ok {
			break // d.mu held: this Register makes the registration
		}
		d.mu.Unlock() // another Register was quicker: wait for it
	}
	path := d.instancePath(inst.Name, inst.ID)
	var opts []persistent.Option
	switch inst.ServiceType {
	case Static, Permanent:
		opts = append(opts, persistent.Persistent())
	case DynamicSequential:
		// Protected, so that a create whose reply was lost finds its
		// node instead of registering the instance twice (Curator's
		// registerService does not protect it: a phantom instance
		// stays). Curator's readers list the children and read the
		// JSON: the prefix is invisible to them.
		opts = append(opts, persistent.Sequential(), persistent.Protected())
	}
	node, err := persistent.New(d.client, path, data, opts...)
	if err != nil {
		d.mu.Unlock()
		return d.err(err)
	}
	reg := &registration{inst: inst, node: node, started: make(chan struct{})}
	d.regs[inst.ID] = reg
	d.mu.Unlock()
	defer close(reg.started)

	if inst.ServiceType != DynamicSequential {
		if err := d.replaceForeign(ctx, path); err != nil {
			d.forget(reg)
			return d.err(err)
		}
	}
	if err := node.Start(ctx); err != nil {
		d.forget(reg)
		return d.err(err)
	}
	return nil
}

// replaceForeign deletes an ephemeral node of another session at path,
// as Curator's registerService deletes whatever is there.
func (d *Discovery) replaceForeign(ctx context.Context, path string) error {
	c := d.client
	s, err := c.WaitConnected(ctx)
	if err != nil {
		return err
	}
	ok, st, err := c.Exists(ctx, path)
	if err != nil || !ok || st.EphemeralOwner == 0 || st.EphemeralOwner == s.ID {
		return err
	}
	// By version, so that a node made again meanwhile is not touched.
	err = c.Delete(ctx, path, st.Version)
	if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion) {
		return nil
	}
	return err
}

// registered returns this Discovery's registration of id once the
// Register that makes it has returned, nil if there is none (or that
// Register failed), or ctx's error.
func (d *Discovery) registered(ctx context.Context, id string) (*registration, error) {
	d.mu.Lock()
	reg, closed := d.regs[id], d.closed
	d.mu.Unlock()
	switch {
	case closed:
		return nil, zkrecipes.ErrClosed
	case reg == nil:
		return nil, nil
	}
	select {
	case <-reg.started:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, zkrecipes.ErrClosed
	}
	if d.regs[id] != reg {
		return nil, nil
	}
	return reg, nil
}

func (d *Discovery) forget(reg *registration) {
	d.mu.Lock()
	if d.regs[reg.inst.ID] == reg {
		delete(d.regs, reg.inst.ID)
	}
	d.mu.Unlock()
	_ = reg.node.Close()
}

// Update writes inst, an instance this Discovery registered (same id),
// over its node, as Curator's updateService. The data is kept for every
// re-registration. A Register of the id still in progress is waited for
// first. It fails with ErrNotRegistered for an id it did not register.
func (d *Discovery) Update(ctx context.Context, inst Instance) error {
	if err := d.usable(); err != nil {
		return err
	}
	if ctx == nil {
		return d.err(errs.ErrNilContext)
	}
	data, err := d.check(inst)
	if err != nil {
		return d.err(err)
	}
	reg, err := d.registered(ctx, inst.ID)
	switch {
	case err != nil:
		return d.err(err)
	case reg == nil:
		return d.err(fmt.Errorf("%w: %s/%s", ErrNotRegistered, inst.Name, inst.ID))
	}
	return d.update(ctx, reg, inst, data)
}

func (d *Discovery) update(ctx context.Context, reg *registration, inst Instance, data []byte) error {
	if inst.Name != reg.inst.Name || (inst.ServiceType != "" && inst.ServiceType != reg.inst.ServiceType) {
		return d.err(fmt.Errorf("%w: instance %s is registered as %s (%s): unregister it first",
			zkrecipes.ErrInvalidArgument, inst.ID, reg.inst.Name, reg.inst.ServiceType))
	}
	if err := reg.node.Set(ctx, data); err != nil {
		return d.err(err)
	}
	d.mu.Lock()
	reg.inst = inst
	d.mu.Unlock()
	return nil
}

// Unregister deletes the node of inst (by id), an instance this Discovery
// registered, guaranteed, and stops keeping it registered. It fails with
// ErrNotRegistered for an id it did not register, and with
// zkrecipes.ErrClosed after Close (which unregistered everything).
func (d *Discovery) Unregister(inst Instance) error {
	if err := d.usable(); err != nil {
		return err
	}
	d.mu.Lock()
	reg, ok := d.regs[inst.ID]
	if ok {
		delete(d.regs, inst.ID)
	}
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return d.err(zkrecipes.ErrClosed)
	}
	if !ok {
		return d.err(fmt.Errorf("%w: %s/%s", ErrNotRegistered, inst.Name, inst.ID))
	}
	return d.err(reg.node.Close())
}

// Registration returns where this Discovery's registration of id stands
// (its node's persistent.Status), and false if it registered no such id.
func (d *Discovery) Registration(id string) (persistent.Status, bool) {
	if d.usable() != nil {
		return persistent.Status{}, false
	}
	d.mu.Lock()
	reg, ok := d.regs[id]
	d.mu.Unlock()
	if !ok {
		return persistent.Status{}, false
	}
	return reg.node.Status(), true
}

// QueryForNames lists the services under the base path, sorted.
func (d *Discovery) QueryForNames(ctx context.Context) ([]string, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, d.err(errs.ErrNilContext)
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
		return nil, d.err(errs.ErrNilContext)
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
		return Instance{}, false, d.err(errs.ErrNilContext)
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
// their nodes, guaranteed), as Curator's close. Caches and providers made
// from it are the caller's to close. It is idempotent.
func (d *Discovery) Close() error {
	if err := d.usable(); err != nil {
		return err
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	regs := d.regs
	d.regs = map[string]*registration{}
	d.mu.Unlock()
	for _, reg := range regs {
		_ = reg.node.Close()
	}
	return nil
}
