package tablet

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
)

// fileBlocks is the number of data blocks in the SSTables of the tablets
// of table.
func fileBlocks(s *Store, table string) int64 {
	var n int64
	for _, t := range s.Tablets() {
		if t.Table() != table {
			continue
		}
		v := t.acquire()
		for _, g := range v.groups {
			for _, f := range g {
				n += int64(len(f.r.Blocks()))
			}
		}
		v.unref()
	}
	return n
}

func TestReadStats(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, dfs.NewMem(), model.Schema{Families: []model.Family{{Name: "f"}}}, Options{BlockSize: 512})
	// Two files: the even rows, then the odd rows, two cells each.
	for parity := 0; parity < 2; parity++ {
		for i := parity; i < 100; i += 2 {
			mustApply(t, s, fmt.Sprintf("r%03d", i), set("f", "p", 1000, "value-p"), set("f", "q", 1000, "value-q"))
		}
		if err := s.FlushAll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := fileBlocks(s, "t"); n < 4 {
		t.Fatalf("%d blocks; the test wants several per file", n)
	}
	read := func(row string) ReadStats {
		t.Helper()
		var st ReadStats
		_, _, err := s.ReadRow(ctx, "t", []byte(row), ReadOptions{Stats: &st})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}

	// A row in one file of two: both filters are checked, one excludes
	// its file; the other file's block comes from the file.
	first := read("r050")
	if first.Rows != 1 || first.Cells != 2 || first.BloomChecks != 2 || first.BloomUseful != 1 || first.Blocks < 1 || first.CacheHits != 0 {
		t.Fatalf("first read: %+v", first)
	}
	// The second read finds the same blocks in the block cache.
	second := read("r050")
	if second.Rows != 1 || second.Cells != 2 || second.BloomChecks != 2 || second.BloomUseful != 1 || second.Blocks != 0 || second.CacheHits != first.Blocks {
		t.Fatalf("second read: %+v after %+v", second, first)
	}
	// An absent row inside both files' key ranges: both filters exclude
	// their file and no block is read.
	if st := read("r0505"); st != (ReadStats{BloomChecks: 2, BloomUseful: 2}) {
		t.Fatalf("absent row: %+v", st)
	}
	// A row outside the files' key ranges needs no filter.
	if st := read("zzz"); st != (ReadStats{}) {
		t.Fatalf("row past the files: %+v", st)
	}
	// The store counts every probe, also of reads that ask for no stats.
	if _, _, err := s.ReadRow(ctx, "t", []byte("r0505"), ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	if b := s.Stats().Bloom; b != (BloomStats{Checks: 8, Useful: 6}) {
		t.Fatalf("store's bloom totals %+v, want 8 checks, 6 useful", b)
	}

	// A scan loads every block once, from the file or the cache, checks no
	// filter, and counts rows and cells; a memtable row counts as a row.
	mustApply(t, s, "s000", set("f", "p", 1000, "x"))
	var st ReadStats
	sc := s.Scan(ctx, "t", model.RowRange{}, ReadOptions{Stats: &st})
	n := 0
	for sc.Next() {
		n++
	}
	if err := sc.Close(); err != nil || sc.Err() != nil || n != 101 {
		t.Fatalf("scan: %d rows, %v", n, sc.Err())
	}
	if st.Rows != 101 || st.Cells != 201 || st.BloomChecks != 0 || st.Blocks+st.CacheHits != fileBlocks(s, "t") || st.CacheHits < first.Blocks {
		t.Fatalf("scan: %+v; the files have %d blocks", st, fileBlocks(s, "t"))
	}
	// Stats add to what they hold; the limit and options apply as ever.
	sc = s.Scan(ctx, "t", model.RowRange{Start: []byte("r010")}, ReadOptions{Stats: &st, Limit: 5, Families: []string{"f"}, MaxVersions: 1})
	for sc.Next() {
	}
	sc.Close()
	if st.Rows != 106 || st.Cells != 211 {
		t.Fatalf("second scan: %+v", st)
	}

	// A scan across tablets sums them: one file of one block in each.
	if err := s.CreateTable(ctx, "split", model.Schema{Families: []model.Family{{Name: "f"}}}, [][]byte{[]byte("m")}); err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"a", "b", "x"} {
		if err := s.Apply(ctx, "split", &model.RowMutation{Row: []byte(row), Mutations: []model.Mutation{set("f", "q", 1000, "v")}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	st = ReadStats{}
	ts := s.Scan(ctx, "split", model.RowRange{}, ReadOptions{Stats: &st})
	for ts.Next() {
	}
	ts.Close()
	if ts.Err() != nil || st != (ReadStats{Rows: 3, Cells: 3, Blocks: 2}) {
		t.Fatalf("scan across two tablets: %+v, %v", st, ts.Err())
	}
}

// TestReadStatsWithScanCache: a point read that the scan cache answers
// reads no block and checks no filter; the read that filled it did.
func TestReadStatsWithScanCache(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{}
	clock.us.Store(1_700_000_000_000_000)
	s := newTestStore(t, dfs.NewMem(), model.Schema{Families: []model.Family{{Name: "a"}}}, smallOptions(clock))
	mustApply(t, s, "r", set("a", "q", 1000, "v1"))
	mustApply(t, s, "t", set("a", "q", 1000, "v1"))
	if err := s.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	var first, second ReadStats
	for _, st := range []*ReadStats{&first, &second} {
		if _, found, err := s.ReadRow(ctx, "t", []byte("r"), ReadOptions{Stats: st}); err != nil || !found {
			t.Fatal(found, err)
		}
	}
	if first != (ReadStats{Rows: 1, Cells: 1, Blocks: 1, BloomChecks: 1}) {
		t.Fatalf("the read that fills the scan cache: %+v", first)
	}
	if second != (ReadStats{Rows: 1, Cells: 1}) {
		t.Fatalf("a scan cache hit: %+v", second)
	}
}

// TestLogSyncedEvent: the store hands the commit log's group commits to
// Events.LogSynced, one record per row write.
func TestLogSyncedEvent(t *testing.T) {
	var mu sync.Mutex
	records := 0
	s := newTestStore(t, dfs.NewMem(), model.Schema{Families: []model.Family{{Name: "f"}}}, Options{Events: Events{
		LogSynced: func(n int, d time.Duration) {
			mu.Lock()
			records += n
			mu.Unlock()
		}}})
	for i := range 10 {
		mustApply(t, s, fmt.Sprintf("r%d", i), set("f", "q", 1000, "v"))
	}
	mu.Lock()
	defer mu.Unlock()
	if records < 10 {
		t.Fatalf("LogSynced reported %d records for 10 acknowledged writes", records)
	}
}

func TestStatsShowRunningCompaction(t *testing.T) {
	ctx := context.Background()
	var s *Store
	var seen []*CompactionProgress
	opts := Options{Events: Events{CompactionEnd: func(CompactionInfo) {
		// The hook runs inside the compaction, before it is done.
		for _, ts := range s.Stats().Tablets {
			if ts.Compaction != nil {
				seen = append(seen, ts.Compaction)
			}
		}
	}}}
	s = newTestStore(t, dfs.NewMem(), model.Schema{Families: []model.Family{{Name: "f"}}}, opts)
	for file := 0; file < 2; file++ {
		for i := 0; i < 50; i++ {
			mustApply(t, s, fmt.Sprintf("r%03d", i), set("f", "q", int64(1000*(file+1)), "v"))
		}
		if err := s.FlushAll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Tablets()[0].Compact(ctx, true); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || !seen[0].Major || seen[0].Group == "" || seen[0].TotalBytes <= 0 || seen[0].DoneBytes != seen[0].TotalBytes || seen[0].Started.IsZero() {
		t.Fatalf("progress seen during the compaction: %+v", seen)
	}
	for _, ts := range s.Stats().Tablets {
		if ts.Compaction != nil {
			t.Fatalf("a finished compaction is still shown: %+v", ts.Compaction)
		}
	}
}
