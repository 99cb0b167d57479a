package countdown

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
)

// state is one read of the latch.
type state struct {
	exists    bool
	remaining int
	version   int32 // path's data version at the read
	gen       string
	kids      []string
}

// look reads the latch for a count-down without listing it, whatever its
// count: path's count and version with one Get, and which latch it is from
// the handle's memory of the last one it set or counted on. The count-down
// multi checks that gen- child, so a latch replaced meanwhile fails it and
// is read again with a listing (read), as a handle's first count-down is,
// and a latch at zero, which only the listing may declare finished.
func (l *Countdown) look(ctx context.Context) (state, error) {
	l.mu.Lock()
	gen := l.gen
	l.mu.Unlock()
	if gen == "" {
		return l.read(ctx)
	}
	data, st, err := l.client.Get(ctx, l.path)
	if errors.Is(err, zk.ErrNoNode) {
		return state{}, nil
	}
	if err != nil {
		return state{}, err
	}
	n, err := decode(data)
	if err != nil {
		return state{}, err
	}
	if n <= 0 {
		return l.read(ctx)
	}
	return state{exists: true, remaining: n, version: st.Version, gen: gen}, nil
}

// read reads the latch's count and children as of one data version of
// path: a count-down changes both in one multi.
func (l *Countdown) read(ctx context.Context) (state, error) {
	for {
		data, st, err := l.client.Get(ctx, l.path)
		if errors.Is(err, zk.ErrNoNode) {
			return state{}, nil
		}
		if err != nil {
			return state{}, err
		}
		kids, kst, err := l.client.Children(ctx, l.path)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return state{}, err
		}
		if kst.Czxid != st.Czxid || kst.Version != st.Version {
			continue // changed between the two reads
		}
		n, err := decode(data)
		if err != nil {
			return state{}, err
		}
		s := state{exists: true, remaining: n, version: st.Version, kids: kids}
		for _, k := range kids {
			if strings.HasPrefix(k, genPrefix) {
				s.gen = k
			}
		}
		return s, nil
	}
}

// finish deletes a latch at zero: its children, then path at the version
// that holds zero, so that a latch set anew meanwhile is never touched
// (its children have other names, and it has another version or a gen-
// child that keeps the delete of path from applying).
//
// Callers that counted delete their own cd- children meanwhile: a
// child's delete that finds it gone is dropped from the multi and the
// rest sent again. No cd- child is made once the count is zero (each
// count-down sets the count at the version it read above zero), so that
// ends.
func (l *Countdown) finish(ctx context.Context) error {
	var err error
	for range 5 {
		var s state
		s, err = l.read(ctx)
		if err != nil || !s.exists || s.remaining > 0 {
			return err
		}
		if s.gen == "" {
			return fmt.Errorf("%w: no %s child", zkrecipes.ErrBadData, genPrefix)
		}
		var cds []string
		for _, k := range s.kids {
			switch {
			case k == s.gen:
			case strings.HasPrefix(k, cdPrefix):
				cds = append(cds, k)
			default:
				// Someone else's node under the latch: deleting the latch
				// would take it too.
				return fmt.Errorf("%w: a child %q that no latch makes", zkrecipes.ErrBadData, k)
			}
		}
		for len(cds) > deleteBatch {
			if err = l.deleteKids(ctx, cds[:deleteBatch]); err != nil {
				break
			}
			cds = cds[deleteBatch:]
		}
		if err != nil {
			continue
		}
		// The gen- child goes last, with path: it says "a latch", not
		// "finished".
		if err = l.deleteKids(ctx, cds,
			&zk.DeleteRequest{Path: framework.Join(l.path, s.gen), Version: -1},
			&zk.DeleteRequest{Path: l.path, Version: s.version},
		); err == nil {
			return nil
		}
		// Someone else deleted the latch, or it changed: read again.
	}
	return err
}

// deleteKids deletes the latch's cd- children names, and then the ops
// after, in one multi, sent again without each child found gone (deleted
// by the call that made it).
func (l *Countdown) deleteKids(ctx context.Context, names []string, after ...any) error {
	names = slices.Clone(names)
	for {
		ops := append(deletes(l.path, names), after...)
		if len(ops) == 0 {
			return nil
		}
		_, err := l.client.Multi(ctx, ops...)
		var me *framework.MultiOpError
		if !errors.As(err, &me) || me.Index >= len(names) || !errors.Is(me.Err, zk.ErrNoNode) {
			return err
		}
		names = slices.Delete(names, me.Index, me.Index+1)
	}
}

func deletes(parent string, names []string) []any {
	ops := make([]any, 0, len(names)+1)
	for _, n := range names {
		ops = append(ops, &zk.DeleteRequest{Path: framework.Join(parent, n), Version: -1})
	}
	return ops
}
