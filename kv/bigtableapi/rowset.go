package bigtableapi

import (
	"bytes"
	"slices"

	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"

	"github.com/cellardb/cellar/kv/model"
)

// span is a half-open interval of row keys [start, end); a nil end is the
// table's end. point says that it holds exactly one key, start.
type span struct {
	start, end []byte
	point      bool
}

// successor is the smallest key after k: k with a zero byte appended.
func successor(k []byte) []byte {
	return append(bytes.Clone(k), 0)
}

// rowSpans turns a RowSet into sorted, disjoint spans, so that every row
// it names is read once and in order. A nil or empty set is the whole
// table. Keys must be 1 byte to 64 KiB; a range whose start lies after its
// end is InvalidArgument (as on the service and in bttest), while one that
// merely holds no key, such as (a, a), reads nothing.
func rowSpans(rs *btpb.RowSet) ([]span, error) {
	if rs == nil || (len(rs.RowKeys) == 0 && len(rs.RowRanges) == 0) {
		return []span{{}}, nil
	}
	var spans []span
	for _, k := range rs.RowKeys {
		if err := checkRowKey(k); err != nil {
			return nil, err
		}
		spans = append(spans, span{start: k, end: successor(k), point: true})
	}
	for i, r := range rs.RowRanges {
		s, ok, err := rangeSpan(r)
		if err != nil {
			return nil, invalidf("row range #%d: %v", i, err)
		}
		if ok {
			spans = append(spans, s)
		}
	}
	return mergeSpans(spans), nil
}

// rangeSpan turns one RowRange into a span; ok is false if it holds no
// key. An empty key as a bound is no bound, as in the clients.
func rangeSpan(r *btpb.RowRange) (span, bool, error) {
	var s span
	var rawStart, rawEnd []byte
	startOpen, endClosed := false, false
	switch v := r.GetStartKey().(type) {
	case *btpb.RowRange_StartKeyClosed:
		rawStart = v.StartKeyClosed
	case *btpb.RowRange_StartKeyOpen:
		rawStart, startOpen = v.StartKeyOpen, true
	}
	switch v := r.GetEndKey().(type) {
	case *btpb.RowRange_EndKeyOpen:
		rawEnd = v.EndKeyOpen
	case *btpb.RowRange_EndKeyClosed:
		rawEnd, endClosed = v.EndKeyClosed, true
	}
	for _, k := range [][]byte{rawStart, rawEnd} {
		if len(k) > model.MaxRowKeyLen {
			return span{}, false, invalidf("row key of %d bytes exceeds the limit of %d bytes", len(k), model.MaxRowKeyLen)
		}
	}
	if len(rawStart) > 0 && len(rawEnd) > 0 && bytes.Compare(rawStart, rawEnd) > 0 {
		return span{}, false, invalidf("the start key %q lies after the end key %q", rawStart, rawEnd)
	}
	s.start = rawStart
	if startOpen && len(rawStart) > 0 {
		s.start = successor(rawStart)
	}
	if len(rawEnd) > 0 {
		s.end = rawEnd
		if endClosed {
			s.end = successor(rawEnd)
		}
		if bytes.Compare(s.start, s.end) >= 0 {
			return span{}, false, nil
		}
	}
	return s, true, nil
}

// mergeSpans sorts spans by start and merges those that overlap or touch.
func mergeSpans(spans []span) []span {
	slices.SortFunc(spans, func(a, b span) int { return bytes.Compare(a.start, b.start) })
	var out []span
	for _, s := range spans {
		if n := len(out); n > 0 {
			last := &out[n-1]
			if last.end == nil || bytes.Compare(s.start, last.end) <= 0 {
				if s.end == nil || (last.end != nil && bytes.Compare(s.end, last.end) > 0) {
					last.end = s.end
				}
				last.point = last.point && s.point && bytes.Equal(last.start, s.start)
				continue
			}
		}
		out = append(out, s)
	}
	return out
}

// rowRange is the span as kv/model's range (an empty End: the table's end).
func (s span) rowRange() model.RowRange {
	return model.RowRange{Start: s.start, End: s.end}
}
