package sstable

import (
	"errors"

	"github.com/cellardb/cellar/kv/model"
)

// Iter positions.
const (
	posUnset   = iota // never positioned, or failed
	posValid          // at an entry
	posAtEnd          // past the last entry: Prev goes to the last one
	posAtStart        // before the first entry: Next goes to the first one
)

// Iter iterates over a table's entries in key order. It is not safe for
// concurrent use. Positioning calls return Valid().
//
// Errors are sticky: after a corrupt block or an I/O error every call
// returns false and Error reports the problem.
type Iter struct {
	r      *Reader
	blk    blockIter
	bi     int // current data block
	loaded int // block held by blk, or -1
	pos    int
	err    error
	// scratch is the read buffer for compressed blocks.
	scratch []byte
	// stats, if not nil, counts the data blocks the iterator loads.
	stats *ReadStats
	// run counts the Next calls since the last seek: past scanRun the
	// iterator is scanning, and prefetches (blockIter.nextScan). A point
	// read's one or two Next calls do not pay for a prefetch.
	run int
	// keyBuf is blk.key's first buffer: it comes with the iterator's one
	// allocation, which a point read of a short key then does not add to.
	keyBuf [64]byte
}

// NewIter returns an unpositioned iterator.
func (r *Reader) NewIter() *Iter {
	return r.NewIterStats(nil)
}

// NewIterStats returns an unpositioned iterator that counts into st, if
// it is not nil, each data block it loads: Blocks for one read from the
// file, CacheHits for one served from the block cache or memory.
func (r *Reader) NewIterStats(st *ReadStats) *Iter {
	i := new(Iter)
	r.InitIter(i, st)
	return i
}

// InitIter makes *i what NewIterStats(st) returns, in memory the caller
// keeps: a point read reuses its iterators. i must be new or closed, and
// nothing may use it meanwhile.
func (r *Reader) InitIter(i *Iter, st *ReadStats) {
	*i = Iter{r: r, loaded: -1, stats: st}
	i.blk.key = i.keyBuf[:0]
	i.blk.own = i.blk.key
}

// SeekGE moves to the first entry with key >= key.
func (i *Iter) SeekGE(key []byte) bool {
	i.run = 0
	if i.err != nil {
		return false
	}
	// Only the first block whose last key is >= key can hold the answer.
	bi := i.r.searchIndex(key)
	if bi == len(i.r.index) {
		return i.exhausted(posAtEnd)
	}
	if !i.load(bi) {
		return false
	}
	if i.blk.seekGE(key) {
		i.pos = posValid
		return true
	}
	return i.forward()
}

// SeekLT moves to the last entry with key < key.
func (i *Iter) SeekLT(key []byte) bool {
	i.run = 0
	if i.err != nil {
		return false
	}
	bi := i.r.searchIndex(key)
	if bi == len(i.r.index) {
		return i.Last()
	}
	if !i.load(bi) {
		return false
	}
	if i.blk.seekLT(key) {
		i.pos = posValid
		return true
	}
	return i.backward()
}

// First moves to the first entry.
func (i *Iter) First() bool {
	i.run = 0
	if i.err != nil {
		return false
	}
	if len(i.r.index) == 0 {
		return i.exhausted(posAtEnd)
	}
	if !i.load(0) {
		return false
	}
	if i.blk.first() {
		i.pos = posValid
		return true
	}
	return i.forward()
}

// Last moves to the last entry.
func (i *Iter) Last() bool {
	i.run = 0
	if i.err != nil {
		return false
	}
	if len(i.r.index) == 0 {
		return i.exhausted(posAtStart)
	}
	if !i.load(len(i.r.index) - 1) {
		return false
	}
	if i.blk.last() {
		i.pos = posValid
		return true
	}
	return i.backward()
}

// scanRun is how many Next calls in a row make a scan.
const scanRun = 2

// Next moves to the next entry. From before the first entry it moves to the
// first; past the end, or before any positioning, it returns false.
func (i *Iter) Next() bool {
	switch i.pos {
	case posValid:
		i.run++
		if i.run > scanRun {
			if i.blk.nextScan() {
				return true
			}
		} else if i.blk.nextEntry() {
			return true
		}
		return i.forward()
	case posAtStart:
		return i.First()
	}
	return false
}

// Prev moves to the previous entry. From past the end it moves to the last;
// before the start, or before any positioning, it returns false.
func (i *Iter) Prev() bool {
	i.run = 0
	switch i.pos {
	case posValid:
		if i.blk.prevEntry() {
			return true
		}
		return i.backward()
	case posAtEnd:
		return i.Last()
	}
	return false
}

// forward moves to the first entry of the blocks after the current one,
// once the current block has none left.
func (i *Iter) forward() bool {
	for {
		if i.blk.err != nil {
			return i.fail(i.blk.err)
		}
		if i.bi+1 >= len(i.r.index) {
			return i.exhausted(posAtEnd)
		}
		if !i.load(i.bi + 1) {
			return false
		}
		if i.blk.first() {
			i.pos = posValid
			return true
		}
	}
}

// backward is forward's mirror.
func (i *Iter) backward() bool {
	for {
		if i.blk.err != nil {
			return i.fail(i.blk.err)
		}
		if i.bi == 0 {
			return i.exhausted(posAtStart)
		}
		if !i.load(i.bi - 1) {
			return false
		}
		if i.blk.last() {
			i.pos = posValid
			return true
		}
	}
}

// load makes data block bi current, reading it unless blk holds it.
func (i *Iter) load(bi int) bool {
	i.bi = bi
	if i.loaded == bi {
		return true
	}
	i.loaded = -1
	data, heads, err := i.r.dataBlock(bi, &i.scratch, true, i.stats)
	if err == nil {
		err = i.blk.init(data, i.r.name, i.r.index[bi].h.offset)
		i.blk.heads = heads
	}
	if err != nil {
		return i.fail(err)
	}
	i.loaded = bi
	return true
}

func (i *Iter) exhausted(pos int) bool {
	i.pos = pos
	i.blk.valid = false
	return false
}

func (i *Iter) fail(err error) bool {
	i.err = err
	i.pos = posUnset
	i.blk.valid = false
	i.loaded = -1
	return false
}

// Valid reports whether the iterator is at an entry.
func (i *Iter) Valid() bool { return i.pos == posValid }

// Key returns the current key, valid until the next positioning call.
func (i *Iter) Key() []byte {
	if i.pos != posValid {
		return nil
	}
	return i.blk.key
}

// Value returns the current value. It aliases an immutable block, so it
// stays valid after the iterator moves or closes.
func (i *Iter) Value() []byte {
	if i.pos != posValid {
		return nil
	}
	return i.blk.val
}

// Error returns the error that stopped the iterator: a
// *model.CorruptionError naming the file and block offset, or a wrapped I/O
// error.
func (i *Iter) Error() error { return i.err }

// Close releases the iterator's buffers and returns the error that stopped
// it, if any. Later calls fail with model.ErrClosed.
func (i *Iter) Close() error {
	err := i.err
	if errors.Is(err, model.ErrClosed) {
		return nil
	}
	if i.scratch != nil {
		b := i.scratch
		i.r.bufs.Put(&b)
	}
	*i = Iter{r: i.r, loaded: -1, err: i.r.iterClosed}
	return err
}
