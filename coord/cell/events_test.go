package cell_test

import (
	"context"
	"fmt"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/cellardb/cellar/coord"
	"github.com/cellardb/cellar/coord/cell"
	"github.com/cellardb/cellar/coord/client"
)

// TestEventsSurviveFailover: a watcher hears of every child a writer
// creates, once each and in order, while the master is stopped twice, and
// the replicated event queues stay trimmed. Snapshots every 20 commands and
// acknowledgements every 50 ms put the queues through both.
func TestEventsSurviveFailover(t *testing.T) {
	tc := newTestCell(t, 3, func(o *cell.Options) {
		o.SnapshotEntries = 20
		o.EventAckInterval = 50 * time.Millisecond
	})
	tc.waitMaster()
	c := ctx(t)
	var heard eventLog
	watcher := tc.client("watcher", heard.add)
	writer := tc.client("writer", nil)
	dir, _, err := writer.OpenNode(c, "/ls/local/ev", client.OpenOptions{Mode: coord.ModeRead, Create: true, Directory: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := watcher.OpenNode(c, "/ls/local/ev", client.OpenOptions{Mode: coord.ModeRead, Events: coord.Mask(coord.EventChildAdded)}); err != nil {
		t.Fatal(err)
	}

	load, stopLoad := context.WithCancel(c)
	defer stopLoad()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; load.Err() == nil; i++ {
			octx, cancel := context.WithTimeout(load, 10*time.Second)
			h, _, err := writer.OpenNode(octx, fmt.Sprintf("/ls/local/ev/%05d", i), client.OpenOptions{Mode: coord.ModeRead, Create: true})
			cancel()
			if err == nil {
				h.Close(load)
			}
		}
	}()
	for range 2 {
		time.Sleep(700 * time.Millisecond)
		m := tc.waitMaster()
		tc.stop(m)
		t.Logf("stopped master %d; new master %d", m, tc.waitMaster())
		tc.start(m)
	}
	time.Sleep(700 * time.Millisecond)
	stopLoad()
	wg.Wait()

	entries, err := dir.ReadDir(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 20 {
		t.Fatalf("only %d children created", len(entries))
	}
	children := func() (names []string, failovers int) {
		heard.mu.Lock()
		defer heard.mu.Unlock()
		for _, e := range heard.events {
			switch e.Type {
			case coord.EventChildAdded:
				names = append(names, path.Base(e.Name))
			case coord.EventMasterFailover:
				failovers++
			}
		}
		return names, failovers
	}
	last := entries[len(entries)-1].Name
	waitFor(t, "the watcher to hear of "+last, 10*time.Second, func() bool {
		names, _ := children()
		return len(names) > 0 && names[len(names)-1] >= last
	})
	names, failovers := children()
	if failovers == 0 {
		t.Error("the watcher heard of no failover")
	}
	if len(names) != len(entries) {
		t.Errorf("the watcher heard of %d children, the directory has %d", len(names), len(entries))
	}
	for i := range min(len(names), len(entries)) {
		if names[i] != entries[i].Name {
			t.Fatalf("child %d: heard %s, the directory has %s (heard %v)", i, names[i], entries[i].Name, names[max(0, i-3):min(len(names), i+3)])
		}
	}

	// The watcher acknowledged everything it heard: the master trims its
	// queue to what may still be on its way.
	waitFor(t, "the watcher's event queue to be trimmed", 10*time.Second, func() bool {
		m := tc.replicas[tc.waitMaster()]
		snap, err := m.Dump(c)
		if err != nil {
			return false
		}
		for _, s := range snap.Sessions {
			if s.Id == watcher.SessionID() {
				return len(s.Events) <= 1
			}
		}
		return false
	})
	t.Logf("%d children heard of in order, %d failover events", len(names), failovers)
}
