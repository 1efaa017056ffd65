package main

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/kv/tablet"
)

// The resources every engine gets, so that a ratio compares designs rather
// than cache or buffer sizes. They are cellar's defaults; the data block
// size (-block-size) is also the same for every engine, and everything not
// listed (level sizes, compaction concurrency) is each engine's own
// default.
const (
	memtableSize   = 64 << 20
	blockCacheSize = 256 << 20
	bloomBitsKey   = 10 // about a 1% false-positive rate, cellar's default
)

// engine is what a workload needs from a storage engine. Implementations
// must be safe for concurrent use.
type engine interface {
	// put writes one key and returns once the write is durable (synced to
	// the engine's log, possibly in a group commit with concurrent puts).
	put(key, value []byte) error
	// get looks key up and passes its value to fn; the value is valid only
	// during the call, so no engine pays for a copy the benchmark does not
	// need.
	get(key []byte, fn func(value []byte) error) (found bool, err error)
	// scan visits up to n rows from the first key >= start, in order, and
	// returns how many it visited.
	scan(start []byte, n int, fn func(key, value []byte) error) (int, error)
	// close shuts the engine down the way an application would: without an
	// explicit flush, so unflushed data stays in the engine's log.
	close() error
	// stats describes the engine's internal state (files per level,
	// caches) for -stats, to explain a result.
	stats() string
}

// openFunc opens (or creates) an engine's database in dir.
type openFunc func(dir string) (engine, error)

// engineOpeners lists the in-process engines by the names -engines takes,
// each opened with data blocks of blockSize bytes.
func engineOpeners(blockSize int) map[string]openFunc {
	return map[string]openFunc{
		"cellar":    func(dir string) (engine, error) { return openCellar(dir, blockSize) },
		"goleveldb": func(dir string) (engine, error) { return openGoleveldb(dir, blockSize) },
		"pebble":    func(dir string) (engine, error) { return openPebble(dir, blockSize) },
	}
}

// moduleVersion reports the version of a dependency compiled into this
// binary, so the report names exactly what was measured.
func moduleVersion(engine string) string {
	path := map[string]string{
		"cellar":    "github.com/cellardb/cellar",
		"goleveldb": "github.com/syndtr/goleveldb",
		"pebble":    "github.com/cockroachdb/pebble",
	}[engine]
	info, ok := debug.ReadBuildInfo()
	if !ok || path == "" {
		return "unknown"
	}
	for _, m := range info.Deps {
		if m.Path == path {
			if m.Replace != nil {
				return "this checkout"
			}
			return m.Version
		}
	}
	return "unknown"
}

// cellarEngine is cellar's tablet store with one table of one family; each
// key is a row with one cell.
type cellarEngine struct {
	ctx context.Context
	s   *tablet.Store
}

const cellarTable, cellarFamily = "bench", "f"

func openCellar(dir string, blockSize int) (engine, error) {
	ctx := context.Background()
	s := tablet.New(dfs.NewLocal(dir), "", tablet.Options{
		MemtableSize:   memtableSize,
		BlockCacheSize: blockCacheSize,
		BlockSize:      blockSize,
		// Defaults already give snappy and a 1% bloom filter.
	})
	if err := s.Open(ctx); err != nil {
		return nil, fmt.Errorf("open cellar store in %s: %w", dir, err)
	}
	if len(s.Tables()) == 0 {
		schema := model.Schema{Families: []model.Family{{Name: cellarFamily}}}
		if err := s.CreateTable(ctx, cellarTable, schema, nil); err != nil {
			return nil, errors.Join(fmt.Errorf("create cellar table: %w", err), s.Close(ctx))
		}
	}
	return &cellarEngine{ctx: ctx, s: s}, nil
}

func (e *cellarEngine) put(key, value []byte) error {
	// A fixed timestamp keeps the cell identical across runs; every key is
	// written once, so versions never pile up.
	m := &model.RowMutation{Row: key, Mutations: []model.Mutation{model.SetCell(cellarFamily, nil, 1000, value)}}
	return e.s.Apply(e.ctx, cellarTable, m)
}

func (e *cellarEngine) get(key []byte, fn func([]byte) error) (bool, error) {
	row, found, err := e.s.ReadRow(e.ctx, cellarTable, key, tablet.ReadOptions{})
	if err != nil || !found {
		return false, err
	}
	if len(row.Cells) != 1 {
		return true, fmt.Errorf("row %q has %d cells, want 1", key, len(row.Cells))
	}
	return true, fn(row.Cells[0].Value)
}

