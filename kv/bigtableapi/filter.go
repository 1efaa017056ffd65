package bigtableapi

import (
	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"
	"google.golang.org/protobuf/proto"

	"github.com/cellardb/cellar/kv/model"
)

// MaxFilterBytes is the largest serialized RowFilter the service accepts.
const MaxFilterBytes = 20 << 10

// maxFilterNesting stops the translation of a filter nested far deeper
// than any valid one (the tablet servers reject more than
// model.MaxRowFilterDepth levels; this only bounds the recursion here).
const maxFilterNesting = 4 * model.MaxRowFilterDepth

// translateFilter turns a request's row filter into kv/model's tree. nil
// stays nil (no filter). It checks only what the tree cannot express —
// the serialized size and absurd nesting; everything else (regexes,
// ranges, limits, labels, depth, sinks in conditions) is validated by
// the tablet servers, which answer InvalidArgument.
func translateFilter(f *btpb.RowFilter) (*model.RowFilter, error) {
	if f == nil {
		return nil, nil
	}
	if n := proto.Size(f); n > MaxFilterBytes {
		return nil, invalidf("row filter of %d bytes exceeds the limit of %d bytes", n, MaxFilterBytes)
	}
	var out model.RowFilter
	if err := translateInto(&out, f, 0); err != nil {
		return nil, err
	}
	return &out, nil
}

func translateInto(out *model.RowFilter, f *btpb.RowFilter, depth int) error {
	if depth > maxFilterNesting {
		return invalidf("row filter: filters nest deeper than %d levels", model.MaxRowFilterDepth)
	}
	if f == nil {
		return nil // an unset message passes all
	}
	list := func(kind model.RowFilterKind, fs []*btpb.RowFilter) error {
		out.Kind = kind
		out.Filters = make([]model.RowFilter, len(fs))
		for i, s := range fs {
			if err := translateInto(&out.Filters[i], s, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	sub := func(s *btpb.RowFilter) (*model.RowFilter, error) {
		if s == nil {
			return nil, nil
		}
		var m model.RowFilter
		if err := translateInto(&m, s, depth+1); err != nil {
			return nil, err
		}
		return &m, nil
	}
	switch v := f.Filter.(type) {
	case nil:
		// No filter set: passes all, like pass_all_filter.
	case *btpb.RowFilter_Chain_:
		return list(model.RowFilterChain, v.Chain.GetFilters())
	case *btpb.RowFilter_Interleave_:
		return list(model.RowFilterInterleave, v.Interleave.GetFilters())
	case *btpb.RowFilter_Condition_:
		out.Kind = model.RowFilterCondition
		var err error
		if out.Predicate, err = sub(v.Condition.GetPredicateFilter()); err != nil {
			return err
		}
		if out.True, err = sub(v.Condition.GetTrueFilter()); err != nil {
			return err
		}
		if out.False, err = sub(v.Condition.GetFalseFilter()); err != nil {
			return err
		}
	case *btpb.RowFilter_Sink:
		out.Kind, out.FlagFalse = model.RowFilterSink, !v.Sink
	case *btpb.RowFilter_PassAllFilter:
		out.Kind, out.FlagFalse = model.RowFilterPassAll, !v.PassAllFilter
	case *btpb.RowFilter_BlockAllFilter:
		out.Kind, out.FlagFalse = model.RowFilterBlockAll, !v.BlockAllFilter
	case *btpb.RowFilter_StripValueTransformer:
		out.Kind, out.FlagFalse = model.RowFilterStripValue, !v.StripValueTransformer
	case *btpb.RowFilter_RowKeyRegexFilter:
		out.Kind, out.Regex = model.RowFilterRowKeyRegex, v.RowKeyRegexFilter
	case *btpb.RowFilter_RowSampleFilter:
		out.Kind, out.Probability = model.RowFilterRowSample, v.RowSampleFilter
	case *btpb.RowFilter_FamilyNameRegexFilter:
		out.Kind, out.Regex = model.RowFilterFamilyRegex, []byte(v.FamilyNameRegexFilter)
	case *btpb.RowFilter_ColumnQualifierRegexFilter:
		out.Kind, out.Regex = model.RowFilterQualifierRegex, v.ColumnQualifierRegexFilter
	case *btpb.RowFilter_ValueRegexFilter:
		out.Kind, out.Regex = model.RowFilterValueRegex, v.ValueRegexFilter
	case *btpb.RowFilter_ColumnRangeFilter:
		r := v.ColumnRangeFilter
		out.Kind, out.Family = model.RowFilterColumnRange, r.GetFamilyName()
		switch s := r.GetStartQualifier().(type) {
		case *btpb.ColumnRange_StartQualifierClosed:
			out.Start = model.Bound{Kind: model.BoundClosed, Value: s.StartQualifierClosed}
		case *btpb.ColumnRange_StartQualifierOpen:
			out.Start = model.Bound{Kind: model.BoundOpen, Value: s.StartQualifierOpen}
		}
		switch e := r.GetEndQualifier().(type) {
		case *btpb.ColumnRange_EndQualifierClosed:
			out.End = model.Bound{Kind: model.BoundClosed, Value: e.EndQualifierClosed}
		case *btpb.ColumnRange_EndQualifierOpen:
			out.End = model.Bound{Kind: model.BoundOpen, Value: e.EndQualifierOpen}
		}
	case *btpb.RowFilter_ValueRangeFilter:
		r := v.ValueRangeFilter
		out.Kind = model.RowFilterValueRange
		switch s := r.GetStartValue().(type) {
		case *btpb.ValueRange_StartValueClosed:
			out.Start = model.Bound{Kind: model.BoundClosed, Value: s.StartValueClosed}
		case *btpb.ValueRange_StartValueOpen:
			out.Start = model.Bound{Kind: model.BoundOpen, Value: s.StartValueOpen}
		}
		switch e := r.GetEndValue().(type) {
		case *btpb.ValueRange_EndValueClosed:
			out.End = model.Bound{Kind: model.BoundClosed, Value: e.EndValueClosed}
		case *btpb.ValueRange_EndValueOpen:
			out.End = model.Bound{Kind: model.BoundOpen, Value: e.EndValueOpen}
		}
	case *btpb.RowFilter_TimestampRangeFilter:
		out.Kind = model.RowFilterTimestampRange
		out.Time = model.TimeRange{Start: v.TimestampRangeFilter.GetStartTimestampMicros(), End: v.TimestampRangeFilter.GetEndTimestampMicros()}
	case *btpb.RowFilter_CellsPerRowOffsetFilter:
		out.Kind, out.N = model.RowFilterCellsPerRowOffset, v.CellsPerRowOffsetFilter
	case *btpb.RowFilter_CellsPerRowLimitFilter:
		out.Kind, out.N = model.RowFilterCellsPerRowLimit, v.CellsPerRowLimitFilter
	case *btpb.RowFilter_CellsPerColumnLimitFilter:
		out.Kind, out.N = model.RowFilterCellsPerColumnLimit, v.CellsPerColumnLimitFilter
	case *btpb.RowFilter_ApplyLabelTransformer:
		out.Kind, out.Label = model.RowFilterApplyLabel, v.ApplyLabelTransformer
	case *btpb.RowFilter_ValueBitmaskFilter:
		out.Kind, out.Mask = model.RowFilterValueBitmask, v.ValueBitmaskFilter.GetMask()
	default:
		return invalidf("row filter: unknown filter %T", v)
	}
	return nil
}
