package sstable

import (
	"bytes"
	"encoding/binary"

	"github.com/cellardb/cellar/kv/model"
)

// keyHeads speeds up a binary search over sorted keys that live far apart
// in memory: a block's restart keys (a kilobyte apart with large values)
// and the index's last keys. Each probe of a plain search loads a key that
// is a cache miss of its own; keyHeads keeps, in one contiguous array,
// each key's 8 bytes after the prefix all the keys share, so most probes
// compare two integers and only ties load the key itself.
//
// Heads never change an answer. With a head h(k) the 8 bytes of k after
// the prefix, zero-padded: h(a) < h(b) implies a < b and h(a) > h(b)
// implies a > b (a shorter key padded with zeros is a prefix of the other,
// so it sorts first); equal heads say nothing, and the whole keys decide.
//
// They are made in memory when a block enters the block cache (or an
// in-memory table, or the index, is opened); the file format has none.
type keyHeads struct {
	prefix []byte // shared by every key
	h      []byte // 8 bytes per key, big-endian
}

// makeHeads builds the heads of n sorted keys, key(i) giving the i-th,
// appending them to buf. It returns false if a key cannot be read.
func makeHeads(buf []byte, n int, key func(i int) ([]byte, bool)) (keyHeads, bool) {
	if n == 0 {
		return keyHeads{}, true
	}
	first, ok := key(0)
	if !ok {
		return keyHeads{}, false
	}
	last, ok := key(n - 1)
	if !ok {
		return keyHeads{}, false
	}
	// Sorted keys all share the prefix of the first and the last.
	p := first[:sharedPrefixLen(first, last)]
	for i := range n {
		k, ok := key(i)
		if !ok || !bytes.HasPrefix(k, p) {
			return keyHeads{}, false
		}
		buf = binary.BigEndian.AppendUint64(buf, model.KeyHead(k[len(p):]))
	}
	return keyHeads{prefix: p, h: buf[len(buf)-8*n:]}, true
}

// headTarget is a search key prepared for keyHeads.cmp.
type headTarget struct {
	sign int // if not 0, how every key compares with the target
	h    uint64
}

func (k *keyHeads) target(t []byte) headTarget {
	p := k.prefix
	n := min(len(t), len(p))
	if d := bytes.Compare(p[:n], t[:n]); d != 0 {
		return headTarget{sign: d}
	}
	if len(t) < len(p) {
		return headTarget{sign: 1} // t is a proper prefix of every key
	}
	return headTarget{h: model.KeyHead(t[len(p):])}
}

// search returns how many of the n sorted keys are < target, or <= it
// (orEqual), key(i) giving the i-th; false if a key cannot be read. It
// compares heads where k has one per key and loads a key only on a tie;
// without heads (they could not be made) it loads every key it probes.
func (k *keyHeads) search(n int, target []byte, orEqual bool, key func(i int) ([]byte, bool)) (int, bool) {
	heads := len(k.h) == 8*n
	var t headTarget
	if heads {
		t = k.target(target)
	}
	lo, hi := 0, n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		c := 0
		if heads {
			c = k.cmp(mid, t)
		}
		if c == 0 {
			km, ok := key(mid)
			if !ok {
				return 0, false
			}
			c = bytes.Compare(km, target)
		}
		if c < 0 || (orEqual && c == 0) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, true
}

// cmp compares key i with the target: -1 or 1, or 0 when only the whole
// keys can tell.
func (k *keyHeads) cmp(i int, t headTarget) int {
	if t.sign != 0 {
		return t.sign
	}
	h := binary.BigEndian.Uint64(k.h[8*i:])
	switch {
	case h < t.h:
		return -1
	case h > t.h:
		return 1
	}
	return 0
}

// A cached data block is the block's payload followed by its restart
// heads and a trailer, so that one cache entry holds both:
//
//	payload | heads (8 bytes per restart point) | payload length (4) | prefix offset (4) | prefix length (4) | magic (4)
//
// The prefix is the first restart key's first bytes, in the payload. A
// prefix length of noHeads marks a block whose heads could not be made;
// its searches load every key, and its corrupt entry is reported then.
const (
	cachedTrailerLen = 16
	cachedMagic      = 0x68656164 // "head"
	noHeads          = ^uint32(0)
)

// cacheBlock returns the cache entry for a checked block payload.
func cacheBlock(data []byte, file string, off uint64) []byte {
	var b blockIter
	if b.init(data, file, off) != nil {
		return nil
	}
	out := make([]byte, len(data), len(data)+8*b.numRestarts+cachedTrailerLen)
	copy(out, data)
	b.data = out
	h, ok := makeHeads(out, b.numRestarts, b.restartKey)
	poff, plen := uint32(0), noHeads
	if ok && b.numRestarts > 0 {
		out = out[:len(data)+len(h.h)]
		poff, plen = uint32(cap(out)-cap(h.prefix)), uint32(len(h.prefix)) // the prefix lies in out
	} else {
		out = out[:len(data)]
	}
	out = binary.LittleEndian.AppendUint32(out, uint32(len(data)))
	out = binary.LittleEndian.AppendUint32(out, poff)
	out = binary.LittleEndian.AppendUint32(out, plen)
	return binary.LittleEndian.AppendUint32(out, cachedMagic)
}

// uncacheBlock splits a cache entry made by cacheBlock. ok is false if it
// is not one (then the caller reads the block from the file).
func uncacheBlock(e []byte) (data []byte, h keyHeads, ok bool) {
	n := len(e) - cachedTrailerLen
	if n < 0 || binary.LittleEndian.Uint32(e[n+12:]) != cachedMagic {
		return nil, keyHeads{}, false
	}
	dlen := int(binary.LittleEndian.Uint32(e[n:]))
	poff := int(binary.LittleEndian.Uint32(e[n+4:]))
	plen := binary.LittleEndian.Uint32(e[n+8:])
	if dlen > n {
		return nil, keyHeads{}, false
	}
	data = e[:dlen:dlen]
	if plen == noHeads {
		return data, keyHeads{}, true
	}
	if poff+int(plen) > dlen || (n-dlen)%8 != 0 {
		return nil, keyHeads{}, false
	}
	return data, keyHeads{prefix: e[poff : poff+int(plen) : poff+int(plen)], h: e[dlen:n:n]}, true
}
