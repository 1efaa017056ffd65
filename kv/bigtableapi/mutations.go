package bigtableapi

import (
	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"

	"github.com/cellardb/cellar/kv/model"
)

// MaxMutations is the most mutations one row mutation, one
// CheckAndMutateRow or one MutateRows request may carry, as on the
// service.
const MaxMutations = 100_000

// microsPerMilli is the granularity of timestamps: tables have the service's
// default, milliseconds, so client timestamps are multiples of 1000 µs.
const microsPerMilli = 1000

// checkRowKey applies the service's rules for a row key: present, and at
// most 64 KiB.
func checkRowKey(key []byte) error {
	if len(key) == 0 {
		return invalidf("row keys must be non-empty")
	}
	if len(key) > model.MaxRowKeyLen {
		return invalidf("row key of %d bytes exceeds the limit of %d bytes", len(key), model.MaxRowKeyLen)
	}
	return nil
}

// checkTimestamp checks a client timestamp in µs: non-negative and
// millisecond-aligned. what names it in the error.
func checkTimestamp(what string, ts int64) error {
	switch {
	case ts < 0:
		return invalidf("invalid %s %d: timestamps must not be negative", what, ts)
	case ts > model.MaxTimestamp:
		return invalidf("invalid %s %d: beyond the largest timestamp %d", what, ts, model.MaxTimestamp)
	case ts%microsPerMilli != 0:
		return invalidf("timestamp granularity mismatch: %s %d is not a multiple of %d microseconds, as the table's millisecond granularity requires", what, ts, microsPerMilli)
	}
	return nil
}

// translateMutations turns a request's mutations into kv/model's. It
// checks what the service checks before it touches a row: at least one
// mutation, no more than MaxMutations, the timestamps, and the kinds
// cellar supports. Families are checked by the tablet servers (NotFound).
func translateMutations(ms []*btpb.Mutation) ([]model.Mutation, error) {
	if len(ms) == 0 {
		return nil, invalidf("no mutations provided")
	}
	if len(ms) > MaxMutations {
		return nil, invalidf("too many mutations: %d, the limit is %d", len(ms), MaxMutations)
	}
	out := make([]model.Mutation, len(ms))
	for i, m := range ms {
		var err error
		if out[i], err = translateMutation(m); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// translateBranch is translateMutations for a CheckAndMutateRow branch,
// which may be empty.
func translateBranch(ms []*btpb.Mutation) ([]model.Mutation, error) {
	if len(ms) == 0 {
		return nil, nil
	}
	return translateMutations(ms)
}

func translateMutation(m *btpb.Mutation) (model.Mutation, error) {
	switch v := m.GetMutation().(type) {
	case *btpb.Mutation_SetCell_:
		sc := v.SetCell
		ts := sc.GetTimestampMicros()
		if ts != model.ServerTimestamp {
			if err := checkTimestamp("timestamp", ts); err != nil {
				return model.Mutation{}, err
			}
		}
		// -1 goes down as model.ServerTimestamp: the tablet assigns it.
		return model.SetCell(sc.GetFamilyName(), sc.GetColumnQualifier(), ts, sc.GetValue()), nil
	case *btpb.Mutation_DeleteFromColumn_:
		d := v.DeleteFromColumn
		r := model.TimeRange{Start: d.GetTimeRange().GetStartTimestampMicros(), End: d.GetTimeRange().GetEndTimestampMicros()}
		if err := checkTimestamp("start of the time range", r.Start); err != nil {
			return model.Mutation{}, err
		}
		if r.End != 0 {
			if err := checkTimestamp("end of the time range", r.End); err != nil {
				return model.Mutation{}, err
			}
			if r.End <= r.Start {
				return model.Mutation{}, invalidf("inverted or empty timestamp range [%d, %d)", r.Start, r.End)
			}
		}
		return model.DeleteColumn(d.GetFamilyName(), d.GetColumnQualifier(), r), nil
	case *btpb.Mutation_DeleteFromFamily_:
		return model.DeleteFamily(v.DeleteFromFamily.GetFamilyName()), nil
	case *btpb.Mutation_DeleteFromRow_:
		return model.DeleteRow(), nil
	case *btpb.Mutation_AddToCell_:
		return model.Mutation{}, invalidf("AddToCell needs an aggregate column family, which cellar does not have; ReadModifyWriteRow increments 8-byte integers")
	case *btpb.Mutation_MergeToCell_:
		return model.Mutation{}, invalidf("MergeToCell needs an aggregate column family, which cellar does not have")
	case nil:
		return model.Mutation{}, invalidf("a mutation with no mutation set")
	default:
		return model.Mutation{}, invalidf("unknown mutation %T", v)
	}
}
