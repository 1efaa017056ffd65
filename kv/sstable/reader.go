package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
	"github.com/golang/snappy"
)

// BlockCache holds decompressed, verified data blocks shared by readers.
// Implementations must be safe for concurrent use.
type BlockCache interface {
	// Get returns the block, or nil. The returned block is immutable.
	Get(id, offset uint64) []byte
	// Set stores a block, which the caller will not modify.
	Set(id, offset uint64, block []byte)
}

// ReaderOptions configure a Reader.
type ReaderOptions struct {
	// Cache may be nil.
	Cache BlockCache
	// CacheID is unique per open Reader; cache keys are (CacheID, block
	// offset).
	CacheID uint64
	// InMemory reads the whole file at Open, verifies and decompresses
	// every block once, and serves all reads from memory: neither the
	// cache nor the file is read again, except by Check.
	InMemory bool
}

// BlockInfo describes one data block.
type BlockInfo struct {
	// LastKey is the block's last key. It aliases the reader's index and
	// must not be modified.
	LastKey []byte
	// Offset and Length locate the stored payload; Length excludes the
	// 5-byte trailer.
	Offset, Length uint64
}

type indexEntry struct {
	lastKey []byte
	h       handle
}

// Reader reads one table. Its state is immutable after Open, so it is safe
// for concurrent use; each Iter is not.
type Reader struct {
	f      dfs.File
	name   string
	opts   ReaderOptions
	size   uint64
	footer footer
	index  []indexEntry
	filter *bloom.BloomFilter // nil: no filter
	props  Properties
	blocks [][]byte // InMemory: every data block, decompressed
	// blockHeads (InMemory) and indexHeads speed up searches (heads.go).
	blockHeads []keyHeads
	indexHeads keyHeads
	// bufs holds read buffers for compressed blocks (*[]byte), so that
	// short-lived iterators, one per point read, do not each allocate one.
	bufs sync.Pool
	// iterClosed is what a closed iterator reports, made once: a point
	// read closes an iterator per file.
	iterClosed error
}

// meta is what Open reads apart from the data blocks.
type meta struct {
	footer footer
	index  []indexEntry
	filter *bloom.BloomFilter
	props  Properties
}

// Open reads the footer, index, filter and properties of a table. name
// labels errors. On success the Reader owns f and Close closes it; on error
// f is left open. Malformed files yield a *model.CorruptionError.
func Open(f dfs.File, name string, opts ReaderOptions) (*Reader, error) {
	size, err := f.Size()
	if err != nil {
		return nil, model.IOError("sstable "+name, err)
	}
	r := &Reader{f: f, name: name, opts: opts, size: uint64(size),
		iterClosed: fmt.Errorf("%w: sstable %s: iterator closed", model.ErrClosed, name)}
	var whole []byte
	if opts.InMemory {
		whole = make([]byte, size)
		if err := r.readAt(whole, 0); err != nil {
			return nil, err
		}
	}
	m, err := r.readMeta(whole)
	if err != nil {
		return nil, err
	}
	r.footer, r.index, r.filter, r.props = m.footer, m.index, m.filter, m.props
	r.indexHeads, _ = makeHeads(nil, len(r.index), r.indexKey)
	if opts.InMemory {
		r.blocks = make([][]byte, len(r.index))
		r.blockHeads = make([]keyHeads, len(r.index))
		for i, e := range r.index {
			data, _, err := r.decodeBlock(whole[e.h.offset:e.h.end()], e.h.offset)
			if err == nil {
				err = checkBlock(data, name, e.h.offset)
			}
			if err != nil {
				return nil, err
			}
			r.blocks[i] = data
			var b blockIter
			if b.init(data, name, e.h.offset) == nil {
				r.blockHeads[i], _ = makeHeads(nil, b.numRestarts, b.restartKey)
			}
		}
	}
	return r, nil
}

