package tablet

import (
	"math/rand"
	"testing"
)

// TestCacheSecondChance checks the eviction order: an entry hit since it
// was added survives the eviction that takes an entry nobody asked for.
func TestCacheSecondChance(t *testing.T) {
	c := newLRU[int, string](30, 1)
	for k := range 3 {
		c.set(k, "v", 10)
	}
	if _, ok := c.get(0); !ok {
		t.Fatal("0 missing")
	}
	c.set(3, "v", 10) // over capacity: 0 was hit, so 1 goes
	for k, want := range map[int]bool{0: true, 1: false, 2: true, 3: true} {
		if _, ok := c.get(k); ok != want {
			t.Errorf("key %d cached %v, want %v", k, ok, want)
		}
	}
	if c.bytes() != 30 {
		t.Errorf("size %d, want 30", c.bytes())
	}
	if c.hits.Load() != 4 || c.misses.Load() != 1 {
		t.Errorf("hits %d misses %d, want 4 and 1", c.hits.Load(), c.misses.Load())
	}
}

// TestCacheModel runs random gets and sets against a map and checks that
// the cache never holds more than its bound, that its size is the sum of
// its entries, and that what it returns is the latest value set.
func TestCacheModel(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	c := newLRU[int, int](1000, 4)
	latest := map[int]int{}
	for i := range 200000 {
		k := rng.Intn(200)
		if rng.Intn(3) == 0 {
			c.set(k, i, int64(1+rng.Intn(100)))
			latest[k] = i
		} else if v, ok := c.get(k); ok && v != latest[k] {
			t.Fatalf("get %d = %d, latest set %d", k, v, latest[k])
		}
		if i%1000 == 0 {
			for j := range c.shards {
				s := &c.shards[j]
				var n int64
				count := 0
				for e := s.root.next; e != &s.root; e = e.next {
					n += e.size
					count++
				}
				if n != s.size || s.size > s.cap || count != len(s.items) {
					t.Fatalf("shard %d: list holds %d bytes in %d entries, size %d, cap %d, map %d", j, n, count, s.size, s.cap, len(s.items))
				}
			}
		}
	}
}
