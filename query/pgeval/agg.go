package pgeval

import (
	"encoding/json"
	"io"
	"math/big"
	"sort"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// aggSpec is one aggregate call of a grouped query.
type aggSpec struct {
	name     string
	args     []*Expr // over the input row
	star     bool
	distinct bool
	order    []*Expr // ORDER BY inside the call
	orderKey []sortKey
	filter   *Expr
	oid      uint32
	desc     string
	// within: an ordered-set or hypothetical-set aggregate (WITHIN
	// GROUP), whose direct arguments run over the group's keys.
	within bool
	direct []*Expr
}

var aggNames = map[string]bool{
	"count": true, "sum": true, "avg": true, "min": true, "max": true, "bool_and": true, "bool_or": true,
	"every": true, "string_agg": true, "array_agg": true, "json_agg": true, "jsonb_agg": true,
	"json_object_agg": true, "jsonb_object_agg": true,
}

// aggResultType types an aggregate over its argument types.
func aggResultType(name string, args []*Expr, loc int32) (uint32, error) {
	argOID := func() uint32 {
		if len(args) == 0 {
			return 0
		}
		return args[0].oid
	}
	bad := func() error {
		var ts []string
		for _, a := range args {
			ts = append(ts, typeName(a.oid))
		}
		e := errAt(loc, sqlstate.CodeUndefinedFunction, "function %s(%s) does not exist", name, strings.Join(ts, ", "))
		e.(*sqlstate.Error).Hint = "No function matches the given name and argument types. You might need to add explicit type casts."
		return e
	}
	switch name {
	case "count":
		return pgtypes.OIDInt8, nil
	case "sum":
		switch t := argOID(); {
		case t == pgtypes.OIDInt2 || t == pgtypes.OIDInt4:
			return pgtypes.OIDInt8, nil
		case t == pgtypes.OIDInt8 || t == pgtypes.OIDNumeric:
			return pgtypes.OIDNumeric, nil
		case isFloat(t) || t == OIDInterval:
			return t, nil
		}
		return 0, bad()
	case "avg":
		switch t := argOID(); {
		case isInt(t) || t == pgtypes.OIDNumeric:
			return pgtypes.OIDNumeric, nil
		case isFloat(t):
			return pgtypes.OIDFloat8, nil
		case t == OIDInterval:
			return t, nil
		}
		return 0, bad()
	case "min", "max":
		switch t := argOID(); t {
		case pgtypes.OIDJSON, pgtypes.OIDUnknown, OIDRecord:
		case pgtypes.OIDVarchar, pgtypes.OIDName:
			return pgtypes.OIDText, nil // max(text): there is no max(varchar)
		default:
			return t, nil
		}
		return 0, bad()
	case "bool_and", "bool_or", "every":
		if argOID() == pgtypes.OIDBool {
			return pgtypes.OIDBool, nil
		}
		return 0, bad()
	case "string_agg":
		if len(args) == 2 && (isText(argOID()) || argOID() == pgtypes.OIDBytea) {
			if argOID() == pgtypes.OIDBytea {
				return pgtypes.OIDBytea, nil
			}
			return pgtypes.OIDText, nil
		}
		return 0, bad()
	case "array_agg":
		if a := arrayOf[argOID()]; a != 0 {
			return a, nil
		}
		return 0, bad()
	case "json_agg", "json_object_agg":
		return pgtypes.OIDJSON, nil
	case "jsonb_agg", "jsonb_object_agg":
		return pgtypes.OIDJSONB, nil
	}
	return 0, bad()
}

// aggregate compiles an aggregate call in a grouped query: its
// arguments run over the input rows; the call reads its slot of the
// post-aggregation row.
func (c *compiler) aggregate(name string, f *pg.FuncCall, sc *scope) (*Expr, error) {
	if sc == nil || sc.grp == nil {
		return nil, errAt(f.Location, codeGroupingError, "aggregate functions are not allowed here")
	}
	g := sc.grp
	in := g.in
	// An aggregate's arguments may not contain aggregates.
	saved := in.grp
	in.grp = nil
	defer func() { in.grp = saved }()
	spec := &aggSpec{name: name, star: f.AggStar, distinct: f.AggDistinct}
	for _, a := range f.Args {
		if containsAgg(a) {
			return nil, errAt(f.Location, codeGroupingError, "aggregate function calls cannot be nested")
		}
		e, err := c.expr(a, in)
		if err != nil {
			return nil, err
		}
		spec.args = append(spec.args, e)
	}
	if name == "count" && f.AggStar {
		spec.args = nil
	} else if len(spec.args) == 0 {
		return nil, errAt(f.Location, sqlstate.CodeUndefinedFunction, "function %s() does not exist", name)
	}
	for i, a := range spec.args {
		if a.oid == pgtypes.OIDUnknown {
			spec.args[i] = c.settle(a)
		}
	}
	if name == "string_agg" && len(spec.args) == 2 {
		a, err := c.coerce(spec.args[1], spec.args[0].oid, f.Location)
		if err != nil {
			return nil, err
		}
		spec.args[1] = a
	}
	oid, err := aggResultType(name, spec.args, f.Location)
	if err != nil {
		return nil, err
	}
	spec.oid = oid
	for i, o := range f.AggOrder {
		sb := o.GetSortBy()
		if sb == nil {
			continue
		}
		e, err := c.expr(sb.Node, in)
		if err != nil {
			return nil, err
		}
		spec.order = append(spec.order, e)
		spec.orderKey = append(spec.orderKey, sortKeyOf(sb, len(spec.args)+i, e.desc))
	}
	if f.AggFilter != nil {
		e, err := c.expr(f.AggFilter, in)
		if err != nil {
			return nil, err
		}
		if spec.filter, err = c.boolArg(e, f.Location, "FILTER"); err != nil {
			return nil, err
		}
	}
	spec.desc = name + "(" + descs(spec.args) + ")"
	if f.AggStar {
		spec.desc = name + "(*)"
	}
	slot := g.nkeys + len(g.aggs)
	g.aggs = append(g.aggs, spec)
	return &Expr{oid: oid, name: name, desc: spec.desc, eval: func(_ *evalCtx, row []any) (any, error) { return row[slot], nil }}, nil
}

func sortKeyOf(sb *pg.SortBy, idx int, text string) sortKey {
	k := sortKey{idx: idx, text: text}
	k.desc = sb.SortbyDir == pg.SortByDir_SORTBY_DESC
	k.nullsFirst = k.desc
	switch sb.SortbyNulls {
	case pg.SortByNulls_SORTBY_NULLS_FIRST:
		k.nullsFirst = true
	case pg.SortByNulls_SORTBY_NULLS_LAST:
		k.nullsFirst = false
	}
	return k
}

// acc accumulates one aggregate over one group.
type acc struct {
	spec  *aggSpec
	n     int64
	val   any
	sum   *big.Rat
	fsum  float64
	isum  int64
	iover bool
	vals  []any
	rows  [][]any // for DISTINCT / ORDER BY: the argument tuples
	seen  map[string]bool
}

func (a *acc) add(ec *evalCtx, args []any) error {
	s := a.spec
	if s.distinct || len(s.order) > 0 {
		if s.distinct {
			k := rowKey(args[:max(len(s.args), 0)], nil)
			if a.seen == nil {
				a.seen = map[string]bool{}
			}
			if a.seen[k] {
				return nil
			}
			a.seen[k] = true
		}
		if err := ec.charge(args); err != nil {
			return err
		}
		a.rows = append(a.rows, args)
		return nil
	}
	return a.step(args)
}

func (a *acc) step(args []any) error {
	s := a.spec
	if s.star {
		a.n++
		return nil
	}
	v := args[0]
	switch s.name {
	case "array_agg", "json_agg", "jsonb_agg":
		a.vals = append(a.vals, v)
		a.n++
		return nil
	case "json_object_agg", "jsonb_object_agg":
		a.vals = append(a.vals, v, args[1])
		a.n++
		return nil
	}
	if v == nil {
		return nil
	}
	switch s.name {
	case "count":
		a.n++
	case "sum", "avg":
		a.n++
		switch x := v.(type) {
		case int64:
			if !a.iover {
				r := a.isum + x
				if (x > 0 && r < a.isum) || (x < 0 && r > a.isum) {
					a.iover = true
					a.sum = new(big.Rat).SetInt64(a.isum)
					a.sum.Add(a.sum, new(big.Rat).SetInt64(x))
				} else {
					a.isum = r
				}
			} else {
				a.sum.Add(a.sum, new(big.Rat).SetInt64(x))
			}
		case float64:
			a.fsum += x
		case pgtypes.Interval:
			// interval_accum: interval_pl, which fails on overflow.
			sum, _ := a.val.(pgtypes.Interval)
			next, err := sum.Add(x)
			if err != nil {
				return err
			}
			a.val = next
		case pgtypes.Numeric:
			if x.IsSpecial() {
				// As numeric_sum: NaN wins, Infinity + -Infinity is NaN.
				if cur, ok := a.val.(pgtypes.Numeric); ok {
					v, _ := specialArith("+", cur, x)
					a.val = v
				} else {
					a.val = x
				}
				return nil
			}
			if a.sum == nil {
				a.sum = new(big.Rat)
			}
			a.sum.Add(a.sum, toRat(x))
			if sc := numScale(x); a.vals == nil || sc > a.vals[0].(int) {
				a.vals = []any{sc}
			}
		}
	case "min", "max":
		if a.val == nil {
			a.val = v
		} else if c := compareValues(v, a.val); (s.name == "min" && c <= 0) || (s.name == "max" && c >= 0) {
			// PostgreSQL's smaller and larger functions return the new
			// value on a tie (interval '30 days' after '1 month').
			a.val = v
		}
	case "bool_and", "every":
		if a.val == nil {
			a.val = true
		}
		a.val = a.val.(bool) && v.(bool)
	case "bool_or":
		if a.val == nil {
			a.val = false
		}
		a.val = a.val.(bool) || v.(bool)
	case "string_agg":
		a.vals = append(a.vals, v, args[1])
		a.n++
	}
	return nil
}

// result is the aggregate's value for its group; group is the group's
// post-aggregation row so far (its keys), for WITHIN GROUP's direct
// arguments.
func (a *acc) result(ec *evalCtx, group []any) (any, error) {
	s := a.spec
	if s.within {
		return a.withinResult(ec, group)
	}
	if a.rows != nil {
		keys := s.orderKey
		if len(keys) == 0 && s.distinct {
			// DISTINCT sorts the arguments to find duplicates, so they
			// reach the aggregate in their order.
			for i := range s.args {
				keys = append(keys, sortKey{idx: i})
			}
		}
		if len(keys) > 0 {
			sort.SliceStable(a.rows, func(i, j int) bool { return compareRows(a.rows[i], a.rows[j], keys) < 0 })
		}
		rows := a.rows
		a.rows = nil
		for _, r := range rows {
			if err := a.step(r); err != nil {
				return nil, err
			}
		}
	}
	switch s.name {
	case "count":
		return a.n, nil
	case "sum", "avg":
		if a.n == 0 {
			return nil, nil
		}
		if n, ok := a.val.(pgtypes.Numeric); ok {
			return n, nil
		}
		if iv, ok := a.val.(pgtypes.Interval); ok {
			if s.name == "sum" {
				return iv, nil
			}
			// interval_avg: interval_div by the count.
			return scaleInterval(iv, float64(a.n), true)
		}
		var total any
		switch {
		case isFloat(s.oid) && s.name == "sum", s.oid == pgtypes.OIDFloat8 && s.name == "avg":
			if s.name == "avg" {
				return a.fsum / float64(a.n), nil
			}
			if s.oid == pgtypes.OIDFloat4 {
				return float64(float32(a.fsum)), nil
			}
			return a.fsum, nil
		case a.sum != nil:
			if a.iover || len(a.vals) == 0 {
				total = roundHalfAway(a.sum, 0)
			} else {
				total = roundHalfAway(a.sum, a.vals[0].(int))
			}
		default:
			total = a.isum
		}
		if s.name == "sum" {
			if s.oid == pgtypes.OIDNumeric {
				if i, ok := total.(int64); ok {
					return numCast(i, pgtypes.OIDNumeric)
				}
			}
			if s.oid == pgtypes.OIDInt8 {
				if _, ok := total.(int64); !ok {
					return nil, rangeError(pgtypes.OIDInt8)
				}
			}
			return total, nil
		}
		if i, ok := total.(int64); ok {
			total = pgtypes.Numeric(big.NewInt(i).String())
		}
		return arithValues("/", pgtypes.OIDNumeric, total, a.n)
	case "min", "max", "bool_and", "bool_or", "every":
		return a.val, nil
	case "string_agg":
		if a.n == 0 {
			return nil, nil
		}
		var b strings.Builder
		first := true
		for i := 0; i < len(a.vals); i += 2 {
			if !first && a.vals[i+1] != nil {
				b.WriteString(textOf(s.args[1].oid, a.vals[i+1]))
			}
			first = false
			b.WriteString(textOf(s.args[0].oid, a.vals[i]))
		}
		if s.oid == pgtypes.OIDBytea {
			return []byte(b.String()), nil
		}
		return b.String(), nil
	case "array_agg":
		if a.n == 0 {
			return nil, nil
		}
		return Array{Elem: s.args[0].oid, Vals: a.vals}, nil
	case "json_agg", "jsonb_agg":
		if a.n == 0 {
			return nil, nil
		}
		parts := make([]string, len(a.vals))
		for i, v := range a.vals {
			parts[i] = toJSON(s.args[0].oid, v)
		}
		sep := ", "
		if s.name == "jsonb_agg" {
			sep = ", "
		}
		return "[" + strings.Join(parts, sep) + "]", nil
	case "json_object_agg", "jsonb_object_agg":
		if a.n == 0 {
			return nil, nil
		}
		var parts []string
		for i := 0; i < len(a.vals); i += 2 {
			k, _ := json.Marshal(textOf(s.args[0].oid, a.vals[i]))
			parts = append(parts, string(k)+" : "+toJSON(s.args[1].oid, a.vals[i+1]))
		}
		out := "{ " + strings.Join(parts, ", ") + " }"
		if s.name == "jsonb_object_agg" {
			// jsonb's own form: keys sorted and unique.
			return pgtypes.NormalizeJSONB(out)
		}
		return out, nil
	}
	return nil, nil
}

// aggNode groups its input by keys and computes aggregates; its rows
// are [keys..., aggregates...].
type aggNode struct {
	nodeStats
	in      node
	keys    []*Expr
	aggs    *[]*aggSpec
	grouped bool // GROUP BY present: no rows in, no rows out
	// push, when set, asks the relation scanned by in to aggregate
	// (Aggregator); in runs only if it declines.
	push *aggPush
}

func (n *aggNode) open(ec *evalCtx) (iter, error) {
	if n.push != nil {
		it, handled, err := n.push.run(ec, n)
		if err != nil || handled {
			return it, err
		}
	}
	it, err := openNode(n.in, ec)
	if err != nil {
		return nil, err
	}
	defer it.close()
	aggs := *n.aggs
	type group struct {
		keys []any
		accs []*acc
	}
	groups := map[string]*group{}
	var held int64
	var order []*group
	newGroup := func(keys []any) *group {
		g := &group{keys: keys}
		for _, s := range aggs {
			g.accs = append(g.accs, &acc{spec: s})
		}
		return g
	}
	for {
		if err := canceled(ec); err != nil {
			return nil, err
		}
		row, err := it.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		keys := make([]any, len(n.keys))
		for i, k := range n.keys {
			if keys[i], err = k.eval(ec, row); err != nil {
				return nil, err
			}
		}
		ks := rowKey(keys, nil)
		g := groups[ks]
		if g == nil {
			sz := rowSize(keys) + int64(len(aggs))*64
			if err := ec.chargeN(sz); err != nil {
				return nil, err
			}
			held += sz
			g = newGroup(keys)
			groups[ks] = g
			order = append(order, g)
		}
		for i, s := range aggs {
			if s.filter != nil {
				v, err := s.filter.eval(ec, row)
				if err != nil {
					return nil, err
				}
				if v != true {
					continue
				}
			}
			args := make([]any, len(s.args)+len(s.order))
			for j, a := range s.args {
				if args[j], err = a.eval(ec, row); err != nil {
					return nil, err
				}
			}
			for j, o := range s.order {
				if args[len(s.args)+j], err = o.eval(ec, row); err != nil {
					return nil, err
				}
			}
			if err := g.accs[i].add(ec, args); err != nil {
				return nil, err
			}
		}
	}
	if len(order) == 0 && !n.grouped {
		order = append(order, newGroup(nil))
	}
	var out [][]any
	for _, g := range order {
		row := append([]any{}, g.keys...)
		for _, a := range g.accs {
			v, err := a.result(ec, row)
			if err != nil {
				return nil, err
			}
			row = append(row, v)
		}
		out = append(out, row)
	}
	return &heldIter{iter: &sliceIter{rows: out}, ec: ec, held: held}, nil
}

func (n *aggNode) explain() (string, []string, []node) {
	var props []string
	if len(n.keys) > 0 {
		props = append(props, "Group Key: "+descs(n.keys))
	}
	title := "Aggregate"
	switch {
	case n.push != nil:
		title = "Aggregate (partial aggregates on the relation)"
	case n.grouped:
		title = "HashAggregate"
	}
	return title, props, []node{n.in}
}

// containsAgg reports whether n calls an aggregate outside any
// subquery.
func containsAgg(n *pg.Node) bool {
	found := false
	walk(n, func(m *pg.Node) bool {
		switch x := m.Node.(type) {
		case *pg.Node_SubLink, *pg.Node_SelectStmt:
			return false
		case *pg.Node_FuncCall:
			name := strings.TrimPrefix(strings.ToLower(opName(x.FuncCall.Funcname)), "pg_catalog.")
			if (aggNames[name] || x.FuncCall.AggWithinGroup) && x.FuncCall.Over == nil {
				found = true
			}
		}
		return !found
	})
	return found
}

// aggLocation is where the first aggregate call in n starts.
func aggLocation(n *pg.Node) int32 {
	loc := int32(-1)
	walk(n, func(m *pg.Node) bool {
		if f := m.GetFuncCall(); f != nil && loc < 0 {
			name := strings.TrimPrefix(strings.ToLower(opName(f.Funcname)), "pg_catalog.")
			if aggNames[name] || f.AggWithinGroup {
				loc = f.Location
			}
		}
		return loc < 0 && m.GetSubLink() == nil
	})
	return loc
}