// readMeta reads and checks everything but the data blocks, from whole if
// it is not nil, else from the file.
func (r *Reader) readMeta(whole []byte) (meta, error) {
	var m meta
	if r.size < footerLen {
		return m, model.Corruptf(r.name, 0, "file of %d bytes is too short for an sstable", r.size)
	}
	footOff := r.size - footerLen
	read := func(off, n uint64) ([]byte, error) {
		if whole != nil {
			return whole[off : off+n], nil
		}
		b := make([]byte, n)
		return b, r.readAt(b, off)
	}
	fb, err := read(footOff, footerLen)
	if err != nil {
		return m, err
	}
	if m.footer, err = decodeFooter(fb, r.name, footOff); err != nil {
		return m, err
	}
	ft := &m.footer
	// The filter, properties and index end the file; one read gets them.
	metaStart := min(ft.index.offset, ft.props.offset)
	if ft.filter.length > 0 {
		metaStart = min(metaStart, ft.filter.offset)
	}
	buf, err := read(metaStart, footOff-metaStart)
	if err != nil {
		return m, err
	}
	block := func(h handle) ([]byte, error) {
		data, _, err := r.decodeBlock(buf[h.offset-metaStart:h.end()-metaStart], h.offset)
		return data, err
	}

	data, err := block(ft.index)
	if err != nil {
		return m, err
	}
	if m.index, err = r.decodeIndex(data, ft.index.offset, metaStart); err != nil {
		return m, err
	}
	if data, err = block(ft.props); err != nil {
		return m, err
	}
	if m.props, err = decodeProperties(data, r.name, ft.props.offset); err != nil {
		return m, err
	}
	if m.props.NumDataBlocks != uint64(len(m.index)) || m.props.HasFilter != (ft.filter.length > 0) {
		return m, model.Corruptf(r.name, int64(ft.props.offset),
			"properties claim %d data blocks and filter %t; the file has %d and %t",
			m.props.NumDataBlocks, m.props.HasFilter, len(m.index), ft.filter.length > 0)
	}
	if ft.filter.length > 0 {
		if data, err = block(ft.filter); err != nil {
			return m, err
		}
		if m.filter, err = decodeFilter(data, r.name, ft.filter.offset); err != nil {
			return m, err
		}
	}
	return m, nil
}

// decodeIndex decodes the index block at off into entries whose keys share
// one allocation. Data blocks must be ordered, disjoint and end by dataEnd.
func (r *Reader) decodeIndex(data []byte, off, dataEnd uint64) ([]indexEntry, error) {
	var it blockIter
	if err := it.init(data, r.name, off); err != nil {
		return nil, err
	}
	var keys []byte
	var ends []int
	var entries []indexEntry
	var prevEnd uint64
	err := it.verify(func(key, value []byte) error {
		h, ok := decodeHandle(value)
		if !ok {
			return model.Corruptf(r.name, int64(off), "index entry %d has a malformed block handle", len(entries))
		}
		if h.offset < prevEnd || h.offset > dataEnd || h.length > dataEnd-h.offset || dataEnd-h.offset-h.length < blockTrailerLen {
			return model.Corruptf(r.name, int64(off), "index entry %d: data block [%d, +%d) overlaps its neighbours or the metadata", len(entries), h.offset, h.length)
		}
		prevEnd = h.end()
		keys = append(keys, key...)
		ends = append(ends, len(keys))
		entries = append(entries, indexEntry{h: h})
		return nil
	})
	if err != nil {
		return nil, err
	}
	start := 0
	for i, end := range ends {
		entries[i].lastKey = keys[start:end:end]
		start = end
	}
	return entries, nil
}

// readAt fills p from the file. The file's size was checked at Open, so a
// short read means the file shrank under us.
func (r *Reader) readAt(p []byte, off uint64) error {
	n, err := r.f.ReadAt(p, int64(off))
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return model.Corruptf(r.name, int64(off), "file ends %d bytes into a %d-byte read", n, len(p))
	}
	return model.IOError("sstable "+r.name, err)
}

// decodeBlock verifies a stored block (payload and trailer) and returns its
// payload, decompressed. Uncompressed payloads alias raw.
func (r *Reader) decodeBlock(raw []byte, off uint64) ([]byte, byte, error) {
	payload := raw[:len(raw)-blockTrailerLen]
	typ := raw[len(payload)]
	if want, got := binary.LittleEndian.Uint32(raw[len(payload)+1:]), crc32.Checksum(raw[:len(payload)+1], crcTable); want != got {
		return nil, typ, model.Corruptf(r.name, int64(off), "block checksum mismatch: stored %#08x, computed %#08x", want, got)
	}
	switch typ {
	case blockTypeNone:
		return payload[:len(payload):len(payload)], typ, nil
	case blockTypeSnappy:
		n, err := snappy.DecodedLen(payload)
		if err != nil {
			return nil, typ, model.Corruptf(r.name, int64(off), "snappy block: %v", err)
		}
		if n > maxBlockLen || n > maxSnappyRatio*len(payload)+16 {
			return nil, typ, model.Corruptf(r.name, int64(off), "snappy block of %d bytes claims %d decoded", len(payload), n)
		}
		out, err := snappy.Decode(make([]byte, n), payload)
		if err != nil {
			return nil, typ, model.Corruptf(r.name, int64(off), "snappy block: %v", err)
		}
		if len(out) != n {
			return nil, typ, model.Corruptf(r.name, int64(off), "snappy block decoded to %d bytes, not %d", len(out), n)
		}
		return out, typ, nil
	}
	return nil, typ, model.Corruptf(r.name, int64(off), "unknown block type %d", typ)
}

