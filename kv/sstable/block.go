package sstable

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"

	"github.com/cellardb/cellar/kv/model"
)

const (
	blockTrailerLen = 5

	blockTypeNone   byte = 0
	blockTypeSnappy byte = 1

	// maxBlockLen bounds a decompressed block. Writers refuse entries that
	// would need more, so a larger claim is corruption, not data.
	maxBlockLen = 1 << 30
	// maxEntryLen bounds one key plus value, leaving room for the headers.
	maxEntryLen = maxBlockLen - 64
	// maxSnappyRatio bounds decoded/encoded size: snappy's densest element
	// is a 3-byte copy of 64 bytes.
	maxSnappyRatio = 22
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// blockChecksum is the crc32c of a stored payload followed by its type,
// a one-byte slice. Readers, which hold both contiguously, checksum them in
// one call instead.
func blockChecksum(payload, typ []byte) uint32 {
	return crc32.Update(crc32.Update(0, crcTable, payload), crcTable, typ)
}

// blockWriter builds one block payload.
type blockWriter struct {
	restartInterval int
	// restartBytes, if not 0, also starts a restart point once the
	// entries since the last one take this many bytes (see doc.go).
	restartBytes int
	buf          []byte
	restarts     []uint32
	counter      int // entries since the last restart point
	nEntries     int
	// lastKey survives reset, so the table writer can check key order
	// across blocks without a copy of its own.
	lastKey []byte
}

func (b *blockWriter) add(key, value []byte) {
	shared := 0
	if b.nEntries > 0 && b.counter < b.restartInterval &&
		(b.restartBytes == 0 || len(b.buf)-int(b.restarts[len(b.restarts)-1]) < b.restartBytes) {
		shared = sharedPrefixLen(b.lastKey, key)
	} else {
		b.restarts = append(b.restarts, uint32(len(b.buf)))
		b.counter = 0
	}
	b.buf = binary.AppendUvarint(b.buf, uint64(shared))
	b.buf = binary.AppendUvarint(b.buf, uint64(len(key)-shared))
	b.buf = binary.AppendUvarint(b.buf, uint64(len(value)))
	b.buf = append(b.buf, key[shared:]...)
	b.buf = append(b.buf, value...)
	b.lastKey = append(b.lastKey[:0], key...)
	b.counter++
	b.nEntries++
}

// size is the length of the payload finish would return.
func (b *blockWriter) size() int { return len(b.buf) + 4*len(b.restarts) + 4 }

// finish appends the restart array. The result is valid until reset.
func (b *blockWriter) finish() []byte {
	for _, r := range b.restarts {
		b.buf = binary.LittleEndian.AppendUint32(b.buf, r)
	}
	b.buf = binary.LittleEndian.AppendUint32(b.buf, uint32(len(b.restarts)))
	return b.buf
}

func (b *blockWriter) reset() {
	b.buf = b.buf[:0]
	b.restarts = b.restarts[:0]
	b.counter = 0
	b.nEntries = 0
}

// entryLen bounds the bytes add(key, value) appends, restart slot included.
func entryLen(key, value []byte) int {
	return uvarintLen(uint64(len(key))) + uvarintLen(uint64(len(value))) + 1 + len(key) + len(value) + 4
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

func sharedPrefixLen(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i+8 <= n && binary.LittleEndian.Uint64(a[i:]) == binary.LittleEndian.Uint64(b[i:]) {
		i += 8
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// blockIter walks the entries of one decompressed block payload. It never
// panics on malformed bytes: every header, length and offset is checked, and
// the first problem is kept in err as a *model.CorruptionError.
//
// Backward steps reconstruct keys from the preceding restart point; rev
// caches the entries that precede the current one in its restart interval
// so that a run of Prev calls decodes each interval once (as Pebble does).
type blockIter struct {
	data        []byte
	restarts    int // entries live in data[:restarts]
	numRestarts int

	offset int // current entry
	next   int // the entry after it
	// key is the current key. A restart point's key (stored whole) is
	// read in place from data, capped so that no append writes into the
	// block; other keys are rebuilt in own, the iterator's buffer.
	key     []byte
	own     []byte
	aliased bool // key is in data, not own
	val     []byte
	valid   bool

	// rev holds entries before the current one, nearest last; its top is
	// usable only while rev[top].next == offset.
	rev     []revEntry
	revKeys []byte

	file     string
	blockOff uint64 // file offset of the block, for errors
	err      error
	// heads, if it has one per restart point, speeds up searchRestarts.
	heads keyHeads

	// ahead is the first restart point nextScan has not prefetched, and
	// aheadEnd the offset at which it prefetches the next batch.
	ahead, aheadEnd int
}

// prefetchRestarts is how many restart points nextScan prefetches at
// once, the entry's first two cache lines each (a row's small marker
// cell often comes first, the big cell's header after it). With values
// of 1 KiB or more every entry is a restart point (see dataRestartBytes)
// and each entry's header is a cache miss of its own; met one by one they
// serialize, prefetched ahead they overlap, as a heap page's line
// pointers let PostgreSQL's scans do.
const prefetchRestarts = 16

type revEntry struct {
	offset, next     int
	keyStart, keyEnd int // in revKeys
	valStart, valEnd int // in data
}

// init points the iterator at a block, keeping its buffers. It does the O(1)
// checks; validateRestarts does the rest for blocks read from storage.
func (b *blockIter) init(data []byte, file string, blockOff uint64) error {
	b.data = data
	b.file = file
	b.blockOff = blockOff
	b.valid = false
	b.err = nil
	b.rev = b.rev[:0]
	b.revKeys = b.revKeys[:0]
	b.key = b.key[:0]
	b.val = nil
	b.offset, b.next = 0, 0
	b.restarts, b.numRestarts = 0, 0
	b.heads = keyHeads{}
	b.ahead, b.aheadEnd = 0, 0
	if len(data) < 4 {
		return b.corruptBlock("block of %d bytes has no restart count", len(data))
	}
	n := binary.LittleEndian.Uint32(data[len(data)-4:])
	if uint64(n) > uint64(len(data)-4)/4 {
		return b.corruptBlock("restart count %d does not fit in a block of %d bytes", n, len(data))
	}
	b.numRestarts = int(n)
	b.restarts = len(data) - 4 - 4*int(n)
	if n == 0 && b.restarts != 0 {
		return b.corruptBlock("block has %d bytes of entries but no restart points", b.restarts)
	}
	return nil
}

// validateRestarts checks that restart offsets start at 0, increase and
// point into the entries.
func (b *blockIter) validateRestarts() error {
	prev := -1
	for j := 0; j < b.numRestarts; j++ {
		off := b.restartOffset(j)
		if (j == 0 && off != 0) || off <= prev || off >= b.restarts {
			return b.corruptBlock("restart point %d has bad offset %d", j, off)
		}
		prev = off
	}
	return nil
}

func (b *blockIter) restartOffset(j int) int {
	return int(binary.LittleEndian.Uint32(b.data[b.restarts+4*j:]))
}

// restartFrom returns the first restart point from lo on whose offset is
// >= off, or numRestarts; offsets increase (validateRestarts).
func (b *blockIter) restartFrom(lo, off int) int {
	hi := b.numRestarts
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if b.restartOffset(mid) < off {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

func (b *blockIter) corruptBlock(format string, args ...any) error {
	b.valid = false
	b.err = model.Corruptf(b.file, int64(b.blockOff), format, args...)
	return b.err
}

func (b *blockIter) corruptEntry(off int, reason string) bool {
	b.corruptBlock("entry at payload offset %d: %s", off, reason)
	return false
}

// entryHeader decodes the three lengths that start an entry; n is 0 when
// they do not parse. The fast path covers short keys with values under
// 16 KiB, nearly every entry.
func entryHeader(p []byte) (shared, unshared, vlen uint64, n int) {
	if len(p) >= 4 && (p[0]|p[1]) < 0x80 {
		if p[2] < 0x80 {
			return uint64(p[0]), uint64(p[1]), uint64(p[2]), 3
		}
		if p[3] < 0x80 {
			return uint64(p[0]), uint64(p[1]), uint64(p[2]&0x7f) | uint64(p[3])<<7, 4
		}
	}
	return entryHeaderSlow(p)
}

func entryHeaderSlow(p []byte) (shared, unshared, vlen uint64, n int) {
	var m int
	if shared, m = binary.Uvarint(p); m <= 0 {
		return 0, 0, 0, 0
	}
	n = m
	if unshared, m = binary.Uvarint(p[n:]); m <= 0 {
		return 0, 0, 0, 0
	}
	n += m
	if vlen, m = binary.Uvarint(p[n:]); m <= 0 {
		return 0, 0, 0, 0
	}
	return shared, unshared, vlen, n + m
}

// decodeAt makes the entry at off current. The key prefix it shares comes
// from b.key, so callers clear b.key before decoding at a restart point.
func (b *blockIter) decodeAt(off int) bool {
	if uint(off) >= uint(b.restarts) {
		return b.corruptEntry(off, "offset past the entries")
	}
	p := b.data[off:b.restarts]
	// entryHeader, inlined by hand: this is the hot path of Next.
	var shared, unshared, vlen uint64
	var n int
	if len(p) >= 4 && (p[0]|p[1]) < 0x80 && p[2] < 0x80 {
		shared, unshared, vlen, n = uint64(p[0]), uint64(p[1]), uint64(p[2]), 3
	} else if len(p) >= 4 && (p[0]|p[1]|p[3]) < 0x80 {
		shared, unshared, vlen, n = uint64(p[0]), uint64(p[1]), uint64(p[2]&0x7f)|uint64(p[3])<<7, 4
	} else if shared, unshared, vlen, n = entryHeaderSlow(p); n == 0 {
		return b.corruptEntry(off, "bad entry header")
	}
	rest := uint64(len(p) - n)
	if shared > uint64(len(b.key)) || unshared > rest || vlen > rest-unshared {
		return b.corruptEntry(off, "entry lengths overrun the block")
	}
	keyEnd := n + int(unshared)
	valEnd := keyEnd + int(vlen)
	switch {
	case shared == 0:
		// With large values every entry is a restart point: no copy.
		b.key, b.aliased = p[n:keyEnd:keyEnd], true
	case b.aliased:
		b.own = append(append(b.own[:0], b.key[:shared]...), p[n:keyEnd]...)
		b.key, b.aliased = b.own, false
	default:
		b.own = append(b.key[:shared], p[n:keyEnd]...)
		b.key = b.own
	}
	b.val = p[keyEnd:valEnd:valEnd]
	b.offset = off
	b.next = off + valEnd
	b.valid = true
	if b.next < b.restarts {
		// Fetch the next entry's header now: with large values it is a
		// cache line the hardware prefetcher has not fetched, and the
		// fetch overlaps the caller's work on this entry instead of
		// stalling the next decodeAt (count(*) over 100k rows of
		// 1000-byte values in the block cache: 48 to 39 ms as a load).
		prefetch(&b.data[b.next])
	}
	return true
}

// restartKey returns the whole key stored at restart point j, in place.
func (b *blockIter) restartKey(j int) ([]byte, bool) {
	off := b.restartOffset(j)
	if off >= b.restarts {
		return nil, b.corruptEntry(off, "restart offset past the entries")
	}
	p := b.data[off:b.restarts]
	shared, unshared, _, n := entryHeader(p)
	if n == 0 || shared != 0 || unshared > uint64(len(p)-n) {
		return nil, b.corruptEntry(off, "bad entry at a restart point")
	}
	return p[n : n+int(unshared)], true
}

// searchRestarts returns the number of restart points whose key is <= key
// (orEqual) or < key.
func (b *blockIter) searchRestarts(key []byte, orEqual bool) (int, bool) {
	return b.heads.search(b.numRestarts, key, orEqual, b.restartKey)
}

// decodeRestart makes the entry at restart point j current.
func (b *blockIter) decodeRestart(j int) bool {
	b.key = b.key[:0]
	return b.decodeAt(b.restartOffset(j))
}

func (b *blockIter) first() bool {
	b.valid = false
	if b.err != nil || b.numRestarts == 0 {
		return false
	}
	return b.decodeRestart(0)
}

func (b *blockIter) last() bool {
	b.valid = false
	if b.err != nil || b.numRestarts == 0 {
		return false
	}
	return b.scanToEnd(b.numRestarts - 1)
}

// scanToEnd decodes from restart point j to the last entry, caching the
// entries it passes for prev.
func (b *blockIter) scanToEnd(j int) bool {
	b.rev = b.rev[:0]
	b.revKeys = b.revKeys[:0]
	if !b.decodeRestart(j) {
		return false
	}
	for b.next < b.restarts {
		b.push()
		if !b.decodeAt(b.next) {
			return false
		}
	}
	return true
}

func (b *blockIter) nextEntry() bool {
	if b.next >= b.restarts {
		b.valid = false
		return false
	}
	return b.decodeAt(b.next)
}

// nextScan is nextEntry for a scan: at the prefetched frontier it first
// prefetches the entries of the next restart points, in one batch.
func (b *blockIter) nextScan() bool {
	if b.next >= b.aheadEnd && b.next < b.restarts {
		b.prefetch()
	}
	return b.nextEntry()
}

func (b *blockIter) prefetch() {
	j := b.ahead
	if j < b.numRestarts && b.restartOffset(j) <= b.next {
		// Behind (the first batch, or after a seek): the first restart
		// point past next.
		j = b.restartFrom(j, b.next+1)
	}
	end := min(j+prefetchRestarts, b.numRestarts)
	for k := j; k < end; k++ {
		// validateRestarts or the cache vouched for these offsets; a
		// bad one is caught by decodeAt, not here.
		if off := b.restartOffset(k); off+64 < b.restarts {
			prefetch(&b.data[off])
			prefetch(&b.data[off+64])
		} else if off < b.restarts {
			prefetch(&b.data[off])
		}
	}
	b.ahead = end
	b.aheadEnd = b.restarts
	if mid := j + prefetchRestarts/2; mid < b.numRestarts {
		b.aheadEnd = b.restartOffset(mid)
	}
}

func (b *blockIter) prevEntry() bool {
	if n := len(b.rev); n > 0 && b.rev[n-1].next == b.offset {
		b.pop()
		return true
	}
	if b.offset == 0 {
		b.valid = false
		return false
	}
	// The predecessor lies in the interval of the last restart point before
	// the current entry.
	target := b.offset
	lo := b.restartFrom(0, target)
	if lo == 0 {
		return b.corruptEntry(target, "no restart point precedes the entry")
	}
	b.rev = b.rev[:0]
	b.revKeys = b.revKeys[:0]
	if !b.decodeRestart(lo - 1) {
		return false
	}
	for b.next < target {
		b.push()
		if !b.decodeAt(b.next) {
			return false
		}
	}
	if b.next != target {
		return b.corruptEntry(b.offset, "entry overlaps its successor")
	}
	return true
}

func (b *blockIter) push() {
	start := len(b.revKeys)
	b.revKeys = append(b.revKeys, b.key...)
	valStart := b.next - len(b.val)
	b.rev = append(b.rev, revEntry{
		offset: b.offset, next: b.next,
		keyStart: start, keyEnd: len(b.revKeys),
		valStart: valStart, valEnd: b.next,
	})
}

func (b *blockIter) pop() {
	e := b.rev[len(b.rev)-1]
	b.rev = b.rev[:len(b.rev)-1]
	b.own = append(b.own[:0], b.revKeys[e.keyStart:e.keyEnd]...)
	b.key, b.aliased = b.own, false
	b.val = b.data[e.valStart:e.valEnd:e.valEnd]
	b.offset, b.next = e.offset, e.next
	b.valid = true
}

// seekGE makes the first entry with key >= target current.
func (b *blockIter) seekGE(target []byte) bool {
	b.valid = false
	if b.err != nil || b.numRestarts == 0 {
		return false
	}
	// Start at the last restart point whose key is <= target.
	j, ok := b.searchRestarts(target, true)
	if !ok {
		return false
	}
	if !b.decodeRestart(max(j-1, 0)) {
		return false
	}
	for bytes.Compare(b.key, target) < 0 {
		if !b.nextEntry() {
			return false
		}
	}
	return true
}

// seekLT makes the last entry with key < target current.
func (b *blockIter) seekLT(target []byte) bool {
	b.valid = false
	if b.err != nil || b.numRestarts == 0 {
		return false
	}
	// Entries below target start before the first restart point whose key
	// is >= target.
	j, ok := b.searchRestarts(target, false)
	if !ok || j == 0 {
		return false
	}
	b.rev = b.rev[:0]
	b.revKeys = b.revKeys[:0]
	if !b.decodeRestart(j - 1) {
		return false
	}
	if bytes.Compare(b.key, target) >= 0 {
		return b.corruptEntry(b.offset, "restart keys out of order")
	}
	for b.next < b.restarts {
		b.push()
		if !b.decodeAt(b.next) {
			return false
		}
		if bytes.Compare(b.key, target) >= 0 {
			b.pop()
			return true
		}
	}
	return true
}

// verify decodes the whole block strictly: restart points must fall on
// entry boundaries and hold whole keys, and keys must increase. It calls
// visit for each entry in order and leaves the iterator unpositioned.
func (b *blockIter) verify(visit func(key, value []byte) error) error {
	if b.err != nil {
		return b.err
	}
	if err := b.validateRestarts(); err != nil {
		return err
	}
	var prev []byte
	j := 0
	b.key = b.key[:0]
	for off := 0; off < b.restarts; off = b.next {
		if j < b.numRestarts && b.restartOffset(j) == off {
			b.key = b.key[:0]
			j++
		} else if j < b.numRestarts && b.restartOffset(j) < off {
			return b.corruptBlock("restart point %d is not at an entry boundary", j)
		}
		if !b.decodeAt(off) {
			return b.err
		}
		if off > 0 && bytes.Compare(prev, b.key) >= 0 {
			return b.corruptBlock("entry at payload offset %d: key not greater than its predecessor", off)
		}
		prev = append(prev[:0], b.key...)
		if err := visit(b.key, b.val); err != nil {
			return err
		}
	}
	if j != b.numRestarts {
		return b.corruptBlock("restart point %d is not at an entry boundary", j)
	}
	b.valid = false
	return nil
}
