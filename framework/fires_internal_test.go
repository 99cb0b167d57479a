package framework

import (
	"testing"

	"github.com/go-zookeeper/zk"
)

// The router must fire exactly the watches go-zookeeper fires for its own
// channels (Conn.notifyWatches, invalidateWatches): a kind fired too often
// costs a needless read, one never fired leaves a recipe deaf.
func TestFiresMatchesGoZookeeperPerEventAndKind(t *testing.T) {
	kinds := []WatchKind{WatchData, WatchExists, WatchChildren}
	want := map[zk.EventType][]WatchKind{
		zk.EventNodeCreated:         {WatchExists},
		zk.EventNodeDataChanged:     {WatchData, WatchExists},
		zk.EventNodeChildrenChanged: {WatchChildren},
		zk.EventNodeDeleted:         {WatchData, WatchExists, WatchChildren},
		zk.EventNotWatching:         {WatchData, WatchExists, WatchChildren},
		zk.EventSession:             nil,
		zk.EventType(0):             nil,
	}
	for typ, fired := range want {
		for _, k := range kinds {
			expect := false
			for _, f := range fired {
				expect = expect || f == k
			}
			if got := fires(typ, k); got != expect {
				t.Errorf("fires(%v, kind %d) = %v, want %v", typ, k, got, expect)
			}
		}
	}
}
