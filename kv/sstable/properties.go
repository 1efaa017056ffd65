package sstable

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"

	"github.com/cellardb/cellar/kv/model"
)

// Properties describe a table. The writer computes them from the keys; the
// seq and timestamp statistics come from model.Trailer and skip keys shorter
// than model.TrailerLen.
type Properties struct {
	NumEntries uint64
	// NumDeletions counts entries whose kind is not model.KindSetCell.
	NumDeletions  uint64
	NumDataBlocks uint64
	RawKeyBytes   uint64
	RawValueBytes uint64
	// DataSize, IndexSize and FilterSize are on-disk sizes, block trailers
	// included. FilterSize is 0 without a filter.
	DataSize   uint64
	IndexSize  uint64
	FilterSize uint64
	// SmallestKey and LargestKey are nil for an empty table.
	SmallestKey []byte
	LargestKey  []byte
	MinSeq      uint64
	MaxSeq      uint64
	// MinTimestamp and MaxTimestamp range over KindSetCell entries only;
	// both are 0 if there are none.
	MinTimestamp int64
	MaxTimestamp int64
	// Compression is the writer's setting; blocks it did not shrink are
	// stored uncompressed regardless.
	Compression model.Compression
	HasFilter   bool
}

// Property names, as stored.
const (
	propNumEntries    = "cellar.num_entries"
	propNumDeletions  = "cellar.num_deletions"
	propNumDataBlocks = "cellar.num_data_blocks"
	propRawKeyBytes   = "cellar.raw_key_bytes"
	propRawValueBytes = "cellar.raw_value_bytes"
	propDataSize      = "cellar.data_size"
	propIndexSize     = "cellar.index_size"
	propFilterSize    = "cellar.filter_size"
	propSmallestKey   = "cellar.smallest_key"
	propLargestKey    = "cellar.largest_key"
	propMinSeq        = "cellar.min_seq"
	propMaxSeq        = "cellar.max_seq"
	propMinTimestamp  = "cellar.min_timestamp"
	propMaxTimestamp  = "cellar.max_timestamp"
	propCompression   = "cellar.compression"
	propHasFilter     = "cellar.has_filter"
)

// encode returns the properties block payload.
func (p *Properties) encode() []byte {
	type prop struct {
		name  string
		value []byte
	}
	u := func(name string, v uint64) prop { return prop{name, binary.AppendUvarint(nil, v)} }
	s := func(name string, v int64) prop { return prop{name, binary.AppendVarint(nil, v)} }
	hasFilter := uint64(0)
	if p.HasFilter {
		hasFilter = 1
	}
	props := []prop{
		u(propNumEntries, p.NumEntries),
		u(propNumDeletions, p.NumDeletions),
		u(propNumDataBlocks, p.NumDataBlocks),
		u(propRawKeyBytes, p.RawKeyBytes),
		u(propRawValueBytes, p.RawValueBytes),
		u(propDataSize, p.DataSize),
		u(propIndexSize, p.IndexSize),
		u(propFilterSize, p.FilterSize),
		{propSmallestKey, p.SmallestKey},
		{propLargestKey, p.LargestKey},
		u(propMinSeq, p.MinSeq),
		u(propMaxSeq, p.MaxSeq),
		s(propMinTimestamp, p.MinTimestamp),
		s(propMaxTimestamp, p.MaxTimestamp),
		u(propCompression, uint64(p.Compression)),
		u(propHasFilter, hasFilter),
	}
	sort.Slice(props, func(i, j int) bool { return props[i].name < props[j].name })
	bw := blockWriter{restartInterval: defaultRestartInterval}
	for _, pr := range props {
		bw.add([]byte(pr.name), pr.value)
	}
	return bw.finish()
}

// decodeProperties parses a properties block payload; off is the block's
// file offset, for errors. Unknown names are skipped.
func decodeProperties(data []byte, file string, off uint64) (Properties, error) {
	var p Properties
	var it blockIter
	if err := it.init(data, file, off); err != nil {
		return p, err
	}
	bad := func(name string) error {
		return model.Corruptf(file, int64(off), "property %s has a malformed value", name)
	}
	for ok := it.first(); ok; ok = it.nextEntry() {
		name, v := string(it.key), it.val
		var dst *uint64
		switch name {
		case propNumEntries:
			dst = &p.NumEntries
		case propNumDeletions:
			dst = &p.NumDeletions
		case propNumDataBlocks:
			dst = &p.NumDataBlocks
		case propRawKeyBytes:
			dst = &p.RawKeyBytes
		case propRawValueBytes:
			dst = &p.RawValueBytes
		case propDataSize:
			dst = &p.DataSize
		case propIndexSize:
			dst = &p.IndexSize
		case propFilterSize:
			dst = &p.FilterSize
		case propMinSeq:
			dst = &p.MinSeq
		case propMaxSeq:
			dst = &p.MaxSeq
		case propSmallestKey:
			p.SmallestKey = append([]byte(nil), v...)
		case propLargestKey:
			p.LargestKey = append([]byte(nil), v...)
		case propMinTimestamp, propMaxTimestamp:
			x, n := binary.Varint(v)
			if n <= 0 || n != len(v) {
				return p, bad(name)
			}
			if name == propMinTimestamp {
				p.MinTimestamp = x
			} else {
				p.MaxTimestamp = x
			}
		case propCompression, propHasFilter:
			x, n := binary.Uvarint(v)
			if n <= 0 || n != len(v) || x > 1 {
				return p, bad(name)
			}
			if name == propCompression {
				p.Compression = model.Compression(x)
			} else {
				p.HasFilter = x == 1
			}
		}
		if dst != nil {
			x, n := binary.Uvarint(v)
			if n <= 0 || n != len(v) {
				return p, bad(name)
			}
			*dst = x
		}
	}
	if it.err != nil {
		return p, it.err
	}
	return p, nil
}

// String lists the properties one per line, keys decoded where they parse.
func (p Properties) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "num-entries: %d\n", p.NumEntries)
	fmt.Fprintf(&b, "num-deletions: %d\n", p.NumDeletions)
	fmt.Fprintf(&b, "num-data-blocks: %d\n", p.NumDataBlocks)
	fmt.Fprintf(&b, "raw-key-bytes: %d\n", p.RawKeyBytes)
	fmt.Fprintf(&b, "raw-value-bytes: %d\n", p.RawValueBytes)
	fmt.Fprintf(&b, "data-size: %d\n", p.DataSize)
	fmt.Fprintf(&b, "index-size: %d\n", p.IndexSize)
	fmt.Fprintf(&b, "filter-size: %d\n", p.FilterSize)
	fmt.Fprintf(&b, "smallest-key: %s\n", formatKey(p.SmallestKey))
	fmt.Fprintf(&b, "largest-key: %s\n", formatKey(p.LargestKey))
	fmt.Fprintf(&b, "seq: [%d, %d]\n", p.MinSeq, p.MaxSeq)
	fmt.Fprintf(&b, "timestamp: [%d, %d]\n", p.MinTimestamp, p.MaxTimestamp)
	fmt.Fprintf(&b, "compression: %s\n", compressionName(p.Compression))
	fmt.Fprintf(&b, "has-filter: %t\n", p.HasFilter)
	return b.String()
}

func compressionName(c model.Compression) string {
	switch c {
	case model.CompressionSnappy:
		return "snappy"
	case model.CompressionNone:
		return "none"
	}
	return fmt.Sprintf("compression(%d)", uint8(c))
}
