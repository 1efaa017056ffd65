package model

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
)

// TrailerLen is the length of the timestamp and sequence trailer that ends
// every internal key.
const TrailerLen = 16

// MaxSeq is the largest sequence number an entry can carry.
const MaxSeq = 1<<56 - 1

// markerTimestamp is the timestamp slot of row and family markers.
const markerTimestamp = math.MaxInt64

var errBadKey = errors.New("malformed internal key")

// appendEscaped writes b with each 0x00 as 00 FF, then the terminator 00 01.
func appendEscaped(dst, b []byte) []byte {
	for {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			break
		}
		dst = append(dst, b[:i+1]...)
		dst = append(dst, 0xFF)
		b = b[i+1:]
	}
	dst = append(dst, b...)
	return append(dst, 0x00, 0x01)
}

// AppendRowPrefix appends the encoded row, the prefix shared by every key of
// the row and the smallest of them.
func AppendRowPrefix(dst, row []byte) []byte { return appendEscaped(dst, row) }

// RowLimit turns a row prefix (as AppendRowPrefix returns it) into the
// smallest key greater than every key of that row, in place.
func RowLimit(rowPrefix []byte) []byte {
	rowPrefix[len(rowPrefix)-1] = 0x02
	return rowPrefix
}

// AppendColumnPrefix appends the part of a key that names the column, the
// prefix shared by every version of the column.
func AppendColumnPrefix(dst, row []byte, family string, qualifier []byte) []byte {
	dst = appendEscaped(dst, row)
	dst = append(dst, family...)
	dst = append(dst, 0)
	return appendEscaped(dst, qualifier)
}

// AppendTrailer appends the timestamp and the sequence/kind trailer.
func AppendTrailer(dst []byte, ts int64, seq uint64, kind MutationKind) []byte {
	dst = binary.BigEndian.AppendUint64(dst, ^uint64(ts))
	return binary.BigEndian.AppendUint64(dst, ^(seq<<8 | uint64(kind)))
}

// AppendKey appends a full internal key.
func AppendKey(dst, row []byte, family string, qualifier []byte, ts int64, seq uint64, kind MutationKind) []byte {
	dst = AppendColumnPrefix(dst, row, family, qualifier)
	return AppendTrailer(dst, ts, seq, kind)
}

// AppendRowMarker appends the key of a row deletion marker.
func AppendRowMarker(dst, row []byte, seq uint64) []byte {
	return AppendKey(dst, row, "", nil, markerTimestamp, seq, KindDeleteRow)
}

// AppendFamilyMarker appends the key of a family deletion marker.
func AppendFamilyMarker(dst, row []byte, family string, seq uint64) []byte {
	return AppendKey(dst, row, family, nil, markerTimestamp, seq, KindDeleteFamily)
}

// AppendColumnMarker appends the key of a column deletion marker for r. The
// marker's value, from ColumnMarkerValue, holds the start of the range.
func AppendColumnMarker(dst, row []byte, family string, qualifier []byte, r TimeRange, seq uint64) []byte {
	top := MaxTimestamp
	if r.End != 0 {
		top = r.End - 1
	}
	return AppendKey(dst, row, family, qualifier, top, seq, KindDeleteColumn)
}

// ColumnMarkerValue encodes the start of a column marker's range.
func ColumnMarkerValue(r TimeRange) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(r.Start))
}

// ColumnMarkerRange decodes the range [start, top] a column marker covers
// from its key's timestamp and its value.
func ColumnMarkerRange(ts int64, value []byte) (start, top int64, ok bool) {
	if len(value) != 8 {
		return 0, 0, false
	}
	return int64(binary.BigEndian.Uint64(value)), ts, true
}

// Trailer decodes the timestamp, sequence number and kind of a key. The key
// must be at least TrailerLen long.
func Trailer(key []byte) (ts int64, seq uint64, kind MutationKind) {
	t := key[len(key)-TrailerLen:]
	ts = int64(^binary.BigEndian.Uint64(t))
	x := ^binary.BigEndian.Uint64(t[8:])
	return ts, x >> 8, MutationKind(x)
}

