package tablet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
)

// TestCompactionProgress checks what a running compaction reports: at the
// end of its last locality group every input byte is done, and once it
// returns nothing is running.
func TestCompactionProgress(t *testing.T) {
	clock := &fakeClock{}
	clock.us.Store(1_700_000_000_000_000)
	opts := smallOptions(clock)
	var mu sync.Mutex
	var seen []CompactionProgress
	var s *Store
	opts.Events.CompactionEnd = func(info CompactionInfo) {
		tb, err := s.Tablet(info.Tablet)
		if err != nil {
			return
		}
		// Background merging compactions of the flushes may run too;
		// only the forced major one counts here.
		if p := tb.Compaction(); p.Major {
			mu.Lock()
			seen = append(seen, p)
			mu.Unlock()
		}
	}
	schema := model.Schema{Families: []model.Family{{Name: "a"}, {Name: "b", LocalityGroup: "g2"}},
		LocalityGroups: []model.LocalityGroup{{Name: "g2"}}}
	s = newTestStore(t, dfs.NewMem(), schema, opts)
	ctx := context.Background()
	for round := range 3 {
		for i := range 200 {
			mustApply(t, s, fmt.Sprintf("r%04d", i), set("a", "q", 1000*int64(round+1), fmt.Sprint("a", round, i)),
				set("b", "q", 1000*int64(round+1), fmt.Sprint("b", round, i)))
		}
		s.FlushAll(ctx)
	}
	tb := s.Tablets()[0]
	mu.Lock()
	seen = nil
	mu.Unlock()
	if err := tb.Compact(ctx, true); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("progress seen at %d group ends, want 2: %+v", len(seen), seen)
	}
	first, last := seen[0], seen[1]
	if first.Group != "default" || last.Group != "g2" || first.Started.IsZero() {
		t.Fatalf("groups or start: %+v", seen)
	}
	if !first.Running || !first.Major || first.TotalBytes <= 0 || first.DoneBytes <= 0 || first.DoneBytes >= first.TotalBytes {
		t.Fatalf("after the first of two groups: %+v", first)
	}
	if !last.Running || last.DoneBytes != last.TotalBytes || last.TotalBytes != first.TotalBytes {
		t.Fatalf("after the last group: %+v", last)
	}
	if p := tb.Compaction(); p != (CompactionProgress{}) {
		t.Fatalf("after the compaction: %+v", p)
	}
	if p := s.Stats().Tablets[0].Compaction; p != nil {
		t.Fatalf("stats after the compaction: %+v", p)
	}
}

func TestSplitAtMidpoint(t *testing.T) {
	clock := &fakeClock{}
	clock.us.Store(1_700_000_000_000_000)
	s := newTestStore(t, dfs.NewMem(), model.Schema{Families: []model.Family{{Name: "a"}}}, smallOptions(clock))
	ctx := context.Background()
	if _, err := s.SplitAtMidpoint(ctx, s.Tablets()[0].ID()); !errors.Is(err, model.ErrFailedPrecondition) {
		t.Fatalf("midpoint of an empty tablet: %v", err)
	}
	for i := range 400 {
		mustApply(t, s, fmt.Sprintf("r%04d", i), set("a", "q", 1000, fmt.Sprintf("value %04d of some length", i)))
	}
	// Nothing flushed yet: the split flushes first.
	kids, err := s.SplitAtMidpoint(ctx, s.Tablets()[0].ID())
	if err != nil {
		t.Fatal(err)
	}
	mid := string(kids[1].Range().Start)
	if mid < "r0100" || mid > "r0300" {
		t.Fatalf("midpoint %q is far from the middle of r0000..r0399", mid)
	}
	if got := readCells(t, s, "r0399", ReadOptions{}); got != "a:q@1000=value 0399 of some length" {
		t.Fatalf("after the split: %q", got)
	}
}
