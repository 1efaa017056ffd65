package memtable

import "math"

// Iter walks the entries of a memtable visible at its snapshot, in key
// order. It takes no locks and keeps working while writers insert; an entry
// inserted after the iterator was created may or may not be seen. An Iter
// is not safe for concurrent use by several goroutines.
//
// Positioning methods return whether the iterator is now on an entry. Next
// and Prev on an iterator that is not on an entry return false.
type Iter struct {
	m    *Memtable
	n    *node // nil when not on an entry
	snap uint64
}

func (i *Iter) visible(n *node) bool {
	return i.snap == math.MaxUint64 || n.seq() <= i.snap
}

// forward moves to the first visible node at or after n.
func (i *Iter) forward(n *node) bool {
	for n != nil && !i.visible(n) {
		n = n.link(0).Load()
	}
	i.n = n
	return n != nil
}

// backward moves to the last visible node at or before n, n being m.head
// when there is none. Each step back is a search: nodes have no back links.
func (i *Iter) backward(n *node) bool {
	for n != i.m.head && !i.visible(n) {
		n = i.m.findLT(n.key())
	}
	if n == i.m.head {
		n = nil
	}
	i.n = n
	return n != nil
}

// SeekGE moves to the first visible entry with key >= key.
func (i *Iter) SeekGE(key []byte) bool { return i.forward(i.m.findGE(key)) }

// SeekLT moves to the last visible entry with key < key.
func (i *Iter) SeekLT(key []byte) bool { return i.backward(i.m.findLT(key)) }

// First moves to the first visible entry.
func (i *Iter) First() bool { return i.forward(i.m.head.link(0).Load()) }

// Last moves to the last visible entry.
func (i *Iter) Last() bool { return i.backward(i.m.findLast()) }

// Next moves to the next visible entry.
func (i *Iter) Next() bool {
	if i.n == nil {
		return false
	}
	return i.forward(i.n.link(0).Load())
}

// Prev moves to the previous visible entry. It costs a search, O(log n),
// plus one more for each invisible entry it steps over.
func (i *Iter) Prev() bool {
	if i.n == nil {
		return false
	}
	return i.backward(i.m.findLT(i.n.key()))
}

// Valid reports whether the iterator is on an entry.
func (i *Iter) Valid() bool { return i.n != nil }

// Key returns the current entry's internal key. It must be Valid. The
// slice aliases the memtable: it stays valid and unchanged for the
// memtable's lifetime, and must not be modified.
func (i *Iter) Key() []byte { return i.n.key() }

// Value returns the current entry's value, nil if empty, under the same
// terms as Key.
func (i *Iter) Value() []byte { return i.n.value() }

// Error returns nil: a memtable iterator cannot fail. It exists so that
// memtable and SSTable iterators look alike.
func (i *Iter) Error() error { return nil }

// Close returns nil: an iterator holds nothing to release.
func (i *Iter) Close() error { return nil }
