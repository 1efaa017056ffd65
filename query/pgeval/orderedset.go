package pgeval

import (
	"math"
	"sort"
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// Ordered-set aggregates (percentile_cont, percentile_disc, mode) and
// hypothetical-set aggregates (rank, dense_rank, percent_rank,
// cume_dist) are called with WITHIN GROUP (ORDER BY …). Their direct
// arguments (the fraction, the hypothetical row) are evaluated once per
// group over the group's keys; their ordered arguments are held per
// group, charged to the statement's budget like array_agg's with ORDER
// BY, and sorted when the group is complete. They always run in the
// gateway.
var (
	orderedSetAggs   = map[string]bool{"percentile_cont": true, "percentile_disc": true, "mode": true}
	hypotheticalAggs = map[string]bool{"rank": true, "dense_rank": true, "percent_rank": true, "cume_dist": true}
)

// withinGroup compiles an ordered-set or hypothetical-set aggregate call.
func (c *compiler) withinGroup(name string, f *pg.FuncCall, sc *scope) (*Expr, error) {
	if f.Over != nil {
		return nil, errAt(f.Location, sqlstate.CodeFeatureNotSupported, "OVER is not supported for ordered-set aggregate %s", name)
	}
	if sc == nil || sc.grp == nil {
		return nil, errAt(f.Location, codeGroupingError, "aggregate functions are not allowed here")
	}
	g := sc.grp
	in := g.in
	spec := &aggSpec{name: name, within: true}
	saved := in.grp
	in.grp = nil
	defer func() { in.grp = saved }()
	// The direct arguments are typed over the input rows to find the
	// function, as PostgreSQL does before it checks that they use only
	// grouped columns (compiling them again in the grouped scope, below).
	for _, a := range f.Args {
		if containsAgg(a) {
			return nil, errAt(aggLocation(a), codeGroupingError, "aggregate function calls cannot be nested")
		}
		e, err := c.expr(a, in)
		if err != nil {
			return nil, err
		}
		spec.direct = append(spec.direct, e)
	}
	var locs []int32
	for i, o := range f.AggOrder {
		sb := o.GetSortBy()
		if sb == nil {
			continue
		}
		if containsAgg(sb.Node) {
			return nil, errAt(aggLocation(sb.Node), codeGroupingError, "aggregate function calls cannot be nested")
		}
		e, err := c.expr(sb.Node, in)
		if err != nil {
			return nil, err
		}
		if e.oid == pgtypes.OIDUnknown {
			e = c.settle(e)
		}
		spec.order = append(spec.order, e)
		spec.orderKey = append(spec.orderKey, sortKeyOf(sb, i, e.desc))
		locs = append(locs, nodeLocation(sb.Node))
	}
	noFunc := func() error {
		var ts []string
		for _, e := range append(append([]*Expr{}, spec.direct...), spec.order...) {
			ts = append(ts, typeName(e.oid))
		}
		e := errAt(f.Location, sqlstate.CodeUndefinedFunction, "function %s(%s) does not exist", name, strings.Join(ts, ", "))
		e.(*sqlstate.Error).Hint = "No function matches the given name and argument types. You might need to add explicit type casts."
		return e
	}
	ordering := func(i int) error {
		if t := spec.order[i].oid; t == pgtypes.OIDJSON || elemOf[t] == pgtypes.OIDJSON {
			e := errAt(locs[i], sqlstate.CodeUndefinedFunction, "could not identify an ordering operator for type %s", typeName(t))
			e.(*sqlstate.Error).Hint = "Use an explicit ordering operator or modify the query."
			return e
		}
		return nil
	}
	var err error
	switch {
	case !orderedSetAggs[name] && !hypotheticalAggs[name]:
		return nil, noFunc()
	case name == "mode":
		if len(spec.direct) != 0 || len(spec.order) != 1 {
			return nil, noFunc()
		}
		if err := ordering(0); err != nil {
			return nil, err
		}
		spec.oid = spec.order[0].oid
	case orderedSetAggs[name]:
		if len(spec.direct) != 1 || len(spec.order) != 1 {
			return nil, noFunc()
		}
		fraction := pgtypes.OIDFloat8
		if isArray(spec.direct[0].oid) {
			fraction = arrayOf[pgtypes.OIDFloat8]
		}
		elem := spec.order[0].oid
		cont := name == "percentile_cont" && elem != OIDInterval
		if !implicitCast(spec.direct[0].oid, fraction) || cont && !implicitCast(elem, pgtypes.OIDFloat8) {
			return nil, noFunc()
		}
		// An untyped fraction could be float8 or float8[]: only a number
		// to order by lets PostgreSQL's resolution pick float8.
		if spec.direct[0].oid == pgtypes.OIDUnknown && !isNumber(elem) {
			var ts []string
			for _, e := range []*Expr{spec.direct[0], spec.order[0]} {
				ts = append(ts, typeName(e.oid))
			}
			e := errAt(f.Location, codeAmbiguousFunction, "function %s(%s) is not unique", name, strings.Join(ts, ", "))
			e.(*sqlstate.Error).Hint = "Could not choose a best candidate function. You might need to add explicit type casts."
			return nil, e
		}
		if cont {
			if spec.order[0], err = c.coerce(spec.order[0], pgtypes.OIDFloat8, f.Location); err != nil {
				return nil, err
			}
			elem = pgtypes.OIDFloat8
		}
		if err := ordering(0); err != nil {
			return nil, err
		}
		spec.oid = elem
		if isArray(fraction) {
			if spec.oid = arrayOf[elem]; spec.oid == 0 {
				return nil, errAt(f.Location, codeUndefinedObject, "could not find array type for data type %s", typeName(elem))
			}
		}
	default:
		if len(spec.direct) != len(spec.order) {
			e := noFunc().(*sqlstate.Error)
			e.Hint = "To use the hypothetical-set aggregate " + name + ", the number of hypothetical direct arguments (here " +
				strconv.Itoa(len(spec.direct)) + ") must match the number of ordering columns (here " + strconv.Itoa(len(spec.order)) + ")."
			return nil, e
		}
		// Each hypothetical argument and its ordering column take their
		// common type.
		for i := range spec.direct {
			pair, _, err := c.unifyAll([]*Expr{spec.order[i], spec.direct[i]}, "WITHIN GROUP", nodeLocation(f.Args[i]))
			if err != nil {
				return nil, err
			}
			spec.order[i] = pair[0]
			if err := ordering(i); err != nil {
				return nil, err
			}
		}
		spec.oid = pgtypes.OIDInt8
		if name == "percent_rank" || name == "cume_dist" {
			spec.oid = pgtypes.OIDFloat8
		}
	}
	// Now over the group: the fraction or hypothetical row, in the type
	// the function takes.
	for i, a := range f.Args {
		e, err := c.expr(a, sc)
		if err != nil {
			return nil, err
		}
		to := spec.order[min(i, len(spec.order)-1)].oid
		switch name {
		case "percentile_cont", "percentile_disc":
			to = pgtypes.OIDFloat8
			if isArray(e.oid) {
				to = arrayOf[pgtypes.OIDFloat8]
			}
		}
		if spec.direct[i], err = c.coerce(e, to, nodeLocation(a)); err != nil {
			return nil, err
		}
	}
	spec.desc = name + "(" + descs(spec.direct) + ") WITHIN GROUP (ORDER BY " + descs(spec.order) + ")"
	if f.AggFilter != nil {
		e, err := c.expr(f.AggFilter, in)
		if err != nil {
			return nil, err
		}
		if spec.filter, err = c.boolArg(e, f.Location, "FILTER"); err != nil {
			return nil, err
		}
	}
	slot := g.nkeys + len(g.aggs)
	g.aggs = append(g.aggs, spec)
	return &Expr{oid: spec.oid, name: name, desc: spec.desc, eval: func(_ *evalCtx, row []any) (any, error) { return row[slot], nil }}, nil
}

// withinResult computes an ordered-set or hypothetical-set aggregate
// over its group's rows (each the ordered arguments); keys is the
// group's post-aggregation row so far, which the direct arguments read.
func (a *acc) withinResult(ec *evalCtx, keys []any) (any, error) {
	s := a.spec
	direct := make([]any, len(s.direct))
	for i, d := range s.direct {
		v, err := d.eval(ec, keys)
		if err != nil {
			return nil, err
		}
		direct[i] = v
	}
	rows := a.rows
	a.rows = nil
	if hypotheticalAggs[s.name] {
		return hypothetical(s, direct, rows)
	}
	// NULL inputs are left out.
	vals := rows[:0]
	for _, r := range rows {
		if r[0] != nil {
			vals = append(vals, r)
		}
	}
	sort.SliceStable(vals, func(i, j int) bool { return compareRows(vals[i], vals[j], s.orderKey) < 0 })
	if s.name == "mode" {
		return modeOf(vals), nil
	}
	frac := direct[0]
	if frac == nil {
		return nil, nil
	}
	if arr, ok := frac.(Array); ok {
		if len(vals) == 0 {
			return nil, nil
		}
		out := Array{Elem: elemOf[s.oid], Vals: make([]any, len(arr.Vals))}
		for i, p := range arr.Vals {
			if p == nil {
				continue
			}
			v, err := percentile(s.name, p.(float64), vals)
			if err != nil {
				return nil, err
			}
			out.Vals[i] = v
		}
		return out, nil
	}
	p := frac.(float64)
	if err := checkPercentile(p); err != nil {
		return nil, err
	}
	if len(vals) == 0 {
		return nil, nil
	}
	return percentile(s.name, p, vals)
}

func checkPercentile(p float64) error {
	if p >= 0 && p <= 1 {
		return nil
	}
	// PostgreSQL's %g: six significant digits, NaN and Infinity spelled out.
	s := strconv.FormatFloat(p, 'g', 6, 64)
	switch {
	case math.IsNaN(p):
		s = "NaN"
	case math.IsInf(p, 1):
		s = "Infinity"
	case math.IsInf(p, -1):
		s = "-Infinity"
	}
	return sqlstate.Errorf(sqlstate.CodeNumericOutOfRange, "percentile value %s is not between 0 and 1", s)
}

// percentile is percentile_cont's or percentile_disc's value at fraction
// p of the sorted non-NULL values.
func percentile(name string, p float64, vals [][]any) (any, error) {
	if err := checkPercentile(p); err != nil {
		return nil, err
	}
	n := float64(len(vals))
	if name == "percentile_disc" {
		// The first value whose cumulative share reaches p.
		k := max(int(math.Ceil(p*n)), 1)
		return vals[k-1][0], nil
	}
	at := p * (n - 1)
	first, second := math.Floor(at), math.Ceil(at)
	lo, hi := vals[int(first)][0], vals[int(second)][0]
	if second == first {
		return lo, nil
	}
	pct := at - first
	switch x := lo.(type) {
	case float64:
		// float8_lerp; the conversion keeps the product rounded on its
		// own, as C computes it.
		return x + float64(pct*(hi.(float64)-x)), nil
	case pgtypes.Interval:
		diff, err := hi.(pgtypes.Interval).Sub(x)
		if err != nil {
			return nil, err
		}
		scaled, err := scaleInterval(diff, pct, false)
		if err != nil {
			return nil, err
		}
		return scaled.Add(x)
	}
	return nil, sqlstate.Errorf(sqlstate.CodeInternal, "percentile_cont over %T", lo)
}

// modeOf is the most frequent of the sorted values, the first in the
// order among equally frequent ones.
func modeOf(vals [][]any) any {
	var mode, last any
	best, run := 0, 0
	for _, r := range vals {
		if run > 0 && compareValues(r[0], last) == 0 {
			run++
			continue
		}
		if run > best {
			mode, best = last, run
		}
		last, run = r[0], 1
	}
	if run > best {
		mode = last
	}
	return mode
}

// hypothetical is rank, dense_rank, percent_rank or cume_dist of the
// hypothetical row args among rows, in the WITHIN GROUP order (NULLs
// included, placed as the order says).
func hypothetical(s *aggSpec, args []any, rows [][]any) (any, error) {
	sort.SliceStable(rows, func(i, j int) bool { return compareRows(rows[i], rows[j], s.orderKey) < 0 })
	before, peers, groups := 0, 0, 0
	for i, r := range rows {
		switch c := compareRows(r, args, s.orderKey); {
		case c < 0:
			before++
			if i == 0 || compareRows(rows[i-1], r, s.orderKey) != 0 {
				groups++
			}
		case c == 0:
			peers++
		}
	}
	n := float64(len(rows))
	switch s.name {
	case "rank":
		return int64(before + 1), nil
	case "dense_rank":
		return int64(groups + 1), nil
	case "percent_rank":
		if len(rows) == 0 {
			return 0.0, nil
		}
		return float64(before) / n, nil
	}
	return float64(before+peers+1) / (n + 1), nil
}
