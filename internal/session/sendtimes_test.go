package session

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// The send times kept without a slice per xid are answered exactly as a
// slice per xid kept them: per xid, oldest first, each once, and a reply to
// nothing sent is not proof (rule 8). Pings share xid -2.
func TestSendTimesAreAnsweredInOrderPerXid(t *testing.T) {
	c := &sniffConn{}
	model := map[int32][]sent{}
	frame := func(xid int32) []byte {
		b := make([]byte, 8)
		binary.BigEndian.PutUint32(b[4:], uint32(xid))
		return b
	}
	xids := []int32{-2, -2, -2, 1, 2, 3, -4, -8}
	for i := range 20000 {
		xid := xids[rand.IntN(len(xids))]
		if rand.IntN(2) == 0 {
			c.noteSent(frame(xid))
			c.mu.Lock()
			q := c.sent[xid]
			last := q.first
			if len(q.more) > 0 {
				last = q.more[len(q.more)-1]
			}
			c.mu.Unlock()
			model[xid] = append(model[xid], last)
			continue
		}
		at, ok := c.answered(xid)
		want := model[xid]
		if len(want) == 0 {
			if ok {
				t.Fatalf("step %d: xid %d answered with nothing sent", i, xid)
			}
			continue
		}
		if !ok || at != want[0] {
			t.Fatalf("step %d: xid %d: got %v %v, want %v", i, xid, at, ok, want[0])
		}
		model[xid] = want[1:]
	}
}