// readBlock reads and verifies one block from the file. scratch, if not nil,
// is a reusable read buffer; it is given up when the result aliases it.
func (r *Reader) readBlock(h handle, scratch *[]byte) ([]byte, byte, error) {
	n := h.length + blockTrailerLen
	var buf []byte
	if scratch != nil && uint64(cap(*scratch)) >= n {
		buf = (*scratch)[:n]
	} else {
		buf = make([]byte, n)
	}
	if err := r.readAt(buf, h.offset); err != nil {
		return nil, 0, err
	}
	data, typ, err := r.decodeBlock(buf, h.offset)
	if scratch != nil {
		if err == nil && typ == blockTypeNone {
			*scratch = nil // data aliases buf and must stay immutable
		} else {
			*scratch = buf
		}
	}
	return data, typ, err
}

// checkBlock does the checks a data block gets once, when it is read from
// storage, before it is used or cached.
func checkBlock(data []byte, file string, off uint64) error {
	var b blockIter
	if err := b.init(data, file, off); err != nil {
		return err
	}
	return b.validateRestarts()
}

// dataBlock returns data block bi: from memory, the cache, or the file.
// st, if not nil, counts where it came from.
func (r *Reader) dataBlock(bi int, scratch *[]byte, useCache bool, st *ReadStats) ([]byte, keyHeads, error) {
	if r.blocks != nil {
		if st != nil {
			st.CacheHits++
		}
		return r.blocks[bi], r.blockHeads[bi], nil
	}
	h := r.index[bi].h
	cache := r.opts.Cache
	if !useCache {
		cache = nil
	}
	if cache != nil {
		if b := cache.Get(r.opts.CacheID, h.offset); b != nil {
			if data, heads, ok := uncacheBlock(b); ok {
				if st != nil {
					st.CacheHits++
				}
				return data, heads, nil
			}
		}
	}
	if st != nil {
		st.Blocks++
	}
	if scratch != nil && *scratch == nil {
		if b, ok := r.bufs.Get().(*[]byte); ok {
			*scratch = *b
		}
	}
	data, _, err := r.readBlock(h, scratch)
	if err == nil {
		err = checkBlock(data, r.name, h.offset)
	}
	if err != nil {
		return nil, keyHeads{}, err
	}
	if cache != nil {
		if e := cacheBlock(data, r.name, h.offset); e != nil {
			cache.Set(r.opts.CacheID, h.offset, e)
			data, heads, _ := uncacheBlock(e)
			return data, heads, nil
		}
	}
	return data, keyHeads{}, nil
}

// searchIndex returns the first data block whose last key is >= key, or
// len(index).
func (r *Reader) searchIndex(key []byte) int {
	n, _ := r.indexHeads.search(len(r.index), key, false, r.indexKey)
	return n
}

// indexKey is data block i's last key.
func (r *Reader) indexKey(i int) ([]byte, bool) { return r.index[i].lastKey, true }

// Name returns the name the reader was opened with.
func (r *Reader) Name() string { return r.name }

// Properties returns the table's properties. Their slices must not be
// modified.
func (r *Reader) Properties() Properties { return r.props }

// Size returns the file's size.
func (r *Reader) Size() uint64 { return r.size }

// MayContainRow reports whether the table may hold keys with the encoded
// row prefix (model.AppendRowPrefix). It is true when there is no filter.
func (r *Reader) MayContainRow(rowPrefix []byte) bool {
	return r.filter == nil || r.filter.Test(rowPrefix)
}

