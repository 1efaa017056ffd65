package sstable

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// TestHeadsSearch checks that a search using keyHeads finds what a plain
// binary search finds, for keys and targets around a shared prefix, with
// zero bytes, short keys and equal heads.
func TestHeadsSearch(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	alphabet := []byte{0x00, 0x01, 'a', 'b', 0xff}
	randKey := func(prefix []byte) []byte {
		k := slices.Clone(prefix)
		for range rng.Intn(13) {
			k = append(k, alphabet[rng.Intn(len(alphabet))])
		}
		return k
	}
	for round := range 2000 {
		var prefix []byte
		if round%3 != 0 {
			prefix = randKey(nil)
		}
		n := 1 + rng.Intn(40)
		keys := make([][]byte, n)
		for i := range keys {
			keys[i] = randKey(prefix)
		}
		slices.SortFunc(keys, bytes.Compare)
		h, ok := makeHeads(nil, n, func(i int) ([]byte, bool) { return keys[i], true })
		if !ok {
			t.Fatal("makeHeads failed")
		}
		for range 50 {
			var target []byte
			switch rng.Intn(4) {
			case 0:
				target = slices.Clone(keys[rng.Intn(n)])
			case 1:
				target = randKey(nil)
			case 2:
				target = randKey(prefix)
			default:
				target = prefix[:rng.Intn(len(prefix)+1)]
			}
			want, _ := slices.BinarySearchFunc(keys, target, bytes.Compare)
			tt := h.target(target)
			lo, hi := 0, n
			for lo < hi {
				mid := (lo + hi) / 2
				c := h.cmp(mid, tt)
				if c == 0 {
					c = bytes.Compare(keys[mid], target)
				} else if c != bytes.Compare(keys[mid], target) {
					t.Fatalf("keys %q target %q: head of key %d says %d, the keys %d", keys, target, mid, c, bytes.Compare(keys[mid], target))
				}
				if c < 0 {
					lo = mid + 1
				} else {
					hi = mid
				}
			}
			if got := lo; got != want {
				t.Fatalf("keys %q target %q: heads search %d, plain %d", keys, target, got, want)
			}
			// search, with the heads and without them (a table whose
			// heads could not be made), agrees too.
			key := func(i int) ([]byte, bool) { return keys[i], true }
			for _, kh := range []keyHeads{h, {}} {
				if got, _ := kh.search(n, target, false, key); got != want {
					t.Fatalf("keys %q target %q: search with %d heads %d, plain %d", keys, target, len(kh.h)/8, got, want)
				}
			}
		}
	}
}

// TestCachedBlockRoundTrip checks that a cache entry gives back the
// payload and heads that match its restart keys.
func TestCachedBlockRoundTrip(t *testing.T) {
	w := blockWriter{restartInterval: 16}
	for i := range 300 {
		w.add(fmt.Appendf(nil, "user%08d/f:q", i*7), []byte("value"))
	}
	data := w.finish()
	e := cacheBlock(data, "t.sst", 0)
	got, h, ok := uncacheBlock(e)
	if !ok || !bytes.Equal(got, data) {
		t.Fatalf("round trip: ok %v, payload equal %v", ok, bytes.Equal(got, data))
	}
	var b blockIter
	if err := b.init(got, "t.sst", 0); err != nil {
		t.Fatal(err)
	}
	if len(h.h) != 8*b.numRestarts || b.numRestarts < 2 {
		t.Fatalf("%d heads for %d restart points", len(h.h)/8, b.numRestarts)
	}
	for j := range b.numRestarts {
		k, _ := b.restartKey(j)
		if !bytes.HasPrefix(k, h.prefix) || h.cmp(j, h.target(k)) != 0 {
			t.Fatalf("restart %d key %q: prefix %q, head disagrees", j, k, h.prefix)
		}
	}
	if _, _, ok := uncacheBlock(data); ok {
		t.Fatal("a bare payload passed for a cache entry")
	}
}
