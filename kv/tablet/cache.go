package tablet

import (
	"container/list"
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// lru is a least-recently-used cache bounded in bytes, split into shards
// so that concurrent readers rarely meet on one mutex. The two caches of
// the paper's §6 are built on it: the block cache (SSTable blocks, keyed by
// reader and offset) and the scan cache (the SSTable entries of a row).
type lru[K comparable, V any] struct {
	shards []lruShard[K, V]
	seed   maphash.Seed
	hits   atomic.Int64
	misses atomic.Int64
}

type lruShard[K comparable, V any] struct {
	mu    sync.Mutex
	cap   int64
	size  int64
	order list.List // front: most recent
	items map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key  K
	val  V
	size int64
}

func newLRU[K comparable, V any](capacity int64, shards int) *lru[K, V] {
	c := &lru[K, V]{shards: make([]lruShard[K, V], shards), seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].cap = capacity / int64(shards)
		c.shards[i].items = map[K]*list.Element{}
	}
	return c
}

func (c *lru[K, V]) shard(k K) *lruShard[K, V] {
	return &c.shards[maphash.Comparable(c.seed, k)%uint64(len(c.shards))]
}

func (c *lru[K, V]) get(k K) (V, bool) {
	s := c.shard(k)
	s.mu.Lock()
	e, ok := s.items[k]
	if !ok {
		s.mu.Unlock()
		c.misses.Add(1)
		var zero V
		return zero, false
	}
	s.order.MoveToFront(e)
	v := e.Value.(*lruEntry[K, V]).val
	s.mu.Unlock()
	c.hits.Add(1)
	return v, true
}

func (c *lru[K, V]) set(k K, v V, size int64) {
	s := c.shard(k)
	if size > s.cap {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.items[k]; ok {
		old := e.Value.(*lruEntry[K, V])
		s.size += size - old.size
		old.val, old.size = v, size
		s.order.MoveToFront(e)
	} else {
		s.items[k] = s.order.PushFront(&lruEntry[K, V]{key: k, val: v, size: size})
		s.size += size
	}
	for s.size > s.cap {
		e := s.order.Back()
		old := e.Value.(*lruEntry[K, V])
		s.order.Remove(e)
		delete(s.items, old.key)
		s.size -= old.size
	}
}

// bytes returns the cache's current size.
func (c *lru[K, V]) bytes() int64 {
	var n int64
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += s.size
		s.mu.Unlock()
	}
	return n
}

type blockKey struct{ id, off uint64 }

// blockCache adapts lru to sstable.BlockCache.
type blockCache struct{ c *lru[blockKey, []byte] }

func (b blockCache) Get(id, off uint64) []byte {
	v, _ := b.c.get(blockKey{id, off})
	return v
}

func (b blockCache) Set(id, off uint64, block []byte) {
	b.c.set(blockKey{id, off}, block, int64(len(block))+64)
}

// scanKey names the SSTable entries of one row in one set of files.
type scanKey struct {
	fileset uint64
	row     string
}

// kv is one internal entry.
type kv struct{ key, value []byte }

func entriesSize(e []kv) int64 {
	n := int64(64)
	for _, x := range e {
		n += int64(len(x.key)+len(x.value)) + 48
	}
	return n
}