// MayContainRowStats is MayContainRow that counts, if st is not nil, a
// bloom filter check when the table has a filter, and a useful one when
// the filter excludes the row.
func (r *Reader) MayContainRowStats(rowPrefix []byte, st *ReadStats) bool {
	if r.filter == nil {
		return true
	}
	ok := r.filter.Test(rowPrefix)
	if st != nil {
		st.BloomChecks++
		if !ok {
			st.BloomUseful++
		}
	}
	return ok
}

// HasFilter reports whether the table has a bloom filter.
func (r *Reader) HasFilter() bool { return r.filter != nil }

// MayContainColumn reports whether the table may hold keys with the encoded
// column prefix (model.AppendColumnPrefix). It is true when there is no
// filter.
func (r *Reader) MayContainColumn(columnPrefix []byte) bool {
	return r.filter == nil || r.filter.Test(columnPrefix)
}

// Blocks describes the data blocks in key order.
func (r *Reader) Blocks() []BlockInfo {
	out := make([]BlockInfo, len(r.index))
	for i, e := range r.index {
		out[i] = BlockInfo{LastKey: e.lastKey, Offset: e.h.offset, Length: e.h.length}
	}
	return out
}

// Check reads the whole file back from storage, bypassing the cache and
// InMemory copies, and verifies it: checksums, block structure, strictly
// increasing keys across the file, an index that matches the blocks, a
// filter with no false negatives, and properties that match the entries.
// It returns the first problem as a *model.CorruptionError, or an I/O
// error.
func (r *Reader) Check() error {
	m, err := r.readMeta(nil)
	if err != nil {
		return err
	}
	if len(m.index) != len(r.index) {
		return model.Corruptf(r.name, int64(m.footer.index.offset), "index has %d entries, %d at open", len(m.index), len(r.index))
	}
	var (
		scratch  []byte
		prev     []byte
		n        uint64
		smallest []byte
	)
	for bi, e := range m.index {
		if e.h != r.index[bi].h || !bytes.Equal(e.lastKey, r.index[bi].lastKey) {
			return model.Corruptf(r.name, int64(m.footer.index.offset), "index entry %d changed since open", bi)
		}
		data, _, err := r.readBlock(e.h, &scratch)
		if err != nil {
			return err
		}
		var it blockIter
		if err := it.init(data, r.name, e.h.offset); err != nil {
			return err
		}
		first := true
		err = it.verify(func(key, value []byte) error {
			if first && n > 0 && bytes.Compare(prev, key) >= 0 {
				return model.Corruptf(r.name, int64(e.h.offset), "first key %s not greater than the previous block's last key %s", formatKey(key), formatKey(prev))
			}
			first = false
			if n == 0 {
				smallest = append([]byte(nil), key...)
			}
			n++
			prev = append(prev[:0], key...)
			if m.filter != nil {
				row, col := model.RowPrefix(key), columnPrefix(key)
				if (row != nil && !m.filter.Test(row)) || (col != nil && !m.filter.Test(col)) {
					return model.Corruptf(r.name, int64(m.footer.filter.offset), "filter rejects present key %s", formatKey(key))
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if first {
			return model.Corruptf(r.name, int64(e.h.offset), "empty data block")
		}
		if !bytes.Equal(prev, e.lastKey) {
			return model.Corruptf(r.name, int64(e.h.offset), "index names %s as the block's last key, but it is %s", formatKey(e.lastKey), formatKey(prev))
		}
	}
	p := m.props
	dataEnd := uint64(0)
	if len(m.index) > 0 {
		dataEnd = m.index[len(m.index)-1].h.end()
	}
	switch {
	case p.NumEntries != n:
		return model.Corruptf(r.name, int64(m.footer.props.offset), "properties count %d entries, the blocks hold %d", p.NumEntries, n)
	case p.DataSize != dataEnd:
		return model.Corruptf(r.name, int64(m.footer.props.offset), "properties give data size %d, the blocks end at %d", p.DataSize, dataEnd)
	case !bytes.Equal(p.SmallestKey, smallest) || !bytes.Equal(p.LargestKey, prev):
		return model.Corruptf(r.name, int64(m.footer.props.offset), "properties give key range [%s, %s], the table's is [%s, %s]",
			formatKey(p.SmallestKey), formatKey(p.LargestKey), formatKey(smallest), formatKey(prev))
	}
	return nil
}

// Close closes the file. The reader and its iterators must not be used
// afterwards.
func (r *Reader) Close() error {
	r.blocks = nil
	if err := r.f.Close(); err != nil {
		return model.IOError("sstable "+r.name, err)
	}
	return nil
}
