package sstable

import (
	"sync"
	"testing"

	"github.com/cellardb/cellar/kv/dfs"
)

type kv struct {
	key, value []byte
}

// mapCache is a BlockCache without eviction that counts its traffic.
type mapCache struct {
	mu           sync.Mutex
	m            map[[2]uint64][]byte
	hits, misses int
}

func newMapCache() *mapCache { return &mapCache{m: map[[2]uint64][]byte{}} }

func (c *mapCache) Get(id, off uint64) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.m[[2]uint64{id, off}]
	if b == nil {
		c.misses++
	} else {
		c.hits++
	}
	return b
}

func (c *mapCache) Set(id, off uint64, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[[2]uint64{id, off}] = b
}

// writeTable writes kvs to name on fs and returns the writer's properties.
func writeTable(t testing.TB, fs dfs.FS, name string, opts WriterOptions, kvs []kv) Properties {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := NewWriter(f, name, opts)
	for _, e := range kvs {
		if err := w.Add(e.key, e.value); err != nil {
			t.Fatal(err)
		}
	}
	p, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func openTable(t testing.TB, fs dfs.FS, name string, opts ReaderOptions) *Reader {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(f, name, opts)
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	return r
}

// tableBytes builds a table in memory and returns the file's bytes.
func tableBytes(t testing.TB, opts WriterOptions, kvs []kv) []byte {
	t.Helper()
	fs := dfs.NewMem()
	writeTable(t, fs, "t.sst", opts, kvs)
	b, err := dfs.ReadFile(fs, "t.sst")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// openBytes opens a table whose contents are b, as file name.
func openBytes(b []byte, name string, opts ReaderOptions) (*Reader, error) {
	fs := dfs.NewMem()
	if err := fs.MkdirAll(dfs.Dir(name)); err != nil {
		return nil, err
	}
	if err := dfs.WriteFile(fs, name, b); err != nil {
		return nil, err
	}
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	r, err := Open(f, name, opts)
	if err != nil {
		f.Close()
	}
	return r, err
}
