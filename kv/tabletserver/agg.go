package tabletserver

import (
	"bytes"
	"context"
	"encoding/binary"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/kv/tablet"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// Partial aggregation (SQL's COUNT, SUM, MIN, MAX and AVG with GROUP BY
// pushed down): the server folds the rows of a tablet's share of a scan
// into one partial result per group, so that only the groups cross the
// network; the client merges the partials of its calls. One call does a
// bounded amount of work and says where it stopped.

// Bounds of one Aggregate call. A call that reaches one stops after the
// row it is on and answers with resume_after.
var (
	aggMaxRows   = 100_000
	aggMaxGroups = 10_000
	aggBudget    = 2 * time.Second
)

const (
	aggMaxKeys = 64  // group_by entries
	aggMaxAggs = 256 // aggregates
)

// aggColumn is a validated ColumnRef.
type aggColumn struct {
	family    string
	qualifier []byte
	typ       model.ValueType
}

func columnFromProto(c *pb.ColumnRef, what string) (aggColumn, error) {
	if c == nil {
		return aggColumn{}, invalid("%s: no column", what)
	}
	if err := model.ValidateFamilyName(c.Family); err != nil {
		return aggColumn{}, invalid("%s: %v", what, err)
	}
	if c.Type < 0 || c.Type > int32(model.TypeJSONB) {
		return aggColumn{}, invalid("%s: unknown type %d", what, c.Type)
	}
	return aggColumn{family: c.Family, qualifier: c.Qualifier, typ: model.ValueType(c.Type)}, nil
}

func (c aggColumn) newest(cells []model.Cell) ([]byte, bool) {
	return model.NewestValue(cells, c.family, c.qualifier)
}

// aggState is one aggregate of one group.
type aggState struct {
	count int64
	sum   *model.Sum
	ext   *model.Extreme
}

type aggGroup struct {
	key    [][]byte
	null   []bool
	states []aggState
}

// aggPlan is a validated AggregateRequest.
type aggPlan struct {
	filter filter
	keys   []*aggColumn // nil: the row key
	funcs  []pb.AggSpec_Func
	cols   []aggColumn
}

func planAggregate(req *pb.AggregateRequest) (*aggPlan, error) {
	if len(req.GroupBy) > aggMaxKeys || len(req.Aggs) > aggMaxAggs {
		return nil, invalid("at most %d group_by entries and %d aggregates", aggMaxKeys, aggMaxAggs)
	}
	if req.Filter.GetRowFilter() != nil {
		// Aggregates read columns' newest cells whatever a filter's
		// transformers would make of them, so a row filter could only
		// pick rows; nothing needs that yet, and half a meaning is worse
		// than none.
		return nil, invalid("filter: Aggregate does not take a row filter")
	}
	f, err := compileFilter(req.Filter)
	if err != nil {
		return nil, err
	}
	p := &aggPlan{filter: f}
	var families []string
	for i, g := range req.GroupBy {
		switch w := g.GetWhat().(type) {
		case *pb.GroupKey_RowKey:
			if !w.RowKey {
				return nil, invalid("group_by %d: row_key is false", i)
			}
			p.keys = append(p.keys, nil)
		case *pb.GroupKey_Column:
			c, err := columnFromProto(w.Column, "group_by "+strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			p.keys = append(p.keys, &c)
			families = append(families, c.family)
		default:
			return nil, invalid("group_by %d is empty", i)
		}
	}
	for i, a := range req.Aggs {
		what := "aggregate " + strconv.Itoa(i)
		var c aggColumn
		switch a.Func {
		case pb.AggSpec_COUNT_ROWS:
			if a.Column != nil {
				return nil, invalid("%s: COUNT_ROWS takes no column", what)
			}
		case pb.AggSpec_COUNT, pb.AggSpec_SUM, pb.AggSpec_MIN, pb.AggSpec_MAX:
			if c, err = columnFromProto(a.Column, what); err != nil {
				return nil, err
			}
			if a.Func == pb.AggSpec_SUM && !model.Summable(c.typ) {
				return nil, invalid("%s: SUM of %s values", what, c.typ)
			}
			if (a.Func == pb.AggSpec_MIN || a.Func == pb.AggSpec_MAX) && !model.Orderable(c.typ) {
				return nil, invalid("%s: %s of %s values", what, a.Func, c.typ)
			}
			families = append(families, c.family)
		default:
			return nil, invalid("%s: unknown function %d", what, a.Func)
		}
		p.funcs = append(p.funcs, a.Func)
		p.cols = append(p.cols, c)
	}
	p.filter.read.MaxVersions = 1
	p.filter.readAlso(families)
	return p, nil
}

func (p *aggPlan) newGroup(key [][]byte, null []bool) *aggGroup {
	g := &aggGroup{key: key, null: null, states: make([]aggState, len(p.funcs))}
	for i, fn := range p.funcs {
		switch fn {
		case pb.AggSpec_SUM:
			g.states[i].sum = &model.Sum{Type: p.cols[i].typ}
		case pb.AggSpec_MIN, pb.AggSpec_MAX:
			g.states[i].ext = &model.Extreme{Type: p.cols[i].typ, Max: fn == pb.AggSpec_MAX}
		}
	}
	return g
}

// badCell reports a cell that does not decode as its column's type.
func badCell(row []byte, c aggColumn, err error) error {
	return status.Errorf(codes.FailedPrecondition, "row %q, column %s:%s: %v", row, c.family, c.qualifier, err)
}

// aggregator folds rows into groups.
type aggregator struct {
	p      *aggPlan
	groups map[string]*aggGroup
	order  []*aggGroup
	ek     []byte // scratch for the groups' map keys
}

// add folds one row (its cells as read) in.
func (a *aggregator) add(row model.Row) error {
	p := a.p
	if len(p.filter.cells(row.Cells)) == 0 {
		return nil // not an input row
	}
	if len(p.keys) == 0 && len(a.order) == 1 {
		// No GROUP BY: the one group, without a map lookup per row.
		return a.fold(a.order[0], row)
	}
	// The group's map key: per group_by entry, a null flag and the value's
	// equality key, length-prefixed.
	ek := a.ek[:0]
	for _, c := range p.keys {
		var k []byte
		if c == nil {
			k = row.Key
		} else if v, ok := c.newest(row.Cells); !ok {
			ek = append(ek, 0)
			continue
		} else {
			s, err := model.EqualityKey(c.typ, v)
			if err != nil {
				return badCell(row.Key, *c, err)
			}
			k = []byte(s)
		}
		ek = append(ek, 1)
		ek = binary.AppendUvarint(ek, uint64(len(k)))
		ek = append(ek, k...)
	}
	a.ek = ek
	g := a.groups[string(ek)]
	if g == nil {
		key, null := make([][]byte, len(p.keys)), make([]bool, len(p.keys))
		for i, c := range p.keys {
			if c == nil {
				key[i] = bytes.Clone(row.Key)
			} else if v, ok := c.newest(row.Cells); ok {
				key[i] = bytes.Clone(v)
			} else {
				null[i] = true
			}
		}
		g = p.newGroup(key, null)
		a.groups[string(ek)] = g
		a.order = append(a.order, g)
	}
	return a.fold(g, row)
}

// fold adds one input row to group g's aggregates.
func (a *aggregator) fold(g *aggGroup, row model.Row) error {
	p := a.p
	for i, fn := range p.funcs {
		st := &g.states[i]
		if fn == pb.AggSpec_COUNT_ROWS {
			st.count++
			continue
		}
		v, ok := p.cols[i].newest(row.Cells)
		if !ok {
			continue
		}
		var err error
		switch fn {
		case pb.AggSpec_COUNT:
			st.count++
		case pb.AggSpec_SUM:
			err = st.sum.Add(v)
		case pb.AggSpec_MIN, pb.AggSpec_MAX:
			err = st.ext.Add(v)
		}
		if err != nil {
			return badCell(row.Key, p.cols[i], err)
		}
	}
	return nil
}

func (a *aggregator) response() *pb.AggregateResponse {
	out := &pb.AggregateResponse{Groups: make([]*pb.AggregateResponse_Group, len(a.order))}
	for gi, g := range a.order {
		pg := &pb.AggregateResponse_Group{Key: g.key, KeyNull: g.null, Values: make([]*pb.AggregateResponse_AggValue, len(g.states))}
		for i, st := range g.states {
			v := &pb.AggregateResponse_AggValue{Count: st.count}
			switch {
			case st.sum != nil:
				v.Count = st.sum.N
				if st.sum.N > 0 {
					v.Value = []byte(st.sum.Text())
				}
			case st.ext != nil:
				v.Count, v.Value = st.ext.N, st.ext.Value()
			}
			pg.Values[i] = v
		}
		out.Groups[gi] = pg
	}
	return out
}

// Aggregate folds the rows of the ranges that pass the filter into
// partial aggregates by group. It stops early, with resume_after, after
// aggMaxRows rows read, aggMaxGroups groups, or aggBudget of time.
func (s *Server) Aggregate(ctx context.Context, req *pb.AggregateRequest) (*pb.AggregateResponse, error) {
	if err := s.serving(); err != nil {
		return nil, err
	}
	if req.Table == "" {
		return nil, invalid("no table name")
	}
	if err := checkRanges(req.Ranges); err != nil {
		return nil, err
	}
	p, err := planAggregate(req)
	if err != nil {
		return nil, err
	}
	ranges := req.Ranges
	if len(ranges) == 0 {
		ranges = []*pb.RowRange{{}}
	}
	if err := s.authorizeRead(ctx, req.Table, ranges[0].Start, &p.filter); err != nil {
		return nil, err
	}
	a := &aggregator{p: p, groups: map[string]*aggGroup{}}
	var st tablet.ReadStats
	deadline := time.Now().Add(aggBudget)
	rows := 0
	var last []byte // the last row folded in
	stopped := false
	for _, r := range ranges {
		opts := p.filter.withStats(&st)
		opts.Transient = true // add keeps what it needs of a row
		sc := s.opts.Store.Scan(ctx, req.Table, model.RowRange{Start: r.Start, End: r.End}, opts)
		for sc.Next() {
			if rows > 0 && (rows >= aggMaxRows || len(a.order) >= aggMaxGroups || (rows%256 == 0 && time.Now().After(deadline))) {
				stopped = true
				break
			}
			if rows%256 == 0 {
				if err := s.serving(); err != nil {
					sc.Close()
					return nil, err
				}
			}
			row := sc.Row()
			if err := a.add(row); err != nil {
				sc.Close()
				return nil, err
			}
			rows++
			last = append(last[:0], row.Key...)
		}
		err := sc.Err()
		sc.Close()
		if err != nil {
			return nil, toStatus(err)
		}
		if stopped {
			break
		}
	}
	if err := s.stillServing(); err != nil {
		return nil, err
	}
	out := a.response()
	out.Stats = p.filter.statsProto(&st)
	if stopped {
		out.More, out.ResumeAfter = true, bytes.Clone(last)
	}
	return out, nil
}

// checkRanges checks that ranges are non-empty, in order and apart.
func checkRanges(ranges []*pb.RowRange) error {
	for i, r := range ranges {
		if len(r.End) > 0 && bytes.Compare(r.Start, r.End) >= 0 {
			return invalid("range %d is empty: [%q, %q)", i, r.Start, r.End)
		}
		if i > 0 && (len(ranges[i-1].End) == 0 || bytes.Compare(r.Start, ranges[i-1].End) < 0) {
			return invalid("range %d overlaps or precedes range %d; give ranges in order", i, i-1)
		}
	}
	return nil
}