func (e *cellarEngine) scan(start []byte, n int, fn func(key, value []byte) error) (int, error) {
	sc := e.s.Scan(e.ctx, cellarTable, model.RowRange{Start: start}, tablet.ReadOptions{Limit: n})
	got := 0
	for sc.Next() {
		row := sc.Row()
		if len(row.Cells) != 1 {
			sc.Close()
			return got, fmt.Errorf("row %q has %d cells, want 1", row.Key, len(row.Cells))
		}
		if err := fn(row.Key, row.Cells[0].Value); err != nil {
			sc.Close()
			return got, err
		}
		got++
	}
	return got, errors.Join(sc.Err(), sc.Close())
}

func (e *cellarEngine) close() error { return e.s.Close(e.ctx) }

func (e *cellarEngine) stats() string {
	st := e.s.Stats()
	var b strings.Builder
	fmt.Fprintf(&b, "memtables %d bytes, log %d bytes in %d segments, block cache %d bytes (%d hits, %d misses)\n",
		st.MemtableBytes, st.LogBytes, st.LogSegments, st.BlockCache.Bytes, st.BlockCache.Hits, st.BlockCache.Misses)
	for _, t := range st.Tablets {
		fmt.Fprintf(&b, "tablet %d: %d frozen memtables\n", t.ID, t.FrozenMemtables)
		for _, g := range t.Groups {
			var size uint64
			for _, f := range g.Files {
				size += f.Size
			}
			fmt.Fprintf(&b, "  group %q: %d files, %d bytes\n", g.Name, len(g.Files), size)
		}
	}
	return b.String()
}

// goleveldbEngine is goleveldb with cellar's memtable, cache and bloom
// settings. Sync writes make every Put wait for its journal fsync, which
// concurrent Puts share through goleveldb's write merging.
type goleveldbEngine struct {
	db *leveldb.DB
	wo *opt.WriteOptions
}

func openGoleveldb(dir string, blockSize int) (engine, error) {
	db, err := leveldb.OpenFile(dir, &opt.Options{
		BlockSize:          blockSize,
		WriteBuffer:        memtableSize,
		BlockCacheCapacity: blockCacheSize,
		Filter:             filter.NewBloomFilter(bloomBitsKey),
		Compression:        opt.SnappyCompression,
	})
	if err != nil {
		return nil, fmt.Errorf("open goleveldb in %s: %w", dir, err)
	}
	return &goleveldbEngine{db: db, wo: &opt.WriteOptions{Sync: true}}, nil
}

func (e *goleveldbEngine) put(key, value []byte) error { return e.db.Put(key, value, e.wo) }

func (e *goleveldbEngine) get(key []byte, fn func([]byte) error) (bool, error) {
	v, err := e.db.Get(key, nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, fn(v)
}

func (e *goleveldbEngine) scan(start []byte, n int, fn func(key, value []byte) error) (int, error) {
	it := e.db.NewIterator(nil, nil)
	got := 0
	for ok := it.Seek(start); ok && got < n; ok = it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			it.Release()
			return got, err
		}
		got++
	}
	err := it.Error()
	it.Release()
	return got, err
}

func (e *goleveldbEngine) close() error { return e.db.Close() }

func (e *goleveldbEngine) stats() string {
	s, err := e.db.GetProperty("leveldb.stats")
	if err != nil {
		return err.Error()
	}
	return s
}

// pebbleEngine is Pebble with cellar's memtable, cache and bloom settings,
// applied to every level.
type pebbleEngine struct {
	db *pebble.DB
}

func openPebble(dir string, blockSize int) (engine, error) {
	cache := pebble.NewCache(blockCacheSize)
	// The DB takes its own reference; dropping ours lets Close free it.
	defer cache.Unref()
	db, err := pebble.Open(dir, &pebble.Options{
		Cache:        cache,
		MemTableSize: memtableSize,
		Levels: []pebble.LevelOptions{{
			BlockSize:    blockSize,
			FilterPolicy: bloom.FilterPolicy(bloomBitsKey),
			Compression:  pebble.SnappyCompression,
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("open pebble in %s: %w", dir, err)
	}
	return &pebbleEngine{db: db}, nil
}

func (e *pebbleEngine) put(key, value []byte) error { return e.db.Set(key, value, pebble.Sync) }

func (e *pebbleEngine) get(key []byte, fn func([]byte) error) (bool, error) {
	v, closer, err := e.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, errors.Join(fn(v), closer.Close())
}

func (e *pebbleEngine) scan(start []byte, n int, fn func(key, value []byte) error) (int, error) {
	it, err := e.db.NewIter(nil)
	if err != nil {
		return 0, err
	}
	got := 0
	for ok := it.SeekGE(start); ok && got < n; ok = it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			return got, errors.Join(err, it.Close())
		}
		got++
	}
	return got, it.Close()
}

func (e *pebbleEngine) close() error { return e.db.Close() }

func (e *pebbleEngine) stats() string { return e.db.Metrics().String() }
