package sstable

import (
	"fmt"
	"testing"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
)

// statsTable writes 200 rows of one cell each in small blocks, with a
// bloom filter if bloom, and returns the table's entries.
func statsTable(t *testing.T, fs dfs.FS, bloom bool) []kv {
	t.Helper()
	var kvs []kv
	for r := 0; r < 200; r++ {
		row := []byte(fmt.Sprintf("row%05d", 2*r)) // even rows only
		kvs = append(kvs, kv{model.AppendKey(nil, row, "f", []byte("q"), 1, 1, model.KindSetCell), []byte("value")})
	}
	writeTable(t, fs, "t.sst", WriterOptions{BloomFilter: bloom, ExpectedKeys: len(kvs), BlockSize: 512}, kvs)
	return kvs
}

func TestReadStatsCountBloomChecks(t *testing.T) {
	fs := dfs.NewMem()
	statsTable(t, fs, true)
	r := openTable(t, fs, "t.sst", ReaderOptions{})
	defer r.Close()
	if !r.HasFilter() {
		t.Fatal("HasFilter is false for a table written with a filter")
	}
	var st ReadStats
	// Absent rows inside the table's key range: every check excludes the
	// file, but for the filter's false positives (1% asked for).
	for i := 0; i < 100; i++ {
		before := st.BloomUseful
		may := r.MayContainRowStats(model.AppendRowPrefix(nil, []byte(fmt.Sprintf("row%05d", 2*i+1))), &st)
		if may == (st.BloomUseful > before) {
			t.Fatalf("MayContainRowStats said %v and counted %d useful checks", may, st.BloomUseful-before)
		}
	}
	if st.BloomChecks != 100 || st.BloomUseful < 95 {
		t.Fatalf("absent rows: %+v, want 100 checks, about 99 useful", st)
	}
	useful := st.BloomUseful
	// A present row: a check, not useful.
	if !r.MayContainRowStats(model.AppendRowPrefix(nil, []byte("row00004")), &st) {
		t.Fatal("the filter rejects a present row")
	}
	if st.BloomChecks != 101 || st.BloomUseful != useful || st.Blocks != 0 || st.CacheHits != 0 || st.Rows != 0 {
		t.Fatalf("after a present row: %+v", st)
	}
	// A nil ReadStats counts nothing and answers the same.
	if r.MayContainRowStats(model.AppendRowPrefix(nil, []byte("row00001")), nil) != r.MayContainRow(model.AppendRowPrefix(nil, []byte("row00001"))) {
		t.Fatal("MayContainRowStats(nil) disagrees with MayContainRow")
	}

	// Without a filter there is nothing to check, so nothing is counted.
	fs2 := dfs.NewMem()
	statsTable(t, fs2, false)
	r2 := openTable(t, fs2, "t.sst", ReaderOptions{})
	defer r2.Close()
	var st2 ReadStats
	if r2.HasFilter() || !r2.MayContainRowStats(model.AppendRowPrefix(nil, []byte("row00001")), &st2) || st2 != (ReadStats{}) {
		t.Fatalf("no filter: HasFilter %v, stats %+v", r2.HasFilter(), st2)
	}
}

func TestReadStatsCountBlocksAndCacheHits(t *testing.T) {
	fs := dfs.NewMem()
	kvs := statsTable(t, fs, true)
	cache := newMapCache()
	r := openTable(t, fs, "t.sst", ReaderOptions{Cache: cache, CacheID: 1})
	defer r.Close()
	nblocks := int64(len(r.Blocks()))
	if nblocks < 4 {
		t.Fatalf("only %d blocks; the test needs several", nblocks)
	}
	key := kvs[len(kvs)/2].key

	// The first read of a block comes from the file.
	var st ReadStats
	it := r.NewIterStats(&st)
	if !it.SeekGE(key) {
		t.Fatal(it.Error())
	}
	// Moving within the block, or seeking to it again, loads nothing.
	it.Next()
	it.SeekGE(key)
	it.Close()
	if st != (ReadStats{Blocks: 1}) {
		t.Fatalf("first read: %+v, want one block from the file", st)
	}
	// The second read of that block, by another iterator, hits the cache.
	it = r.NewIterStats(&st)
	if !it.SeekGE(key) {
		t.Fatal(it.Error())
	}
	it.Close()
	if st != (ReadStats{Blocks: 1, CacheHits: 1}) {
		t.Fatalf("second read: %+v, want a cache hit", st)
	}

	// A full scan loads every block once: the one read before from the
	// cache, the rest from the file.
	st = ReadStats{}
	it = r.NewIterStats(&st)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Close(); err != nil || n != len(kvs) {
		t.Fatalf("scan: %d entries, %v", n, err)
	}
	if st.Blocks != nblocks-1 || st.CacheHits != 1 {
		t.Fatalf("scan of %d blocks: %+v", nblocks, st)
	}
	// Now all are cached.
	st = ReadStats{}
	it = r.NewIterStats(&st)
	for ok := it.First(); ok; ok = it.Next() {
	}
	it.Close()
	if st.Blocks != 0 || st.CacheHits != nblocks {
		t.Fatalf("cached scan of %d blocks: %+v", nblocks, st)
	}

	// Without a cache every load is a read; an in-memory table serves
	// every block from memory.
	for _, tc := range []struct {
		name   string
		opts   ReaderOptions
		blocks int64
		hits   int64
	}{
		{"no cache", ReaderOptions{}, 2, 0},
		{"in memory", ReaderOptions{InMemory: true}, 0, 2},
	} {
		r := openTable(t, fs, "t.sst", tc.opts)
		var st ReadStats
		for range 2 {
			it := r.NewIterStats(&st)
			it.SeekGE(key)
			it.Close()
		}
		r.Close()
		if st.Blocks != tc.blocks || st.CacheHits != tc.hits {
			t.Fatalf("%s: %+v, want %d blocks and %d hits", tc.name, st, tc.blocks, tc.hits)
		}
	}

	// Add sums every field.
	a := ReadStats{1, 2, 3, 4, 5, 6}
	a.Add(ReadStats{10, 20, 30, 40, 50, 60})
	if a != (ReadStats{11, 22, 33, 44, 55, 66}) || a.IsZero() || !(ReadStats{}).IsZero() {
		t.Fatalf("Add: %+v", a)
	}
}
