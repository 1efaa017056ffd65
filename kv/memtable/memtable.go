package memtable

import (
	"bytes"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/cellardb/cellar/kv/model"
)

// Options configures a Memtable. The zero value is ready to use.
type Options struct {
	// Seed seeds the generator of node heights. Any value, zero included,
	// gives a deterministic list.
	Seed uint64
}

// Memtable is a sorted map from internal keys to values. Add and AddBatch
// may be called from any goroutine; they are serialized internally. Every
// other method, and every Iter, runs without locks.
type Memtable struct {
	head   *node        // sentinel, maxHeight links, no key
	height atomic.Int32 // levels in use, at least 1

	bytes  atomic.Int64
	count  atomic.Int64
	maxSeq atomic.Uint64
	maxTS  atomic.Int64

	mu    sync.Mutex // serializes writers; guards the fields below
	rng   uint64
	arena arena
	n1    slab[node]
	n2    slab[node2]
	n3    slab[node3]
	n4    slab[node4]
}

// New returns an empty memtable.
func New(opts Options) *Memtable {
	m := &Memtable{head: &new(nodeMax).node, rng: opts.Seed}
	m.height.Store(1)
	m.maxTS.Store(math.MinInt64)
	return m
}

// Add inserts a copy of key and value. The key must be an internal key (at
// least model.TrailerLen bytes). A key that is already present is rejected
// with an error wrapping model.ErrInvalidArgument, and the memtable is left
// unchanged.
func (m *Memtable) Add(key, value []byte) error {
	if err := checkEntry(key, value); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var s stats
	if err := m.insert(key, value, &s); err != nil {
		return err
	}
	m.publish(&s)
	return nil
}

