package chaos

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"

	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

func TestCheckCacheCleanRun(t *testing.T) {
	var h hist
	h.at(0, "c1", KindStart, 0).at(5, "c1", KindCacheStale, 0).at(9, "c1", KindCacheCurrent, 0)
	h.at(60, "", KindQuiesce, 0).at(70, "c1", KindCacheFinal, 0, accepted(true))
	r, s := CheckCache(h)
	assert.Empty(t, r.Violations)
	assert.Equal(t, 1, s.Stale)
	assert.Equal(t, 1, s.Finals)
}

func TestCheckCacheCatchesEachBrokenPromise(t *testing.T) {
	var h hist
	h.at(0, "c1", KindStart, 0).at(5, "c1", KindCacheBroken, 0, detail("created twice: /x"))
	h.at(70, "c1", KindCacheFinal, 0, detail("the cache's view differs"))
	r, _ := CheckCache(h)
	k := kinds(r)
	assert.Equal(t, 1, k["cache-event"])
	assert.Equal(t, 1, k["cache-stale-after-quiesce"])

	var none hist
	none.at(0, "c1", KindStart, 0)
	r, _ = CheckCache(none)
	assert.Equal(t, 1, kinds(r)["no-progress"])
}

// The contender's view catches each kind of event that breaks it.
func TestCacheViewCatchesBrokenEvents(t *testing.T) {
	node := func(p string, czxid, mzxid int64) cache.Node {
		return cache.Node{Path: p, Stat: zk.Stat{Czxid: czxid, Mzxid: mzxid}}
	}
	var v cacheView
	assert.Empty(t, v.apply(cache.Event{Type: cache.Snapshot, Nodes: []cache.Node{node("/a", 1, 1)}}))
	assert.Contains(t, v.apply(cache.Event{Type: cache.Created, Node: node("/a", 1, 1)}), "created twice")
	assert.Contains(t, v.apply(cache.Event{Type: cache.Changed, Node: node("/a", 1, 1)}), "went back")
	assert.Contains(t, v.apply(cache.Event{Type: cache.Changed, Node: node("/a", 7, 8)}), "another incarnation")
	assert.Contains(t, v.apply(cache.Event{Type: cache.Changed, Node: node("/b", 2, 2)}), "not in the view")
	assert.Empty(t, v.apply(cache.Event{Type: cache.Deleted, Node: node("/b", 2, 2)}))
	assert.Contains(t, v.apply(cache.Event{Type: cache.Deleted, Node: node("/b", 2, 2)}), "not in the view")
}
