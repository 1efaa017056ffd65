package cell_test

import (
	"testing"
	"time"

	"github.com/cellardb/cellar/coord"
	"github.com/cellardb/cellar/coord/client"
)

func TestStatusShowsLeaderSessionsAndLocks(t *testing.T) {
	tc := newTestCell(t, 1, nil)
	id := tc.waitMaster()
	if err := tc.replicas[id].Ready(); err != nil {
		t.Fatal(err)
	}
	a := tc.client("alice", nil)
	c := ctx(t)
	f, _, err := a.OpenNode(c, "/ls/test/lockfile", client.OpenOptions{Mode: coord.ModeRead | coord.ModeWrite, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Acquire(c, coord.Exclusive); err != nil {
		t.Fatal(err)
	}
	st, err := tc.replicas[id].Status(c)
	if err != nil {
		t.Fatal(err)
	}
	if st.LeaderID != id || !st.IsMaster || st.Epoch == 0 || st.Cell != "test" {
		t.Fatalf("leadership: %+v", st)
	}
	var alice uint64
	for _, s := range st.Sessions {
		if s.Principal == "alice" {
			alice = s.ID
			if !s.LeaseExpires.After(time.Now()) {
				t.Fatalf("alice's lease is not in the future: %v", s.LeaseExpires)
			}
		}
	}
	if alice == 0 {
		t.Fatalf("no session of alice in %+v", st.Sessions)
	}
	if len(st.Locks) != 1 || st.Locks[0].Path != "/ls/test/lockfile" || st.Locks[0].Mode != "exclusive" ||
		len(st.Locks[0].Holders) != 1 || st.Locks[0].Holders[0].Session != alice || st.Locks[0].Holders[0].Principal != "alice" {
		t.Fatalf("locks: %+v", st.Locks)
	}
}

func TestReadyNeedsAMaster(t *testing.T) {
	tc := newTestCell(t, 3, nil)
	id := tc.waitMaster()
	for rid, r := range tc.replicas {
		deadline := time.Now().Add(10 * time.Second)
		for r.Ready() != nil {
			if time.Now().After(deadline) {
				t.Fatalf("replica %d: %v", rid, r.Ready())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// Without a quorum no replica leads: the survivor is not ready.
	var other uint64
	for rid := range tc.replicas {
		if rid != id {
			other = rid
		}
	}
	for rid := range tc.peers {
		if rid != other {
			tc.stop(rid)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for tc.replicas[other].Ready() == nil {
		if time.Now().After(deadline) {
			t.Fatal("a replica without a quorum stays ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
