package client

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/model"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// rowFilterProto encodes a row filter for the tablet servers, which
// validate it (model.CompileRowFilter). The encoding copies the tree field
// by field; it checks only the depth, because a tree built in Go may be
// cyclic through its pointers and must not make the client recurse
// forever. A tree deeper than the service allows fails with
// InvalidArgument before any RPC, as the server would answer.
func rowFilterProto(f *model.RowFilter) (*pb.RowFilter, error) {
	return encodeRowFilter(f, 0)
}

func encodeRowFilter(f *model.RowFilter, depth int) (*pb.RowFilter, error) {
	if depth > model.MaxRowFilterDepth {
		return nil, status.Errorf(codes.InvalidArgument, "row filter: filters nest deeper than %d levels", model.MaxRowFilterDepth)
	}
	out := &pb.RowFilter{
		Kind:        pb.RowFilter_Kind(f.Kind),
		Regex:       f.Regex,
		Probability: f.Probability,
		Family:      f.Family,
		Start:       boundProto(f.Start),
		End:         boundProto(f.End),
		N:           f.N,
		Label:       f.Label,
		Mask:        f.Mask,
		FlagFalse:   f.FlagFalse,
	}
	if f.Time != (model.TimeRange{}) {
		out.Time = &pb.TimeRange{Start: f.Time.Start, End: f.Time.End}
	}
	if len(f.Filters) > 0 {
		out.Filters = make([]*pb.RowFilter, len(f.Filters))
		for i := range f.Filters {
			var err error
			if out.Filters[i], err = encodeRowFilter(&f.Filters[i], depth+1); err != nil {
				return nil, err
			}
		}
	}
	// Presence matters (an unset predicate passes all, an unset branch
	// outputs nothing), so nil stays unset.
	for _, br := range []struct {
		f   *model.RowFilter
		dst **pb.RowFilter
	}{{f.Predicate, &out.Predicate}, {f.True, &out.TrueFilter}, {f.False, &out.FalseFilter}} {
		if br.f == nil {
			continue
		}
		var err error
		if *br.dst, err = encodeRowFilter(br.f, depth+1); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func boundProto(b model.Bound) *pb.Bound {
	if b.Kind == model.BoundUnbounded && b.Value == nil {
		return nil
	}
	return &pb.Bound{Kind: pb.Bound_Kind(b.Kind), Value: b.Value}
}
