package query

import (
	"context"
	"io"
	"math"
	"math/big"

	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/query/catalog"
	"github.com/cellardb/cellar/query/pgeval"
	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// Aggregates pushed to the tablet servers (pgeval.Aggregator): each
// server aggregates its share of the row range next to the data, through
// the same conditions a scan would use, and kv/client merges the
// partial results; this turns them into SQL values.

// AggregateSpec asks KV.Aggregate for groups and aggregates.
type AggregateSpec struct {
	GroupBy []AggColumn
	Aggs    []AggSpec
}

// AggColumn is a grouping key or an aggregate's input: the row key, or
// a column of a type.
type AggColumn struct {
	RowKey    bool
	Family    string
	Qualifier []byte
	Type      model.ValueType
}

// AggFunc is an aggregate the tablet servers compute.
type AggFunc uint8

const (
	AggCountRows AggFunc = iota
	AggCount
	AggSum
	AggMin
	AggMax
)

// AggSpec is one aggregate.
type AggSpec struct {
	Func   AggFunc
	Column AggColumn
}

// AggGroup is one group: its key values (the row key as []byte, a
// column's value as model.DecodeValue gives it, nil for NULL) and its
// aggregates.
type AggGroup struct {
	Key    []any
	Values []AggValue
}

// AggValue is an aggregate's result: Count for the counts, else the
// number of non-NULL inputs (0: NULL); Value is a sum (*big.Int, float64,
// or decimal text for numeric) or the least or greatest value.
type AggValue struct {
	Count int64
	Value any
}

// aggColumn maps a relation column to what a tablet server can group or
// aggregate by; ok is false for the ones it cannot (a composite or typed
// key, a family's JSONB column).
func (r *tableRel) aggColumn(i int) (AggColumn, bool) {
	if i < 0 || i >= len(r.codec.cols) {
		return AggColumn{}, false
	}
	col := r.codec.cols[i]
	switch {
	case col.Key:
		return AggColumn{RowKey: true}, r.codec.raw
	case col.Qualifier == "":
		return AggColumn{}, false
	}
	return AggColumn{Family: col.Family, Qualifier: []byte(col.Qualifier), Type: col.Type}, true
}

func (r *tableRel) CanAggregate(req pgeval.AggregateRequest) bool {
	for _, f := range req.Filters {
		if !r.Exact(f) {
			return false
		}
	}
	for _, g := range req.GroupBy {
		if _, ok := r.aggColumn(g); !ok {
			return false
		}
	}
	for _, a := range req.Aggs {
		if a.Arg < 0 {
			if a.Func != "count" {
				return false
			}
			continue
		}
		c, ok := r.aggColumn(a.Arg)
		if !ok {
			return false
		}
		switch a.Func {
		case "count":
		case "sum":
			if c.RowKey || !model.Summable(c.Type) {
				return false
			}
		case "min", "max":
			if c.RowKey || !model.Orderable(c.Type) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func (r *tableRel) Aggregate(ctx context.Context, req pgeval.AggregateRequest) (pgeval.Rows, bool, error) {
	if r.s.txw.writes(r.name) != nil {
		return nil, false, nil // the buffered writes are not on the servers
	}
	sreq := pgeval.ScanRequest{Filters: req.Filters, Args: req.Args, Env: req.Env, Limit: -1}
	ranges, err := r.plan(ctx, sreq)
	if err != nil {
		return nil, false, err
	}
	conds, none, err := r.conditions(ctx, sreq)
	if err != nil {
		return nil, false, err
	}
	spec := AggregateSpec{}
	for _, g := range req.GroupBy {
		c, _ := r.aggColumn(g)
		spec.GroupBy = append(spec.GroupBy, c)
	}
	for _, a := range req.Aggs {
		s := AggSpec{Func: AggCountRows}
		if a.Arg >= 0 {
			s.Column, _ = r.aggColumn(a.Arg)
			switch {
			case a.Func == "count" && s.Column.RowKey:
				s = AggSpec{Func: AggCountRows} // the key is never NULL
			case a.Func == "count":
				s.Func = AggCount
			case a.Func == "sum":
				s.Func = AggSum
			case a.Func == "min":
				s.Func = AggMin
			case a.Func == "max":
				s.Func = AggMax
			}
		}
		spec.Aggs = append(spec.Aggs, s)
	}
	var groups []AggGroup
	if none || len(ranges) == 0 {
		if len(req.GroupBy) == 0 {
			groups = []AggGroup{{Values: make([]AggValue, len(req.Aggs))}}
		}
	} else {
		f := r.filter()
		f.Conditions = conds
		if !r.codec.t.Native() {
			// Every row SQL writes has the marker cell: reading that
			// family alone finds every row.
			f.Families = []string{catalog.MarkerFamily}
		}
		if groups, err = r.s.kv().Aggregate(ctx, r.name, ranges, f, spec); err != nil {
			return nil, false, kvError(err, false)
		}
	}
	out := make([][]any, 0, len(groups))
	for _, g := range groups {
		row := make([]any, 0, len(req.GroupBy)+len(req.Aggs))
		for i, k := range g.Key {
			v, err := r.groupValue(req.GroupBy[i], k)
			if err != nil {
				return nil, false, err
			}
			row = append(row, v)
		}
		for i, a := range req.Aggs {
			v, err := r.aggValue(a, g.Values[i])
			if err != nil {
				return nil, false, err
			}
			row = append(row, v)
		}
		out = append(out, row)
	}
	return &sliceRows{rows: out}, true, nil
}

func (r *tableRel) groupValue(col int, k any) (any, error) {
	if k == nil {
		return nil, nil
	}
	c := r.codec.cols[col]
	if c.Key {
		vals, err := r.codec.decodeKey(k.([]byte))
		if err != nil {
			return nil, err
		}
		return vals[0], nil
	}
	return fromModel(c.Type, k), nil
}

// aggValue gives an aggregate PostgreSQL's result type.
func (r *tableRel) aggValue(a pgeval.AggCall, v AggValue) (any, error) {
	if a.Func == "count" {
		return v.Count, nil
	}
	if v.Count == 0 || v.Value == nil {
		return nil, nil
	}
	col := r.codec.cols[a.Arg]
	if a.Func == "min" || a.Func == "max" {
		return fromModel(col.Type, v.Value), nil
	}
	switch x := v.Value.(type) {
	case *big.Int:
		if col.Type == model.TypeInt8 {
			return pgtypes.Numeric(x.String()), nil
		}
		if !x.IsInt64() {
			return nil, sqlstate.Errorf(sqlstate.CodeNumericOutOfRange, "bigint out of range")
		}
		return x.Int64(), nil
	case float64:
		if col.Type == model.TypeFloat4 {
			if math.Abs(x) > math.MaxFloat32 && !math.IsInf(x, 0) {
				return nil, sqlstate.Errorf(sqlstate.CodeNumericOutOfRange, "value out of range: overflow")
			}
			return float64(float32(x)), nil
		}
		return x, nil
	case string:
		return pgtypes.Numeric(x), nil
	}
	return v.Value, nil
}

// sliceRows streams rows held in memory.
type sliceRows struct {
	rows [][]any
	i    int
}

func (s *sliceRows) Next(context.Context) ([]any, error) {
	if s.i == len(s.rows) {
		return nil, io.EOF
	}
	s.i++
	return s.rows[s.i-1], nil
}

func (s *sliceRows) Close() {}
