package sstable

import (
	"bytes"
	"encoding/binary"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/cellardb/cellar/kv/model"
)

const (
	// minFilterKeys keeps a filter useful when the caller's estimate is
	// missing or tiny.
	minFilterKeys = 1024
	// maxFilterHashes bounds the probes per lookup a stored filter may ask
	// for; EstimateParameters gives 30 even at a 1e-9 rate.
	maxFilterHashes = 64
	// filterHeaderLen is bloom's m and k and the bitset's length, all u64 BE.
	filterHeaderLen = 24
)

// filterWriter adds the row and column prefixes of each key to a bloom
// filter, skipping a prefix equal to the previous one of its kind.
type filterWriter struct {
	f       *bloom.BloomFilter
	lastRow []byte
	lastCol []byte
}

func newFilterWriter(expectedKeys int, fpRate float64) *filterWriter {
	// Every entry contributes up to two filter keys.
	n := max(2*expectedKeys, minFilterKeys)
	return &filterWriter{f: bloom.NewWithEstimates(uint(n), fpRate)}
}

func (w *filterWriter) add(key []byte) {
	row := model.RowPrefix(key)
	if row == nil {
		return
	}
	if !bytes.Equal(row, w.lastRow) {
		w.f.Add(row)
		w.lastRow = append(w.lastRow[:0], row...)
	}
	if col := columnPrefix(key); col != nil && !bytes.Equal(col, w.lastCol) {
		w.f.Add(col)
		w.lastCol = append(w.lastCol[:0], col...)
	}
}

// columnPrefix is model.ColumnPrefix for keys that are long enough to have
// one and whose row ends before the trailer, else nil.
func columnPrefix(key []byte) []byte {
	if len(key) < model.TrailerLen {
		return nil
	}
	col := model.ColumnPrefix(key)
	if model.RowPrefix(col) == nil {
		return nil
	}
	return col
}

// decodeFilter parses a stored filter. The header is checked before the
// bloom package sees it, since it would allocate whatever length the bytes
// claim and divide by a zero m.
func decodeFilter(data []byte, file string, off uint64) (*bloom.BloomFilter, error) {
	if len(data) < filterHeaderLen {
		return nil, model.Corruptf(file, int64(off), "filter of %d bytes is shorter than its header", len(data))
	}
	m := binary.BigEndian.Uint64(data)
	k := binary.BigEndian.Uint64(data[8:])
	bits := binary.BigEndian.Uint64(data[16:])
	words := uint64(len(data)-filterHeaderLen) / 8
	if m == 0 || m > 64*words || (m+63)/64 != words || bits != m ||
		k == 0 || k > maxFilterHashes || uint64(len(data)) != filterHeaderLen+8*words {
		return nil, model.Corruptf(file, int64(off), "malformed filter: m=%d k=%d bits=%d in %d bytes", m, k, bits, len(data))
	}
	f := &bloom.BloomFilter{}
	if err := f.UnmarshalBinary(data); err != nil {
		return nil, model.Corruptf(file, int64(off), "malformed filter: %v", err)
	}
	return f, nil
}