// AddBatch inserts copies of several entries, keys[i] with values[i], under
// one acquisition of the writer lock. It is all or nothing: if any key is
// malformed or already present (in the memtable or earlier in the batch),
// AddBatch returns an error wrapping model.ErrInvalidArgument and removes
// what it had inserted. An iterator whose snapshot covers the batch's
// sequence numbers may glimpse entries that are then removed; the tablet
// publishes the batch's sequence number only after AddBatch returns, so its
// readers never do.
func (m *Memtable) AddBatch(keys, values [][]byte) error {
	if len(keys) != len(values) {
		return fmt.Errorf("%w: memtable batch has %d keys and %d values", model.ErrInvalidArgument, len(keys), len(values))
	}
	for i := range keys {
		if err := checkEntry(keys[i], values[i]); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var s stats
	for i := range keys {
		if err := m.insert(keys[i], values[i], &s); err != nil {
			// keys[:i] are all new and distinct, or insert would have
			// failed earlier, so removing them by key removes exactly them.
			for j := i - 1; j >= 0; j-- {
				m.remove(keys[j])
			}
			return err
		}
	}
	m.publish(&s)
	return nil
}

// ApproximateBytes estimates the memory the entries use: keys, values and
// node overhead. It does not count unused arena space.
func (m *Memtable) ApproximateBytes() int64 { return m.bytes.Load() }

// Len returns the number of entries.
func (m *Memtable) Len() int { return int(m.count.Load()) }

// Empty reports whether the memtable holds no entries.
func (m *Memtable) Empty() bool { return m.count.Load() == 0 }

// MaxSeq returns the largest sequence number of any entry, or 0 if empty.
func (m *Memtable) MaxSeq() uint64 { return m.maxSeq.Load() }

// MaxTimestamp returns the largest timestamp of any model.KindSetCell
// entry, or math.MinInt64 if there is none. Deletion markers do not count:
// their timestamps are range bounds, not cell versions.
func (m *Memtable) MaxTimestamp() int64 { return m.maxTS.Load() }

// NewIter returns an iterator over the entries whose sequence number is at
// most snapshot. Pass math.MaxUint64 to see every entry.
func (m *Memtable) NewIter(snapshot uint64) *Iter {
	return &Iter{m: m, snap: snapshot}
}

func checkEntry(key, value []byte) error {
	if len(key) < model.TrailerLen {
		return fmt.Errorf("%w: memtable key of %d bytes is shorter than its trailer", model.ErrInvalidArgument, len(key))
	}
	if uint64(len(key)) > math.MaxUint32 || uint64(len(value)) > math.MaxUint32 {
		return fmt.Errorf("%w: memtable entry too large", model.ErrInvalidArgument)
	}
	return nil
}

// stats accumulates what a write adds, so that a failed batch adds nothing.
type stats struct {
	bytes  int64
	count  int64
	maxSeq uint64
	maxTS  int64
	hasTS  bool
}

// publish makes a write's statistics visible. The caller holds m.mu, so the
// load-compare-store sequences cannot race with another writer.
func (m *Memtable) publish(s *stats) {
	if s.maxSeq > m.maxSeq.Load() {
		m.maxSeq.Store(s.maxSeq)
	}
	if s.hasTS && s.maxTS > m.maxTS.Load() {
		m.maxTS.Store(s.maxTS)
	}
	m.bytes.Add(s.bytes)
	m.count.Add(s.count)
}

// insert links a copy of (key, value) into the list. The caller holds m.mu.
func (m *Memtable) insert(key, value []byte, s *stats) error {
	var prev [maxHeight]*node
	listHeight := int(m.height.Load())
	x := m.head
	kp := model.KeyHead(key)
	var bound *node // a node already known to be > key
	for l := listHeight - 1; l >= 0; l-- {
		for {
			next := x.link(l).Load()
			if next == nil || next == bound {
				break
			}
			c := next.compare(key, kp)
			if c == 0 {
				return fmt.Errorf("%w: duplicate memtable key %x", model.ErrInvalidArgument, key)
			}
			if c > 0 {
				bound = next
				break
			}
			x = next
		}
		prev[l] = x
	}

	h := m.randomHeight()
	for l := listHeight; l < h; l++ {
		prev[l] = m.head
	}
	n := m.newNode(h, key, value)
	// Bottom up: once a reader can reach n at level l, n's links at levels
	// l and below are already set.
	for l := 0; l < h; l++ {
		n.link(l).Store(prev[l].link(l).Load())
		prev[l].link(l).Store(n)
	}
	if h > listHeight {
		m.height.Store(int32(h))
	}

	ts, seq, kind := model.Trailer(key)
	s.bytes += int64(len(key)+len(value)) + nodeSize(h)
	s.count++
	s.maxSeq = max(s.maxSeq, seq)
	if kind == model.KindSetCell && (!s.hasTS || ts > s.maxTS) {
		s.maxTS, s.hasTS = ts, true
	}
	return nil
}

// remove unlinks the node with this key, top down. The node's own links
// stay intact, so a reader standing on it still moves forward correctly.
// The caller holds m.mu.
func (m *Memtable) remove(key []byte) {
	x := m.head
	for l := int(m.height.Load()) - 1; l >= 0; l-- {
		for {
			next := x.link(l).Load()
			if next == nil {
				break
			}
			c := bytes.Compare(next.key(), key)
			if c > 0 {
				break
			}
			if c == 0 {
				x.link(l).Store(next.link(l).Load())
				break
			}
			x = next
		}
	}
}

// randomHeight draws a height with P(h > k) = 4^-k, capped at maxHeight.
func (m *Memtable) randomHeight() int {
	// splitmix64: a full-period generator that accepts any seed.
	m.rng += 0x9e3779b97f4a7c15
	z := m.rng
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return min(1+bits.TrailingZeros64(z)/2, maxHeight)
}

// newNode builds an unlinked node holding copies of key and value.
func (m *Memtable) newNode(h int, key, value []byte) *node {
	var n *node
	switch h {
	case 1:
		n = m.n1.get(128)
	case 2:
		n = &m.n2.get(32).node
	case 3:
		n = &m.n3.get(8).node
	case 4:
		n = &m.n4.get(4).node
	default:
		n = &new(nodeMax).node
	}
	kv := m.arena.alloc(len(key) + len(value))
	copy(kv, key)
	copy(kv[len(key):], value)
	n.data = &kv[0]
	n.prefix = model.KeyHead(key)
	n.klen = uint32(len(key))
	n.vlen = uint32(len(value))
	return n
}

// findGE returns the first node with key >= k, or nil.
func (m *Memtable) findGE(k []byte) *node {
	x := m.head
	kp := model.KeyHead(k)
	var next, bound *node
	for l := int(m.height.Load()) - 1; l >= 0; l-- {
		for {
			next = x.link(l).Load()
			if next == nil || next == bound {
				break
			}
			c := next.compare(k, kp)
			if c == 0 {
				// Every node between x and next has a key in (x, k).
				return next
			}
			if c > 0 {
				bound = next
				break
			}
			x = next
		}
	}
	return next
}

// findLT returns the last node with key < k, or m.head if there is none.
func (m *Memtable) findLT(k []byte) *node {
	x := m.head
	kp := model.KeyHead(k)
	var bound *node
	for l := int(m.height.Load()) - 1; l >= 0; l-- {
		for {
			next := x.link(l).Load()
			if next == nil || next == bound {
				break
			}
			if next.compare(k, kp) >= 0 {
				bound = next
				break
			}
			x = next
		}
	}
	return x
}

// findLast returns the last node, or m.head if the list is empty.
func (m *Memtable) findLast() *node {
	x := m.head
	for l := int(m.height.Load()) - 1; l >= 0; l-- {
		for next := x.link(l).Load(); next != nil; next = x.link(l).Load() {
			x = next
		}
	}
	return x
}
