package memtable

import (
	"bytes"
	"encoding/binary"
	"sync/atomic"
	"unsafe"
)

// maxHeight bounds node heights. With p = 1/4, 12 levels keep searches
// logarithmic up to 4^12 (about 16 million) entries, far beyond a memtable.
const maxHeight = 12

// node is a skiplist node of height 1. A taller node is the same struct
// followed, in the same object, by its further links (node2 ... nodeMax);
// link reaches them by address arithmetic. That keeps the tower inside the
// node's allocation without a slice header: a height-1 node is 32 bytes.
type node struct {
	data   *byte // key then value, in an arena chunk
	klen   uint32
	vlen   uint32
	prefix uint64 // model.KeyHead(key): most comparisons end here, without a cache miss on the key
	next   [1]atomic.Pointer[node]
}

type node2 struct {
	node
	more [1]atomic.Pointer[node]
}

type node3 struct {
	node
	more [2]atomic.Pointer[node]
}

type node4 struct {
	node
	more [3]atomic.Pointer[node]
}

type nodeMax struct {
	node
	more [maxHeight - 1]atomic.Pointer[node]
}

// link arithmetic needs the extra links to follow node with no padding.
// Each pair of constants fails to compile unless its offsets are equal.
const (
	_ = unsafe.Offsetof(node2{}.more) - unsafe.Sizeof(node{})
	_ = unsafe.Sizeof(node{}) - unsafe.Offsetof(node2{}.more)
	_ = unsafe.Offsetof(nodeMax{}.more) - unsafe.Sizeof(node{})
	_ = unsafe.Sizeof(node{}) - unsafe.Offsetof(nodeMax{}.more)
	_ = unsafe.Offsetof(node{}.next) + unsafe.Sizeof(node{}.next) - unsafe.Sizeof(node{})
	_ = unsafe.Sizeof(node{}) - unsafe.Offsetof(node{}.next) - unsafe.Sizeof(node{}.next)
)

// link returns the next pointer at level l, which must be below the node's
// height.
func (n *node) link(l int) *atomic.Pointer[node] {
	return (*atomic.Pointer[node])(unsafe.Add(unsafe.Pointer(&n.next[0]), uintptr(l)*unsafe.Sizeof(n.next[0])))
}

func (n *node) key() []byte { return unsafe.Slice(n.data, n.klen) }

func (n *node) value() []byte {
	if n.vlen == 0 {
		// data+klen may lie just past the end of its allocation.
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(n.data), n.klen)), n.vlen)
}

// compare orders n's key against k, whose model.KeyHead is kp.
func (n *node) compare(k []byte, kp uint64) int {
	if n.prefix != kp {
		if n.prefix < kp {
			return -1
		}
		return 1
	}
	return bytes.Compare(n.key(), k)
}

// seq decodes the sequence number from the key's trailer (see
// model.AppendTrailer) without decoding the rest.
func (n *node) seq() uint64 {
	k := n.key()
	return ^binary.BigEndian.Uint64(k[len(k)-8:]) >> 8
}

// nodeSize is the memory a node of height h takes, links included.
func nodeSize(h int) int64 {
	return int64(unsafe.Sizeof(node{}) + uintptr(h-1)*unsafe.Sizeof(node{}.next[0]))
}

// slab hands out nodes from arrays, to spare an allocation per node. Nodes
// live as long as the memtable, so freeing never splits a slab.
type slab[T any] []T

func (s *slab[T]) get(n int) *T {
	if len(*s) == 0 {
		*s = make([]T, n)
	}
	p := &(*s)[0]
	*s = (*s)[1:]
	return p
}

const (
	arenaFirstChunk = 4 << 10
	arenaMaxChunk   = 64 << 10
	// Larger entries get their own allocation, which bounds the space
	// wasted at the end of a chunk to this much.
	arenaMaxInline = 4 << 10
)

// arena packs keys and values into large pointer-free chunks, which cost
// the garbage collector nothing to scan.
type arena struct {
	free []byte // unused tail of the current chunk
	next int    // size of the next chunk
}

func (a *arena) alloc(n int) []byte {
	if n > len(a.free) {
		if n > arenaMaxInline {
			return make([]byte, n)
		}
		size := max(a.next, arenaFirstChunk)
		a.next = min(2*size, arenaMaxChunk)
		a.free = make([]byte, size)
	}
	b := a.free[:n:n]
	a.free = a.free[n:]
	return b
}
