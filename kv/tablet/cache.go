package tablet

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// lru is a cache bounded in bytes that evicts the least recently used
// entry, in the second-chance (CLOCK) approximation, split into shards so
// that concurrent readers rarely meet on one mutex. The two caches of the
// paper's §6 are built on it: the block cache (SSTable blocks, keyed by
// reader and offset) and the scan cache (the SSTable entries of a row).
//
// A hit only marks its entry referenced. Moving it to the front of the
// list, as a strict LRU does, writes its two neighbours, cold entries of
// other keys, and so costs cache misses on every hit; a hot block cache
// serving random point reads spent about 0.6 µs per read on that. The
// eviction walk gives a referenced entry a second chance instead: it
// clears the mark and moves it to the front.
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
	root  lruEntry[K, V] // root.next: most recently added; root.prev: the next to evict
	items map[K]*lruEntry[K, V]
}

type lruEntry[K comparable, V any] struct {
	prev, next *lruEntry[K, V]
	ref        bool // hit since it was added or last given a second chance
	key        K
	val        V
	size       int64
}

func newLRU[K comparable, V any](capacity int64, shards int) *lru[K, V] {
	c := &lru[K, V]{shards: make([]lruShard[K, V], shards), seed: maphash.MakeSeed()}
	for i := range c.shards {
		s := &c.shards[i]
		s.cap = capacity / int64(shards)
		s.items = map[K]*lruEntry[K, V]{}
		s.root.prev, s.root.next = &s.root, &s.root
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
	e.ref = true
	v := e.val
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
		s.size += size - e.size
		e.val, e.size, e.ref = v, size, true
	} else {
		e := &lruEntry[K, V]{key: k, val: v, size: size}
		s.pushFront(e)
		s.items[k] = e
		s.size += size
	}
	for s.size > s.cap {
		e := s.root.prev
		s.unlink(e)
		if e.ref {
			// A second chance. The walk ends: nothing sets a mark while
			// it holds the lock, so each entry comes round at most twice.
			e.ref = false
			s.pushFront(e)
			continue
		}
		delete(s.items, e.key)
		s.size -= e.size
	}
}

func (s *lruShard[K, V]) pushFront(e *lruEntry[K, V]) {
	e.prev, e.next = &s.root, s.root.next
	s.root.next.prev = e
	s.root.next = e
}

func (s *lruShard[K, V]) unlink(e *lruEntry[K, V]) {
	e.prev.next = e.next
	e.next.prev = e.prev
	e.prev, e.next = nil, nil
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