// ColumnPrefix returns the part of a key that names the row and column.
func ColumnPrefix(key []byte) []byte { return key[:len(key)-TrailerLen] }

// terminated finds the end of an escaped field: the index just past its
// 00 01 terminator, or -1.
func terminated(b []byte) int {
	off := 0
	for {
		i := bytes.IndexByte(b[off:], 0)
		if i < 0 || off+i+1 >= len(b) {
			return -1
		}
		switch b[off+i+1] {
		case 0x01:
			return off + i + 2
		case 0xFF:
			off += i + 2
		default:
			return -1
		}
	}
}

// RowPrefix returns the encoded row at the start of key, terminator
// included, or nil if the key is malformed.
func RowPrefix(key []byte) []byte {
	n := terminated(key)
	if n < 0 {
		return nil
	}
	return key[:n]
}

func unescape(field []byte) []byte {
	// field excludes the terminator.
	if bytes.IndexByte(field, 0) < 0 {
		return field
	}
	out := make([]byte, 0, len(field))
	for i := 0; i < len(field); i++ {
		out = append(out, field[i])
		if field[i] == 0 {
			i++ // skip the FF
		}
	}
	return out
}

// Key is a decoded internal key. Row and Qualifier alias the encoded key
// unless they contained zero bytes.
type Key struct {
	Row       []byte
	Family    []byte
	Qualifier []byte
	Timestamp int64
	Seq       uint64
	Kind      MutationKind
}

// DecodeKey splits an internal key into its parts.
func DecodeKey(key []byte) (Key, error) {
	if len(key) < TrailerLen+4 {
		return Key{}, errBadKey
	}
	body := key[:len(key)-TrailerLen]
	n := terminated(body)
	if n < 0 {
		return Key{}, errBadKey
	}
	var k Key
	k.Row = unescape(body[:n-2])
	rest := body[n:]
	f := bytes.IndexByte(rest, 0)
	if f < 0 {
		return Key{}, errBadKey
	}
	k.Family = rest[:f]
	rest = rest[f+1:]
	q := terminated(rest)
	if q != len(rest) {
		return Key{}, errBadKey
	}
	k.Qualifier = unescape(rest[:q-2])
	k.Timestamp, k.Seq, k.Kind = Trailer(key)
	if k.Kind < KindSetCell || k.Kind > KindDeleteRow {
		return Key{}, errBadKey
	}
	return k, nil
}

// FamilyOf returns the family of an internal key whose row prefix has length
// rowLen. It returns nil for a malformed key.
func FamilyOf(key []byte, rowLen int) []byte {
	rest := key[rowLen:]
	f := bytes.IndexByte(rest, 0)
	if f < 0 {
		return nil
	}
	return rest[:f]
}

// QualifierOf returns the raw qualifier of an internal key whose row prefix
// has length rowLen and whose family has length famLen.
func QualifierOf(key []byte, rowLen, famLen int) []byte {
	return unescape(key[rowLen+famLen+1 : len(key)-TrailerLen-2])
}

// RowOf returns the raw row of an encoded row prefix.
func RowOf(rowPrefix []byte) []byte { return unescape(rowPrefix[:len(rowPrefix)-2]) }

// KeyHead packs the first 8 bytes of k, zero padded, into an integer that
// orders like the bytes: keys whose heads differ order like their heads;
// equal heads need a full comparison (padding makes "ab" and "ab\x00"
// alike). The memtable's skiplist and SSTable searches compare heads
// first.
func KeyHead(k []byte) uint64 {
	if len(k) >= 8 {
		return binary.BigEndian.Uint64(k)
	}
	var b [8]byte
	copy(b[:], k)
	return binary.BigEndian.Uint64(b[:])
}
