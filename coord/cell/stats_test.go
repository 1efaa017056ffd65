package cell_test

import (
	"sync"
	"testing"
	"time"

	"github.com/cellardb/cellar/coord"
	"github.com/cellardb/cellar/coord/cell"
	"github.com/cellardb/cellar/coord/client"
)

// TestStatsAndKeepAliveHook: a replica's Stats count the sessions and
// held locks and name the leader, and the KeepAlive hook hears each
// KeepAlive without the time the master held it.
func TestStatsAndKeepAliveHook(t *testing.T) {
	var mu sync.Mutex
	var keepAlives []time.Duration
	tc := newTestCell(t, 1, func(o *cell.Options) {
		o.KeepAlive = func(d time.Duration) {
			mu.Lock()
			keepAlives = append(keepAlives, d)
			mu.Unlock()
		}
	})
	tc.waitMaster()
	r := tc.replicas[1]
	a := tc.client("alice", nil)
	c := ctx(t)
	f, _, err := a.OpenNode(c, "/ls/local/lock", client.OpenOptions{Mode: coord.ModeRead | coord.ModeWrite, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Acquire(c, coord.Exclusive); err != nil {
		t.Fatal(err)
	}
	st := r.Stats()
	if st.ID != 1 || !st.IsMaster || st.Leader != 1 || st.Sessions != 1 || st.Locks != 1 || st.Handles < 1 {
		t.Fatalf("stats with one session holding one lock: %+v", st)
	}
	if err := f.Release(c); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.Locks != 0 {
		t.Fatalf("stats after the release: %+v", st)
	}

	// The lease is 2 s, so a KeepAlive is held about 1.5 s and answered
	// in far less.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(keepAlives)
		mu.Unlock()
		if n >= 2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keepAlives) < 2 {
		t.Fatalf("the hook heard %d KeepAlives in 10 s", len(keepAlives))
	}
	for _, d := range keepAlives {
		if d < 0 || d > time.Second {
			t.Fatalf("a KeepAlive took %v without its hold; the hold was not taken out", d)
		}
	}
}
