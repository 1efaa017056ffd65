package cell_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellardb/cellar/coord"
	"github.com/cellardb/cellar/coord/cell"
	"github.com/cellardb/cellar/coord/client"
)

// TestCellClockIgnoresWallClockSteps: the time in the cell's commands,
// which lock-delays are judged by, follows the master's monotonic clock.
// A wall clock step of an hour forward must not carry it forward (that
// would end every lock-delay at once), and a step back must not stop it
// (that would make lock-delays last until the wall clock caught up).
func TestCellClockIgnoresWallClockSteps(t *testing.T) {
	var skew atomic.Int64
	wall := func() time.Time { return time.Now().Round(0).Add(time.Duration(skew.Load())) }
	tc := newTestCell(t, 1, func(o *cell.Options) { o.Clock = wall })
	tc.waitMaster()
	c := ctx(t)
	cl := tc.client("a", nil)
	h, _, err := cl.OpenNode(c, "/ls/local/f", client.OpenOptions{Mode: coord.ModeRead | coord.ModeWrite, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	r := tc.replicas[1]
	clock := func(what string) int64 {
		t.Helper()
		time.Sleep(20 * time.Millisecond) // so that the next command's clock reads later
		if _, err := h.SetContents(c, []byte(what)); err != nil {
			t.Fatal(err)
		}
		snap, err := r.Dump(c)
		if err != nil {
			t.Fatal(err)
		}
		return snap.ClockMs
	}
	before := clock("before")
	skew.Store(int64(time.Hour))
	forward := clock("an hour ahead")
	if forward-before > (10 * time.Minute).Milliseconds() {
		t.Fatalf("the wall clock stepped 1h forward and the cell's clock jumped %v", time.Duration(forward-before)*time.Millisecond)
	}
	skew.Store(int64(-time.Hour))
	back := clock("an hour behind")
	if back <= forward {
		t.Fatalf("the wall clock stepped 2h back and the cell's clock stopped at %d (was %d)", back, forward)
	}
}
