package bigtableapi

import (
	"bytes"

	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"

	"github.com/cellardb/cellar/kv/client"
)

// SampleRowKeys streams the table's tablet boundaries with the bytes that
// precede each: the service's split points for parallel scans, here the
// real tablets of the table and their SSTable sizes (see
// client.SampleRowKeys).
func (d *dataService) SampleRowKeys(req *btpb.SampleRowKeysRequest, stream btpb.Bigtable_SampleRowKeysServer) error {
	name, err := dataTable(req.TableName, req.AuthorizedViewName, req.MaterializedViewName)
	if err != nil {
		return err
	}
	var s span
	var end []byte
	if req.RowRange != nil {
		var ok bool
		if s, ok, err = rangeSpan(req.RowRange); err != nil {
			return err
		}
		end = rangeEndKey(req.RowRange)
		if !ok {
			// A range that holds no key: only its end, with nothing
			// before it.
			return stream.Send(&btpb.SampleRowKeysResponse{RowKey: end})
		}
	}
	samples, err := d.opts.Rows.SampleRowKeys(stream.Context(), name.table)
	if err != nil {
		return toStatus(err)
	}
	for _, smp := range samplesIn(samples, s, end) {
		if err := stream.Send(&btpb.SampleRowKeysResponse{RowKey: smp.Key, OffsetBytes: smp.OffsetBytes}); err != nil {
			return err
		}
	}
	return nil
}

// rangeEndKey is a row range's end key as the client wrote it, or nil if
// it has none.
func rangeEndKey(r *btpb.RowRange) []byte {
	switch v := r.GetEndKey().(type) {
	case *btpb.RowRange_EndKeyOpen:
		return v.EndKeyOpen
	case *btpb.RowRange_EndKeyClosed:
		return v.EndKeyClosed
	}
	return nil
}

// samplesIn restricts a table's samples to the span s, as the service does
// for a request with a row_range: the samples inside it, then the range's
// end (end, as the client wrote it, or the table's end); offsets count
// from the sample before the span's start. The bytes up to the end are
// those of the tablet holding it, so the last offset is an upper bound.
// The zero span is the whole table: the samples unchanged.
func samplesIn(samples []client.SampleRowKey, s span, end []byte) []client.SampleRowKey {
	if len(s.start) == 0 && s.end == nil {
		return samples
	}
	// The last sample is the range's end as the client wrote it, so the
	// samples inside stop before that key (for a closed end too).
	limit := s.end
	if s.end != nil && end != nil {
		limit = end
	}
	var base int64
	var out []client.SampleRowKey
	for _, smp := range samples {
		last := len(smp.Key) == 0
		if !last && bytes.Compare(smp.Key, s.start) <= 0 {
			base = smp.OffsetBytes // before the span: counts are from here
			continue
		}
		if !last && (limit == nil || bytes.Compare(smp.Key, limit) < 0) {
			out = append(out, client.SampleRowKey{Key: smp.Key, OffsetBytes: smp.OffsetBytes - base})
			continue
		}
		// The tablet that holds the span's end.
		if s.end == nil {
			end = nil
		}
		return append(out, client.SampleRowKey{Key: end, OffsetBytes: smp.OffsetBytes - base})
	}
	return out
}
