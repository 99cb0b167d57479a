package shared

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
)

// EncodeCount returns n in Curator's SharedCount format: 4 bytes,
// big-endian (Java's ByteBuffer.putInt).
func EncodeCount(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }

// DecodeCount reads Curator's SharedCount format. Data that is not exactly
// 4 bytes is not a count: the error wraps zkrecipes.ErrBadData. (Curator reads the
// first 4 bytes of longer data and fails on shorter.)
func DecodeCount(data []byte) (int32, error) {
	if len(data) != 4 {
		return 0, fmt.Errorf("%w: %d bytes", zkrecipes.ErrBadData, len(data))
	}
	return int32(binary.BigEndian.Uint32(data)), nil
}

// decodeVersioned is raw as a count, if it holds one.
func decodeVersioned(raw Versioned[[]byte]) (Versioned[int32], bool) {
	n, err := DecodeCount(raw.Value)
	return Versioned[int32]{Value: n, Version: raw.Version, Zxid: raw.Zxid, Stale: raw.Stale}, err == nil
}

// Count is a Curator SharedCount: an int32 shared through one node, in
// Curator's format. It is a Value whose data is EncodeCount's; everything
// the Value's methods say holds for the Count's. Make one with NewCount.
type Count struct {
	v *Value
}

// NewCount returns a Count on path whose node, if missing when Start runs,
// is made with seed. Nothing is sent before Start.
func NewCount(client *framework.Client, path string, seed int32) (*Count, error) {
	v, err := newValue(countRecipe, client, path, EncodeCount(seed))
	if err != nil {
		return nil, err
	}
	return &Count{v: v}, nil
}

// usable says why c cannot be used: it is nil or a zero Count.
func (c *Count) usable() error {
	if c == nil || c.v == nil {
		return framework.Invalid(countRecipe, "Count", "NewCount")
	}
	return nil
}

// Path returns the node's path.
func (c *Count) Path() string {
	if c.usable() != nil {
		return ""
	}
	return c.v.path
}

// Start makes the node with the seed if it is missing and follows it until
// Close; see Value.Start.
func (c *Count) Start(ctx context.Context) error {
	if err := c.usable(); err != nil {
		return err
	}
	return c.v.Start(ctx)
}

// Get returns the count last read or written, with its version. If the
// node's data is not a count the error wraps zkrecipes.ErrBadData, and the
// version is still returned (TrySet can replace the data).
func (c *Count) Get() (Versioned[int32], error) {
	if err := c.usable(); err != nil {
		return Versioned[int32]{}, err
	}
	raw, err := c.v.Get()
	if err != nil {
		return Versioned[int32]{}, err
	}
	return c.decode(raw)
}

func (c *Count) decode(raw Versioned[[]byte]) (Versioned[int32], error) {
	n, err := DecodeCount(raw.Value)
	out := Versioned[int32]{Value: n, Version: raw.Version, Zxid: raw.Zxid}
	if err != nil {
		return out, c.v.err(err)
	}
	return out, nil
}

// Set writes n whatever the node holds; see Value.Set.
func (c *Count) Set(ctx context.Context, n int32) (Versioned[int32], error) {
	if err := c.usable(); err != nil {
		return Versioned[int32]{}, err
	}
	raw, err := c.v.Set(ctx, EncodeCount(n))
	if err != nil {
		return Versioned[int32]{}, err
	}
	return c.decode(raw)
}

// TrySet writes n only if the node is still at previous's version, and
// reports whether it did; see Value.TrySet. When it did not, it returns
// the count read again (with zkrecipes.ErrBadData if the node's data is
// not a count).
func (c *Count) TrySet(ctx context.Context, previous Versioned[int32], n int32) (Versioned[int32], bool, error) {
	if err := c.usable(); err != nil {
		return Versioned[int32]{}, false, err
	}
	raw, ok, err := c.v.TrySet(ctx, Versioned[[]byte]{Version: previous.Version, Zxid: previous.Zxid}, EncodeCount(n))
	if err != nil && !errors.Is(err, zkrecipes.ErrRecreated) {
		return Versioned[int32]{}, false, err
	}
	out, derr := c.decode(raw)
	if err != nil {
		return out, ok, err
	}
	return out, ok, derr
}

// Err says whether Get may be stale; see Value.Err.
func (c *Count) Err() error {
	if err := c.usable(); err != nil {
		return err
	}
	return c.v.Err()
}

// Subscribe returns a subscription to the counts read or written from now
// on; see Value.Subscribe. Data that is not a count is skipped (Get
// reports it). A reader that falls more than framework.DefaultBound
// changes behind is told, never skipped silently: the subscription ends,
// its Err wrapping zkrecipes.ErrFellBehind (docs/vocabulary.md).
// A nil or zero Count's subscription has ended.
func (c *Count) Subscribe() *framework.Subscription[Versioned[int32]] {
	if c.usable() != nil {
		return ended[Versioned[int32]]()
	}
	return subscribe(c.v, &c.v.counts, decodeVersioned)
}

// Close stops following the node and ends every subscription; see
// Value.Close.
func (c *Count) Close() error {
	if err := c.usable(); err != nil {
		return err
	}
	return c.v.Close()
}
