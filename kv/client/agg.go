package client

import (
	"bytes"
	"context"
	"encoding/binary"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/model"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// Aggregation pushed down to the tablet servers (SQL's COUNT, SUM, MIN,
// MAX and AVG with GROUP BY): each server folds its rows into partial
// results per group, in calls of bounded work, and Aggregate merges the
// partials into the final groups.

// ColumnRef names a column and the type its values are decoded as.
type ColumnRef struct {
	Family    string
	Qualifier []byte
	Type      model.ValueType
}

// GroupKey is one GROUP BY entry: the whole row key if RowKey, else the
// newest value of Column (a row without it is in the NULL group). Values
// group by PostgreSQL's equality: -0 and +0 are one float, every NaN is
// one, 1.0 and 1.00 are one numeric; text and bytea compare bytes.
type GroupKey struct {
	RowKey bool
	Column ColumnRef
}

// AggFunc is an aggregate function.
type AggFunc uint8

const (
	// AggCountRows counts the input rows (COUNT(*)); it takes no column.
	AggCountRows AggFunc = iota
	// AggCount counts the rows where the column has a cell (COUNT(col)).
	AggCount
	// AggSum adds the column's values: integers, floats or numeric.
	AggSum
	// AggMin and AggMax keep the least and greatest value of the column
	// (any type but jsonb), in PostgreSQL's order.
	AggMin
	AggMax
)

// AggSpec is one aggregate.
type AggSpec struct {
	Func   AggFunc
	Column ColumnRef // not for AggCountRows
}

// AggregateSpec is what Aggregate computes: groups by GroupBy (none: one
// group of every input row) with the Aggs of each.
type AggregateSpec struct {
	GroupBy []GroupKey
	Aggs    []AggSpec
	// Stats, if not nil, asks the servers for their read statistics (as
	// Filter.WantStats does) and receives their sum over Aggregate's
	// calls: Aggregate sets *Stats when it returns, even with an error
	// (then the calls that answered so far).
	Stats *ReadStats
}

// AggGroup is one group's result.
type AggGroup struct {
	// Key has one entry per GroupBy entry: the row key as []byte, or the
	// column's value as model.DecodeValue returns it for the column's
	// type (int64, float64, bool, time.Time, [16]byte, string for text,
	// numeric and jsonb, []byte for bytea), or nil for the NULL group. Of
	// equal values (1.0 and 1.00) it is the first one seen.
	Key []any
	// RawKey is Key as cell bytes (the row key, or the cell value); nil
	// for NULL.
	RawKey [][]byte
	// Values has one entry per aggregate.
	Values []AggValue
}

// AggValue is one aggregate's result in a group.
type AggValue struct {
	// Count is the result of AggCountRows and AggCount; for AggSum,
	// AggMin and AggMax it is how many non-NULL values went in: 0 means
	// the result is SQL's NULL. AVG is Value / Count of a SUM.
	Count int64
	// Value is nil for the counts and when Count is 0. AggSum: *big.Int
	// for integer columns (exact), float64 for floats, and the exact
	// decimal text (a string, with the largest scale of the inputs; or
	// "NaN", "Infinity", "-Infinity") for numeric. AggMin, AggMax: the
	// value as model.DecodeValue returns it for the column's type.
	Value any
	// Raw is Value as bytes: the sum's decimal text, or the least or
	// greatest cell value.
	Raw []byte
}

func (c ColumnRef) proto() *pb.ColumnRef {
	return &pb.ColumnRef{Family: c.Family, Qualifier: c.Qualifier, Type: int32(c.Type)}
}

func (s AggregateSpec) proto() ([]*pb.GroupKey, []*pb.AggSpec) {
	groups := make([]*pb.GroupKey, len(s.GroupBy))
	for i, g := range s.GroupBy {
		if g.RowKey {
			groups[i] = &pb.GroupKey{What: &pb.GroupKey_RowKey{RowKey: true}}
		} else {
			groups[i] = &pb.GroupKey{What: &pb.GroupKey_Column{Column: g.Column.proto()}}
		}
	}
	aggs := make([]*pb.AggSpec, len(s.Aggs))
	for i, a := range s.Aggs {
		aggs[i] = &pb.AggSpec{Func: pb.AggSpec_Func(a.Func)}
		if a.Func != AggCountRows {
			aggs[i].Column = a.Column.proto()
		}
	}
	return groups, aggs
}

// Aggregate computes spec over the rows of ranges that pass f, as a
// Scan of each range with f would return them; f's conditions are SQL's
// WHERE. ranges must be in key order and apart (an empty End: to the
// table's end, so only the last may have one); none reads no rows. Only
// the newest version of each column counts (f.MaxVersions is taken as
// 1). Without f.Families every family is read to see which rows exist:
// set Families to the families whose cells make a row exist for the
// caller (for SQL tables the marker family "_", which every row has); the
// group and aggregate columns are read whatever Families says.
//
// It calls the server of each tablet that holds some of the ranges, in
// key order, with all of that tablet's part of them in one call of
// bounded work, and merges their partial results; a retried call is
// merged once. Groups come in the order they were first seen (the order
// of their first rows). With no GroupBy the result is exactly one group,
// even over no rows (COUNT 0, the rest NULL). A cell that does not decode
// as its column's type fails the call with FailedPrecondition; an invalid
// spec, filter or list of ranges with InvalidArgument. The merged groups
// are held in memory: a GroupBy of the row key over a large range makes
// as many groups as rows.
func (c *Client) Aggregate(ctx context.Context, table string, ranges []model.RowRange, f Filter, spec AggregateSpec) ([]AggGroup, error) {
	for i, r := range ranges {
		if len(r.End) > 0 && bytes.Compare(r.Start, r.End) >= 0 {
			return nil, status.Errorf(codes.InvalidArgument, "aggregate: range %d is empty: [%q, %q)", i, r.Start, r.End)
		}
		if i > 0 && (len(ranges[i-1].End) == 0 || bytes.Compare(r.Start, ranges[i-1].End) < 0) {
			return nil, status.Errorf(codes.InvalidArgument, "aggregate: range %d overlaps or precedes range %d", i, i-1)
		}
	}
	groupBy, aggs := spec.proto()
	filter, err := f.proto()
	if err != nil {
		return nil, err
	}
	var stats ReadStats
	if spec.Stats != nil {
		filter.WantStats = true
		defer func() { *spec.Stats = stats }()
	}
	m := newAggMerger(spec)
	w := aggWalk{ranges: ranges}
	if len(ranges) > 0 {
		w.next = ranges[0].Start
	}
	for len(w.ranges) > 0 {
		var resp *pb.AggregateResponse
		var end []byte
		err := c.do(ctx, table, w.next, func(ctx context.Context, cli pb.TabletServerClient, loc location) error {
			end = loc.end
			var err error
			resp, err = cli.Aggregate(ctx, &pb.AggregateRequest{Table: table, Ranges: w.within(loc.end),
				Filter: filter, GroupBy: groupBy, Aggs: aggs})
			return err
		})
		if err != nil {
			return nil, err
		}
		stats.Add(statsFromProto(resp.Stats))
		if err := m.merge(resp); err != nil {
			return nil, err
		}
		switch {
		case resp.More:
			w.skipTo(append(bytes.Clone(resp.ResumeAfter), 0))
		case len(end) == 0:
			w.ranges = nil // the tablet held the rest
		default:
			w.skipTo(end)
		}
	}
	return m.result()
}

// aggWalk is where Aggregate is in its ranges: next, the first key it has
// still to read, lies in ranges[0], which it trims as it goes.
type aggWalk struct {
	ranges []model.RowRange
	next   []byte
}

// within is the part of the ranges left to read that lies before end (an
// empty end: the table's end), for a tablet that starts at or before next.
func (w *aggWalk) within(end []byte) []*pb.RowRange {
	var out []*pb.RowRange
	for i, r := range w.ranges {
		start := r.Start
		if i == 0 {
			start = w.next
		}
		if len(end) > 0 && bytes.Compare(start, end) >= 0 {
			break
		}
		e := r.End
		if len(end) > 0 && (len(e) == 0 || bytes.Compare(end, e) < 0) {
			e = end
		}
		out = append(out, &pb.RowRange{Start: start, End: e})
	}
	return out
}

// skipTo moves past every key before k.
func (w *aggWalk) skipTo(k []byte) {
	for len(w.ranges) > 0 && len(w.ranges[0].End) > 0 && bytes.Compare(w.ranges[0].End, k) <= 0 {
		w.ranges = w.ranges[1:]
	}
	if len(w.ranges) == 0 {
		return
	}
	w.next = k
	if bytes.Compare(w.ranges[0].Start, k) > 0 {
		w.next = w.ranges[0].Start
	}
}

// aggMerger merges partial results into groups.
type aggMerger struct {
	spec   AggregateSpec
	groups map[string]*mergedGroup
	order  []*mergedGroup
}

type mergedGroup struct {
	raw    [][]byte
	null   []bool
	counts []int64
	sums   []*model.Sum
	exts   []*model.Extreme
}

func newAggMerger(spec AggregateSpec) *aggMerger {
	return &aggMerger{spec: spec, groups: map[string]*mergedGroup{}}
}

func (m *aggMerger) newGroup(raw [][]byte, null []bool) *mergedGroup {
	n := len(m.spec.Aggs)
	g := &mergedGroup{raw: raw, null: null, counts: make([]int64, n), sums: make([]*model.Sum, n), exts: make([]*model.Extreme, n)}
	for i, a := range m.spec.Aggs {
		switch a.Func {
		case AggSum:
			g.sums[i] = &model.Sum{Type: a.Column.Type}
		case AggMin, AggMax:
			g.exts[i] = &model.Extreme{Type: a.Column.Type, Max: a.Func == AggMax}
		}
	}
	return g
}

func badPartial(format string, args ...any) error {
	return status.Errorf(codes.Internal, "aggregate: bad partial result from a tablet server: "+format, args...)
}

func (m *aggMerger) merge(resp *pb.AggregateResponse) error {
	var ek []byte
	for _, pg := range resp.Groups {
		if len(pg.Key) != len(m.spec.GroupBy) || len(pg.KeyNull) != len(m.spec.GroupBy) || len(pg.Values) != len(m.spec.Aggs) {
			return badPartial("a group of %d keys and %d values", len(pg.Key), len(pg.Values))
		}
		// The same map key as the server's: per entry a null flag, then
		// the equality key, length-prefixed.
		ek = ek[:0]
		raw := make([][]byte, len(pg.Key))
		for i, gk := range m.spec.GroupBy {
			if pg.KeyNull[i] {
				ek = append(ek, 0)
				continue
			}
			raw[i] = pg.Key[i]
			if raw[i] == nil {
				raw[i] = []byte{}
			}
			k := pg.Key[i]
			if !gk.RowKey {
				s, err := model.EqualityKey(gk.Column.Type, k)
				if err != nil {
					return status.Errorf(codes.FailedPrecondition, "aggregate: group key %s:%s: %v", gk.Column.Family, gk.Column.Qualifier, err)
				}
				k = []byte(s)
			}
			ek = append(ek, 1)
			ek = binary.AppendUvarint(ek, uint64(len(k)))
			ek = append(ek, k...)
		}
		g := m.groups[string(ek)]
		if g == nil {
			g = m.newGroup(raw, pg.KeyNull)
			m.groups[string(ek)] = g
			m.order = append(m.order, g)
		}
		for i, v := range pg.Values {
			var err error
			switch {
			case g.sums[i] != nil:
				err = g.sums[i].AddText(string(v.Value), v.Count)
			case g.exts[i] != nil:
				err = g.exts[i].AddN(v.Value, v.Count)
			default:
				g.counts[i] += v.Count
			}
			if err != nil {
				return badPartial("aggregate %d: %v", i, err)
			}
		}
	}
	return nil
}

func (m *aggMerger) result() ([]AggGroup, error) {
	if len(m.order) == 0 && len(m.spec.GroupBy) == 0 {
		m.order = append(m.order, m.newGroup(nil, nil))
	}
	out := make([]AggGroup, len(m.order))
	for gi, g := range m.order {
		r := AggGroup{Key: make([]any, len(m.spec.GroupBy)), RawKey: g.raw, Values: make([]AggValue, len(m.spec.Aggs))}
		for i, gk := range m.spec.GroupBy {
			switch {
			case g.null[i]:
			case gk.RowKey:
				r.Key[i] = g.raw[i]
			default:
				v, err := model.DecodeValue(gk.Column.Type, g.raw[i])
				if err != nil {
					return nil, status.Errorf(codes.FailedPrecondition, "aggregate: group key %s:%s: %v", gk.Column.Family, gk.Column.Qualifier, err)
				}
				r.Key[i] = v
			}
		}
		for i, a := range m.spec.Aggs {
			v := &r.Values[i]
			switch {
			case g.sums[i] != nil:
				s := g.sums[i]
				if v.Count = s.N; s.N == 0 {
					break
				}
				text := s.Text()
				v.Raw = []byte(text)
				switch a.Column.Type {
				case model.TypeInt8, model.TypeInt4, model.TypeInt2:
					v.Value = s.Int()
				case model.TypeFloat8, model.TypeFloat4:
					v.Value = s.Float()
				default:
					v.Value = text
				}
			case g.exts[i] != nil:
				e := g.exts[i]
				if v.Count = e.N; e.N == 0 {
					break
				}
				v.Raw = e.Value()
				x, err := model.DecodeValue(a.Column.Type, v.Raw)
				if err != nil {
					return nil, badPartial("aggregate %d: %v", i, err)
				}
				v.Value = x
			default:
				v.Count = g.counts[i]
			}
		}
		out[gi] = r
	}
	return out, nil
}

// String renders an aggregate function as SQL names it.
func (f AggFunc) String() string {
	switch f {
	case AggCountRows:
		return "count(*)"
	case AggCount:
		return "count"
	case AggSum:
		return "sum"
	case AggMin:
		return "min"
	case AggMax:
		return "max"
	}
	return "agg(" + strconv.Itoa(int(f)) + ")"
}

// Aggregate is unary: a client in the server's process calls it directly.
func (l localStub) Aggregate(ctx context.Context, in *pb.AggregateRequest, _ ...grpc.CallOption) (*pb.AggregateResponse, error) {
	return l.srv.Aggregate(l.in(ctx), in)
}
