package pgeval

import (
	"context"
	"io"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// Aggregation pushed into a relation. A query over one relation whose
// GROUP BY keys are plain columns and whose aggregates are count(*),
// count, sum, avg, min and max of plain columns (no DISTINCT, FILTER or
// ORDER BY inside them), with every filter exact (Exacter), may let the
// relation aggregate: a user table's tablet servers then compute partial
// results next to the data and the gateway merges them (query/tablerel.go),
// instead of every row crossing the network. HAVING, ORDER BY, LIMIT and
// the select list still run here, over the groups.

// AggCall is one aggregate: Func is "count", "sum", "min" or "max"; Arg
// is the column it reads, -1 for count(*). avg(x) is asked for as sum(x)
// and count(x), and divided here with PostgreSQL's numeric or float
// division, as PostgreSQL's own avg does.
type AggCall struct {
	Func string
	Arg  int
}

// AggregateRequest is what a query asks a relation to aggregate.
type AggregateRequest struct {
	// Filters are the query's filters on the relation (all exact).
	Filters []Filter
	// GroupBy are the grouping columns.
	GroupBy []int
	Aggs    []AggCall
	Args    []any
	Env     *Env
}

// Aggregator is implemented by a relation that can aggregate its rows.
type Aggregator interface {
	// CanAggregate reports, when the query is planned, whether the
	// relation can run req.
	CanAggregate(req AggregateRequest) bool
	// Aggregate returns one row per group: the GroupBy columns' values,
	// then each aggregate's final value with PostgreSQL's result type
	// (count bigint; sum of int2/int4 bigint, of int8 and numeric
	// numeric, of float4 real, of float8 double precision; min and max
	// the column's type; sum, min and max of no rows NULL).
	// Without GROUP BY there is exactly one row. handled is false if it
	// cannot after all (such as a transaction's buffered writes to the
	// table); the engine then aggregates the scanned rows itself.
	Aggregate(ctx context.Context, req AggregateRequest) (rows Rows, handled bool, err error)
}

// aggPush is an aggregation handed to the relation: the request, and
// how each of the query's aggregates is read from the relation's rows.
type aggPush struct {
	rel Aggregator
	req AggregateRequest
	// outs[i] says where the query's aggregate i is in the relation's
	// row (after the group keys): sum is its index, and for avg cnt is
	// the index of the count it is divided by (-1 otherwise).
	outs []pushedAgg
	// oids are the types of the relation's row: group keys, then each
	// requested aggregate's.
	oids []uint32
}

type pushedAgg struct {
	spec     *aggSpec
	idx, cnt int
}

// pushAggregates decides, once the whole SELECT is compiled, whether
// the relation can aggregate for agg (see Aggregator); if so the node
// asks it first and aggregates the scanned rows itself only when the
// relation declines at run time.
func (c *compiler) pushAggregates(from *fromItem, rest []*Expr, agg *aggNode) {
	if agg == nil || len(from.rels) != 1 || from.rels[0].scan != from.node || agg.in != from.node || len(rest) > 0 {
		return
	}
	scan := from.rels[0].scan
	ag, ok := scan.rel.(Aggregator)
	if !ok || !exactFilters(scan) {
		return
	}
	relCols := scan.rel.Columns()
	p := &aggPush{rel: ag, req: AggregateRequest{Env: c.env}}
	for i, f := range scan.filters {
		p.req.Filters = append(p.req.Filters, Filter{Node: scan.filterNodes[i], Expr: f})
	}
	for _, k := range agg.keys {
		col, ok := k.colIndex()
		if !ok || col >= len(relCols) {
			return
		}
		p.req.GroupBy = append(p.req.GroupBy, col)
		p.oids = append(p.oids, k.oid)
	}
	add := func(fn string, arg int, oid uint32) int {
		for i, a := range p.req.Aggs {
			if a.Func == fn && a.Arg == arg {
				return i
			}
		}
		p.req.Aggs = append(p.req.Aggs, AggCall{Func: fn, Arg: arg})
		p.oids = append(p.oids, oid)
		return len(p.req.Aggs) - 1
	}
	for _, s := range *agg.aggs {
		if s.distinct || len(s.order) > 0 || s.filter != nil {
			return
		}
		arg := -1
		var at uint32
		if !s.star {
			if len(s.args) != 1 {
				return
			}
			col, ok := s.args[0].colIndex()
			if !ok || col >= len(relCols) {
				return
			}
			arg, at = col, s.args[0].oid
		} else if s.name != "count" {
			return
		}
		switch s.name {
		case "count":
			p.outs = append(p.outs, pushedAgg{spec: s, idx: add("count", arg, pgtypes.OIDInt8), cnt: -1})
		case "sum":
			if !isNumber(at) {
				return
			}
			p.outs = append(p.outs, pushedAgg{spec: s, idx: add("sum", arg, s.oid), cnt: -1})
		case "min", "max":
			p.outs = append(p.outs, pushedAgg{spec: s, idx: add(s.name, arg, s.oid), cnt: -1})
		case "avg":
			// float4's sum comes back as real; PostgreSQL's avg(real)
			// adds in double precision.
			if !(isInt(at) || at == pgtypes.OIDNumeric || at == pgtypes.OIDFloat8) {
				return
			}
			st, err := aggResultType("sum", s.args, -1)
			if err != nil {
				return
			}
			sum := add("sum", arg, st)
			p.outs = append(p.outs, pushedAgg{spec: s, idx: sum, cnt: add("count", arg, pgtypes.OIDInt8)})
		default:
			return
		}
	}
	if !ag.CanAggregate(p.req) {
		return
	}
	agg.push = p
}

// run asks the relation to aggregate; handled is false if it declined.
func (p *aggPush) run(ec *evalCtx, n *aggNode) (iter, bool, error) {
	req := p.req
	req.Args, req.Env = ec.args, ec.env
	rows, handled, err := p.rel.Aggregate(ec.ctx, req)
	if err != nil || !handled {
		if rows != nil {
			rows.Close()
		}
		return nil, false, err
	}
	defer rows.Close()
	nk := len(req.GroupBy)
	width := nk + len(req.Aggs)
	var out [][]any
	var held int64
	fail := func(err error) (iter, bool, error) {
		ec.release(held)
		return nil, true, err
	}
	for {
		if err := canceled(ec); err != nil {
			return fail(err)
		}
		r, err := rows.Next(ec.ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fail(err)
		}
		if len(r) < width {
			r = append(r, make([]any, width-len(r))...)
		}
		if err := normalizeRow(r, p.oids); err != nil {
			return fail(err)
		}
		row, err := p.finish(r, nk)
		if err != nil {
			return fail(err)
		}
		sz := rowSize(row)
		if err := ec.chargeN(sz); err != nil {
			return fail(err)
		}
		held += sz
		out = append(out, row)
	}
	if len(out) == 0 && !n.grouped {
		// No GROUP BY: one row even over no rows (count 0, the rest
		// NULL).
		row, err := p.finish(make([]any, width), nk)
		if err != nil {
			return fail(err)
		}
		out = append(out, row)
	}
	return &heldIter{iter: &sliceIter{rows: out}, ec: ec, held: held}, true, nil
}

// finish turns one row of the relation into the grouping node's row:
// the keys, then each aggregate of the query.
func (p *aggPush) finish(r []any, nk int) ([]any, error) {
	row := make([]any, 0, nk+len(p.outs))
	row = append(row, r[:nk]...)
	for _, o := range p.outs {
		v := r[nk+o.idx]
		switch {
		case o.cnt >= 0:
			n, _ := r[nk+o.cnt].(int64)
			var err error
			if v, err = avgOf(o.spec, v, n); err != nil {
				return nil, err
			}
		case o.spec.name == "count" && v == nil:
			v = int64(0)
		}
		row = append(row, v)
	}
	return row, nil
}

// avgOf is avg from a sum and a count, divided exactly as the engine's
// own avg divides (numeric division for integers and numeric, float8
// for double precision).
func avgOf(spec *aggSpec, sum any, n int64) (any, error) {
	if n == 0 || sum == nil {
		return nil, nil
	}
	a := &acc{spec: spec, n: n}
	switch x := sum.(type) {
	case int64:
		a.isum = x
	case float64:
		a.fsum = x
	case pgtypes.Numeric:
		if x.IsSpecial() {
			a.val = x
			break
		}
		a.sum = toRat(x)
		a.vals = []any{numScale(x)}
	default:
		return nil, sqlstate.Errorf(sqlstate.CodeInternal, "the relation's sum for %s is a %T", spec.desc, sum)
	}
	return a.result(nil, nil)
}
