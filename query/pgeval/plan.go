package pgeval

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// Exacter is implemented by a relation that applies some filters
// exactly itself (rows it returns all pass them), so that a LIMIT can
// still be pushed to its scans.
type Exacter interface {
	Exact(f Filter) bool
}

// Reverser is implemented by an Ordered relation that can scan in
// reverse order.
type Reverser interface {
	CanReverse() bool
}

// Plan is a prepared SELECT.
type Plan struct {
	root   node
	cols   []pgtypes.Column
	params []uint32
}

// Columns are the result columns.
func (p *Plan) Columns() []pgtypes.Column { return p.cols }

// Params are the parameter types, inferred where the statement did not
// say (unknown ones are text).
func (p *Plan) Params() []uint32 { return p.params }

// Prepare compiles a SelectStmt.
func Prepare(ctx context.Context, stmt *pg.Node, env *Env, paramOIDs []uint32) (p *Plan, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, sqlstate.Errorf(sqlstate.CodeInternal, "internal error preparing statement: %v", r)
		}
	}()
	sel := stmt.GetSelectStmt()
	if sel == nil {
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "only SELECT statements can be evaluated here")
	}
	if sel.IntoClause != nil {
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "SELECT INTO is not supported")
	}
	if len(sel.LockingClause) > 0 {
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "SELECT FOR UPDATE/SHARE is not supported")
	}
	c := &compiler{ctx: ctx, env: env, params: append([]uint32(nil), paramOIDs...)}
	q, err := c.selectStmt(sel, nil)
	if err != nil {
		return nil, err
	}
	return &Plan{root: q.node, cols: q.columns(), params: c.finalParams()}, nil
}

func (c *compiler) finalParams() []uint32 {
	out := make([]uint32, len(c.params))
	for i, p := range c.params {
		if p == 0 || p == pgtypes.OIDUnknown {
			p = pgtypes.OIDText
		}
		out[i] = p
	}
	return out
}

// Run executes the plan.
func (p *Plan) Run(ctx context.Context, env *Env, args []any) (rows Rows, err error) {
	return p.run(ctx, env, args, false)
}

// RunAnalyzed executes the plan counting each node's rows, loops and
// time, which Explain(true) reports (EXPLAIN ANALYZE).
func (p *Plan) RunAnalyzed(ctx context.Context, env *Env, args []any) (rows Rows, err error) {
	return p.run(ctx, env, args, true)
}

func (p *Plan) run(ctx context.Context, env *Env, args []any, analyze bool) (rows Rows, err error) {
	defer func() {
		if r := recover(); r != nil {
			rows, err = nil, sqlstate.Errorf(sqlstate.CodeInternal, "internal error running statement: %v", r)
		}
	}()
	if len(args) < len(p.params) {
		return nil, sqlstate.Errorf(sqlstate.CodeProtocolViolation, "bind message supplies %d parameters, but prepared statement requires %d", len(args), len(p.params))
	}
	ec := newEvalCtx(ctx, env, args)
	ec.run.analyze = analyze
	it, err := openNode(p.root, ec)
	if err != nil {
		return nil, err
	}
	return &planRows{it: it}, nil
}

type planRows struct {
	it   iter
	done bool
}

func (r *planRows) Next(ctx context.Context) (row []any, err error) {
	if r.done {
		return nil, io.EOF
	}
	defer func() {
		if x := recover(); x != nil {
			row, err = nil, sqlstate.Errorf(sqlstate.CodeInternal, "internal error: %v", x)
		}
	}()
	row, err = r.it.next()
	if err != nil {
		r.done = true
	}
	return row, err
}

func (r *planRows) Close() { r.it.close() }

// ExplainMode is what Explain shows besides the plan.
type ExplainMode uint8

const (
	// ExplainPlan shows the plan alone.
	ExplainPlan ExplainMode = iota
	// ExplainAnalyze adds the time, rows and loops of each node in the
	// runs so far.
	ExplainAnalyze
	// ExplainAnalyzeNoTiming adds rows and loops but not the time, as
	// EXPLAIN (ANALYZE, TIMING OFF) does.
	ExplainAnalyzeNoTiming
)

// Explain describes the plan in mode.
func (p *Plan) Explain(mode ExplainMode) []string {
	var out []string
	var rec func(n node, depth int)
	rec = func(n node, depth int) {
		title, props, kids := n.explain()
		if title == "" {
			// Transparent nodes (projection, column stripping).
			for _, k := range kids {
				rec(k, depth)
			}
			return
		}
		line, propIndent := title, 2
		if depth > 0 {
			ind := 2 + 6*(depth-1)
			line, propIndent = strings.Repeat(" ", ind)+"->  "+title, ind+6
		}
		if mode != ExplainPlan {
			st := n.stats()
			switch {
			case st.loops.Load() == 0:
				// Such as the scan under an aggregate the relation ran.
				line += " (never executed)"
			case mode == ExplainAnalyzeNoTiming:
				line += fmt.Sprintf(" (actual rows=%d loops=%d)", st.rows.Load(), st.loops.Load())
			default:
				line += fmt.Sprintf(" (actual time=%.3f rows=%d loops=%d)", float64(st.nanos.Load())/float64(time.Millisecond), st.rows.Load(), st.loops.Load())
			}
		}
		out = append(out, line)
		for _, pr := range props {
			out = append(out, strings.Repeat(" ", propIndent)+pr)
		}
		for _, k := range kids {
			rec(k, depth+1)
		}
	}
	rec(p.root, 0)
	return out
}

// query is a compiled SELECT: its node and output columns.
type query struct {
	node    node
	names   []string
	oids    []uint32
	recs    [][]pgtypes.Column // fields of record-typed columns, when known
	origins []*pgtypes.Origin  // the columns' sources and type modifiers, when known
}

func (q *query) rec(i int) []pgtypes.Column {
	if i < len(q.recs) {
		return q.recs[i]
	}
	return nil
}

func (q *query) origin(i int) *pgtypes.Origin {
	if i < len(q.origins) {
		return q.origins[i]
	}
	return nil
}

func (q *query) columns() []pgtypes.Column {
	out := make([]pgtypes.Column, len(q.names))
	for i := range q.names {
		oid := q.oids[i]
		if oid == pgtypes.OIDUnknown {
			oid = pgtypes.OIDText
		}
		out[i] = pgtypes.Column{Name: q.names[i], OID: oid, Origin: q.origin(i)}
	}
	return out
}

// baseRel is a relation scanned in a FROM list, for filter pushdown.
type baseRel struct {
	scan     *scanNode
	cols     []scopeCol
	nullable bool
}

// fromItem is a compiled FROM entry.
type fromItem struct {
	node node
	cols []scopeCol
	rels []*baseRel
	// srf, for a function in FROM, to join laterally.
	srf        *Expr
	ordinality bool
	// lateral is a LATERAL subquery, run once per row of the items
	// before it.
	lateral node
}

func (c *compiler) pushCTEs(w *pg.WithClause, outer *scope) error {
	m := map[string]*cteDef{}
	c.ctes = append(c.ctes, m)
	for _, n := range w.Ctes {
		cte := n.GetCommonTableExpr()
		if cte == nil {
			continue
		}
		sel := cte.Ctequery.GetSelectStmt()
		if sel == nil {
			return errAt(cte.Location, sqlstate.CodeFeatureNotSupported, "WITH query \"%s\" must be a SELECT", cte.Ctename)
		}
		if _, dup := m[cte.Ctename]; dup {
			return errAt(cte.Location, codeDuplicateAlias, "WITH query name \"%s\" specified more than once", cte.Ctename)
		}
		def := &cteDef{name: cte.Ctename}
		aliases := strs(cte.Aliascolnames)
		if w.Recursive && sel.Op == pg.SetOperation_SETOP_UNION && refersTo(sel.Rarg, cte.Ctename) {
			init, err := c.selectStmt(sel.Larg, outer)
			if err != nil {
				return err
			}
			names := init.names
			for i := range names {
				if i < len(aliases) {
					names[i] = aliases[i]
				}
			}
			def.recursive = true
			def.initial = init.node
			def.cols = (&query{names: names, oids: init.oids}).columns()
			m[cte.Ctename] = def
			step, err := c.selectStmt(sel.Rarg, outer)
			if err != nil {
				return err
			}
			if len(step.oids) != len(init.oids) {
				return sqlstate.Errorf(codeSyntaxError, "each UNION query must have the same number of columns")
			}
			def.step = step.node
			def.node = &setOpNode{l: init.node, r: step.node, op: "UNION", all: sel.All}
			continue
		}
		q, err := c.selectStmt(sel, outer)
		if err != nil {
			return err
		}
		names := q.names
		if len(aliases) > len(names) {
			return errAt(cte.Location, codeInvalidColumnReference, "WITH query \"%s\" has %d columns available but %d columns specified", cte.Ctename, len(names), len(aliases))
		}
		for i := range aliases {
			names[i] = aliases[i]
		}
		def.node = q.node
		def.cols = (&query{names: names, oids: q.oids, origins: q.origins}).columns()
		m[cte.Ctename] = def
	}
	return nil
}

func refersTo(s *pg.SelectStmt, name string) bool {
	found := false
	walk(&pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: s}}, func(n *pg.Node) bool {
		if rv := n.GetRangeVar(); rv != nil && rv.Schemaname == "" && rv.Relname == name {
			found = true
		}
		return !found
	})
	return found
}

func (c *compiler) lookupCTE(name string) *cteDef {
	for i := len(c.ctes) - 1; i >= 0; i-- {
		if d, ok := c.ctes[i][name]; ok {
			return d
		}
	}
	return nil
}

// selectStmt compiles a SELECT (or VALUES, or a set operation); outer is
// the enclosing query's scope for correlated references.
func (c *compiler) selectStmt(s *pg.SelectStmt, outer *scope) (*query, error) {
	if s.WithClause != nil {
		n := len(c.ctes)
		defer func() { c.ctes = c.ctes[:n] }()
		if err := c.pushCTEs(s.WithClause, outer); err != nil {
			return nil, err
		}
	}
	if len(s.WindowClause) > 0 {
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "WINDOW clauses are not supported")
	}
	switch {
	case s.Op != pg.SetOperation_SETOP_NONE && s.Op != pg.SetOperation_SET_OPERATION_UNDEFINED:
		return c.setOp(s, outer)
	case len(s.ValuesLists) > 0:
		return c.values(s, outer)
	}
	return c.simpleSelect(s, outer)
}

func (c *compiler) values(s *pg.SelectStmt, outer *scope) (*query, error) {
	var rows [][]*Expr
	width := -1
	sc := &scope{parent: outer}
	for _, l := range s.ValuesLists {
		list := l.GetList()
		if list == nil {
			continue
		}
		row, err := c.exprs(list.Items, sc)
		if err != nil {
			return nil, err
		}
		if width >= 0 && len(row) != width {
			return nil, sqlstate.Errorf(codeSyntaxError, "VALUES lists must all be the same length")
		}
		width = len(row)
		rows = append(rows, row)
	}
	q := &query{}
	for j := 0; j < width; j++ {
		col := make([]*Expr, len(rows))
		for i := range rows {
			col[i] = rows[i][j]
		}
		col, t, err := c.unifyAll(col, "VALUES", -1)
		if err != nil {
			return nil, err
		}
		for i := range rows {
			rows[i][j] = col[i]
		}
		q.names = append(q.names, fmt.Sprintf("column%d", j+1))
		q.oids = append(q.oids, t)
		q.origins = append(q.origins, commonTypmod(col))
	}
	q.node = &valuesNode{rows: rows}
	return c.finishOutput(q, s, outer)
}

func (c *compiler) setOp(s *pg.SelectStmt, outer *scope) (*query, error) {
	l, err := c.selectStmt(s.Larg, outer)
	if err != nil {
		return nil, err
	}
	r, err := c.selectStmt(s.Rarg, outer)
	if err != nil {
		return nil, err
	}
	op := map[pg.SetOperation]string{pg.SetOperation_SETOP_UNION: "UNION", pg.SetOperation_SETOP_INTERSECT: "INTERSECT", pg.SetOperation_SETOP_EXCEPT: "EXCEPT"}[s.Op]
	if len(l.oids) != len(r.oids) {
		return nil, sqlstate.Errorf(codeSyntaxError, "each %s query must have the same number of columns", op)
	}
	q := &query{names: l.names}
	lcast, rcast := false, false
	for i := range l.oids {
		t, err := commonType([]uint32{l.oids[i], r.oids[i]}, op, -1)
		if err != nil {
			return nil, err
		}
		q.oids = append(q.oids, t)
		// A set operation's column is no table's; it keeps a type
		// modifier both sides have.
		var o *pgtypes.Origin
		if lo, ro := l.origin(i), r.origin(i); l.oids[i] == t && r.oids[i] == t && lo != nil && ro != nil && lo.Typmod >= 0 && lo.Typmod == ro.Typmod {
			o = &pgtypes.Origin{Typmod: lo.Typmod}
		}
		q.origins = append(q.origins, o)
		lcast = lcast || l.oids[i] != t
		rcast = rcast || r.oids[i] != t
	}
	ln, rn := l.node, r.node
	if lcast {
		ln = castNode(ln, l.oids, q.oids)
	}
	if rcast {
		rn = castNode(rn, r.oids, q.oids)
	}
	q.node = &setOpNode{l: ln, r: rn, op: op, all: s.All}
	return c.finishOutput(q, s, outer)
}

// commonTypmod is the origin of a column whose values come from es (a
// VALUES column, CASE, COALESCE, ARRAY[...]): no table, and the type
// modifier they all have, if any.
func commonTypmod(es []*Expr) *pgtypes.Origin {
	if len(es) == 0 || es[0].origin == nil || es[0].origin.Typmod < 0 {
		return nil
	}
	tm := es[0].origin.Typmod
	for _, e := range es[1:] {
		if e.oid != es[0].oid || e.origin == nil || e.origin.Typmod != tm {
			return nil
		}
	}
	return &pgtypes.Origin{Typmod: tm}
}

// castNode converts a query's columns to the types a set operation
// settled on.
func castNode(in node, from, to []uint32) node {
	var exprs []*Expr
	for i := range from {
		i := i
		f, t := from[i], to[i]
		exprs = append(exprs, &Expr{oid: t, desc: "col", eval: func(ec *evalCtx, row []any) (any, error) {
			return castValue(row[i], f, t, ec)
		}})
	}
	return &projectNode{in: in, exprs: exprs}
}

// finishOutput applies ORDER BY, LIMIT and OFFSET to a query whose
// output columns are the scope (set operations, VALUES).
func (c *compiler) finishOutput(q *query, s *pg.SelectStmt, outer *scope) (*query, error) {
	if len(s.SortClause) == 0 && s.LimitCount == nil && s.LimitOffset == nil {
		return q, nil
	}
	sc := &scope{parent: outer}
	for i, n := range q.names {
		sc.cols = append(sc.cols, scopeCol{name: n, oid: q.oids[i]})
	}
	var exprs []*Expr
	for i := range q.names {
		i := i
		exprs = append(exprs, &Expr{oid: q.oids[i], name: q.names[i], desc: quoteIdent(q.names[i]), eval: func(_ *evalCtx, row []any) (any, error) { return row[i], nil }})
	}
	var keys []sortKey
	for _, sn := range s.SortClause {
		sb := sn.GetSortBy()
		if sb == nil {
			continue
		}
		idx, err := c.outputRef(sb.Node, q.names, nil)
		if err != nil {
			return nil, err
		}
		if idx < 0 {
			e, err := c.expr(sb.Node, sc)
			if err != nil {
				return nil, err
			}
			idx = len(exprs)
			exprs = append(exprs, e)
		}
		keys = append(keys, sortKeyOf(sb, idx, exprs[idx].desc))
	}
	var n node = q.node
	if len(exprs) > len(q.names) {
		n = &projectNode{in: n, exprs: exprs}
	}
	if len(keys) > 0 {
		n = &sortNode{in: n, keys: keys}
	}
	limit, offset, err := c.limits(s)
	if err != nil {
		return nil, err
	}
	if limit != nil || offset != nil {
		n = &limitNode{in: n, limit: limit, offset: offset}
	}
	if len(exprs) > len(q.names) {
		n = &stripNode{in: n, n: len(q.names)}
	}
	return &query{node: n, names: q.names, oids: q.oids, recs: q.recs, origins: q.origins}, nil
}

// outputRef resolves an ORDER BY / DISTINCT ON / GROUP BY item that
// names an output column (by name or position); -1 if it does not.
func (c *compiler) outputRef(n *pg.Node, names []string, targets []*pg.Node) (int, error) {
	if a := n.GetAConst(); a != nil && a.GetIval() != nil {
		k := int(a.GetIval().Ival)
		if k < 1 || k > len(names) {
			return 0, errAt(a.Location, codeInvalidColumnReference, "ORDER BY position %d is not in select list", k)
		}
		return k - 1, nil
	}
	if cr := n.GetColumnRef(); cr != nil {
		parts := strs(cr.Fields)
		if len(parts) == 1 {
			found := -1
			for i, nm := range names {
				if nm == parts[0] {
					if found >= 0 && targets == nil {
						return 0, errAt(cr.Location, codeAmbiguousColumn, "ORDER BY \"%s\" is ambiguous", parts[0])
					}
					if found < 0 {
						found = i
					}
				}
			}
			if found >= 0 {
				return found, nil
			}
		}
	}
	if targets != nil {
		fp := fingerprint(n)
		for i, t := range targets {
			if t != nil && fingerprint(t) == fp {
				return i, nil
			}
		}
	}
	return -1, nil
}

func (c *compiler) limits(s *pg.SelectStmt) (*Expr, *Expr, error) {
	conv := func(n *pg.Node, what string) (*Expr, error) {
		if n == nil {
			return nil, nil
		}
		if a := n.GetAConst(); a != nil && a.Isnull {
			return nil, nil
		}
		e, err := c.expr(n, nil)
		if err != nil {
			return nil, err
		}
		if e.oid != pgtypes.OIDUnknown && !isNumber(e.oid) {
			return nil, sqlstate.Errorf(codeDatatypeMismatch, "argument of %s must be type bigint, not type %s", what, typeName(e.oid))
		}
		return c.convert(e, pgtypes.OIDInt8, -1, true)
	}
	if s.LimitOption == pg.LimitOption_LIMIT_OPTION_WITH_TIES {
		return nil, nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "FETCH ... WITH TIES is not supported")
	}
	l, err := conv(s.LimitCount, "LIMIT")
	if err != nil {
		return nil, nil, err
	}
	o, err := conv(s.LimitOffset, "OFFSET")
	return l, o, err
}

// fromClause compiles a FROM list into one node (cross joined left to
// right) and its scope columns.
func (c *compiler) fromClause(items []*pg.Node, outer *scope) (*fromItem, error) {
	if len(items) == 0 {
		return &fromItem{node: &resultNode{}}, nil
	}
	var acc *fromItem
	for _, it := range items {
		var err error
		if acc, err = c.fromJoin(acc, it, outer); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

// fromJoin cross-joins left (nil for the first item) with item.
func (c *compiler) fromJoin(left *fromItem, item *pg.Node, outer *scope) (*fromItem, error) {
	right, err := c.fromEntry(item, outer, left)
	if err != nil {
		return nil, err
	}
	if right.srf != nil {
		var l node = &resultNode{}
		var cols []scopeCol
		var rels []*baseRel
		if left != nil {
			l, cols, rels = left.node, left.cols, left.rels
		}
		return &fromItem{node: &lateralFuncNode{l: l, fn: right.srf, ordinality: right.ordinality}, cols: append(append([]scopeCol{}, cols...), right.cols...), rels: rels}, nil
	}
	if left == nil {
		return right, nil
	}
	if right.lateral != nil {
		return &fromItem{node: &lateralNode{l: left.node, sub: right.lateral, lw: len(left.cols), rw: len(right.cols)},
			cols: append(append([]scopeCol{}, left.cols...), right.cols...), rels: left.rels}, nil
	}
	if err := checkDupAliases(left.cols, right.cols); err != nil {
		return nil, err
	}
	return &fromItem{
		node: &joinNode{l: left.node, r: right.node, kind: joinInner, lw: len(left.cols), rw: len(right.cols)},
		cols: append(append([]scopeCol{}, left.cols...), right.cols...),
		rels: append(append([]*baseRel{}, left.rels...), right.rels...),
	}, nil
}

func checkDupAliases(l, r []scopeCol) error {
	seen := map[string]bool{}
	for _, c := range l {
		seen[c.table] = true
	}
	for _, c := range r {
		if c.table != "" && seen[c.table] {
			return sqlstate.Errorf(codeDuplicateAlias, "table name \"%s\" specified more than once", c.table)
		}
	}
	return nil
}

func aliasCols(a *pg.Alias, cols []scopeCol, table string) ([]scopeCol, error) {
	names := []string(nil)
	if a != nil {
		table = a.Aliasname
		names = strs(a.Colnames)
	}
	avail := 0
	for _, col := range cols {
		if !col.nostar {
			avail++
		}
	}
	if len(names) > avail {
		return nil, sqlstate.Errorf(codeInvalidColumnReference, "table \"%s\" has %d columns available but %d columns specified", table, avail, len(names))
	}
	out := make([]scopeCol, len(cols))
	for i, col := range cols {
		col.table = table
		if a != nil {
			col.schema = ""
		}
		if i < len(names) {
			col.name = names[i]
		}
		out[i] = col
	}
	return out, nil
}

// fromEntry compiles one FROM item; left is what precedes it (for
// lateral function calls).
func (c *compiler) fromEntry(item *pg.Node, outer *scope, left *fromItem) (*fromItem, error) {
	switch x := item.Node.(type) {
	case *pg.Node_RangeVar:
		rv := x.RangeVar
		if rv.Schemaname == "" {
			if def := c.lookupCTE(rv.Relname); def != nil {
				var cols []scopeCol
				for _, col := range def.cols {
					cols = append(cols, scopeCol{table: rv.Relname, name: col.Name, oid: col.OID, origin: col.Origin})
				}
				cols, err := aliasCols(rv.Alias, cols, rv.Relname)
				if err != nil {
					return nil, err
				}
				var n node = &cteScanNode{def: def}
				if def.recursive && def.step == nil {
					n = &workTableNode{def: def}
				}
				return &fromItem{node: n, cols: cols}, nil
			}
		}
		if c.env == nil || c.env.Catalog == nil {
			return nil, errAt(rv.Location, sqlstate.CodeUndefinedTable, "relation \"%s\" does not exist", rv.Relname)
		}
		rel, err := c.env.Catalog.Relation(c.ctx, rv.Schemaname, rv.Relname)
		if err != nil {
			if se, ok := err.(*sqlstate.Error); ok && se.Position == 0 {
				cp := *se
				cp.Position = pos(rv.Location)
				return nil, &cp
			}
			return nil, err
		}
		var cols []scopeCol
		var oids []uint32
		relCols := rel.Columns()
		star := len(relCols)
		if sc, ok := rel.(StarColumner); ok && sc.StarColumns() >= 0 && sc.StarColumns() < star {
			star = sc.StarColumns()
		}
		for i, col := range relCols {
			cols = append(cols, scopeCol{schema: rv.Schemaname, table: rv.Relname, name: col.Name, oid: col.OID, nostar: i >= star, origin: col.Origin})
			oids = append(oids, col.OID)
		}
		cols, err = aliasCols(rv.Alias, cols, rv.Relname)
		if err != nil {
			return nil, err
		}
		alias := ""
		if rv.Alias != nil {
			alias = rv.Alias.Aliasname
		}
		sn := &scanNode{rel: rel, schema: rv.Schemaname, name: rv.Relname, alias: alias, ncols: len(cols), oids: oids}
		return &fromItem{node: sn, cols: cols, rels: []*baseRel{{scan: sn, cols: cols}}}, nil
	case *pg.Node_RangeSubselect:
		rs := x.RangeSubselect
		sel := rs.Subquery.GetSelectStmt()
		if sel == nil {
			return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "this subquery is not supported")
		}
		if rs.Alias == nil {
			return nil, sqlstate.Errorf(codeSyntaxError, "subquery in FROM must have an alias")
		}
		sub := outer
		if rs.Lateral && left != nil {
			// The subquery sees the items before it as its outer row.
			sub = &scope{cols: left.cols, parent: outer}
		}
		q, err := c.selectStmt(sel, sub)
		if err != nil {
			return nil, err
		}
		if sub != outer {
			mergeUsed(left, sub)
		}
		var cols []scopeCol
		for i, n := range q.names {
			cols = append(cols, scopeCol{name: n, oid: settleOID(q.oids[i]), rec: q.rec(i), origin: q.origin(i)})
		}
		cols, err = aliasCols(rs.Alias, cols, "")
		if err != nil {
			return nil, err
		}
		if sub != outer {
			return &fromItem{lateral: q.node, cols: cols}, nil
		}
		return &fromItem{node: q.node, cols: cols}, nil
	case *pg.Node_RangeFunction:
		rf := x.RangeFunction
		if len(rf.Functions) != 1 {
			return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "ROWS FROM with several functions is not supported")
		}
		l := rf.Functions[0].GetList()
		if l == nil || len(l.Items) == 0 {
			return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "this FROM function is not supported")
		}
		if fc := l.Items[0].GetFuncCall(); fc != nil && len(fc.Args) == 0 {
			// pg_show_all_settings() is the function behind pg_settings.
			if p := strs(fc.Funcname); p[len(p)-1] == "pg_show_all_settings" {
				return c.fromEntry(&pg.Node{Node: &pg.Node_RangeVar{RangeVar: &pg.RangeVar{Schemaname: "pg_catalog", Relname: "pg_settings", Alias: rf.Alias, Location: fc.Location}}}, outer, left)
			}
		}
		fsc := &scope{parent: outer}
		if left != nil {
			fsc.cols = left.cols
		}
		var fe *Expr
		var err error
		if fc := l.Items[0].GetFuncCall(); fc != nil {
			fe, err = c.funcCallSRF(fc, fsc, true)
		} else {
			fe, err = c.expr(l.Items[0], fsc)
		}
		if err != nil {
			return nil, err
		}
		if fe.srf == nil {
			// A scalar function in FROM yields one row.
			scalar := fe
			fe = &Expr{oid: scalar.oid, name: scalar.name, desc: scalar.desc, srfCols: []pgtypes.Column{{Name: scalar.name, OID: settleOID(scalar.oid)}},
				srf: func(ec *evalCtx, row []any) ([][]any, error) {
					v, err := scalar.eval(ec, row)
					if err != nil {
						return nil, err
					}
					return [][]any{{v}}, nil
				}}
		}
		if left != nil {
			// The left columns the function reads must be scanned.
			mergeUsed(left, fsc)
		}
		table := fe.name
		var cols []scopeCol
		for _, col := range fe.srfCols {
			cols = append(cols, scopeCol{table: table, name: col.Name, oid: col.OID})
		}
		if len(cols) == 1 && rf.Alias != nil && len(rf.Alias.Colnames) == 0 {
			cols[0].name = rf.Alias.Aliasname
		}
		if rf.Ordinality {
			cols = append(cols, scopeCol{table: table, name: "ordinality", oid: pgtypes.OIDInt8})
		}
		cols, err = aliasCols(rf.Alias, cols, table)
		if err != nil {
			return nil, err
		}
		return &fromItem{srf: fe, cols: cols, ordinality: rf.Ordinality}, nil
	case *pg.Node_JoinExpr:
		return c.joinExpr(x.JoinExpr, outer)
	}
	return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "FROM item %T is not supported", item.Node)
}

func settleOID(o uint32) uint32 {
	if o == pgtypes.OIDUnknown {
		return pgtypes.OIDText
	}
	return o
}

func (c *compiler) joinExpr(j *pg.JoinExpr, outer *scope) (*fromItem, error) {
	l, err := c.fromJoin(nil, j.Larg, outer)
	if err != nil {
		return nil, err
	}
	r, err := c.fromEntry(j.Rarg, outer, l)
	if err != nil {
		return nil, err
	}
	if r.srf != nil {
		r = &fromItem{node: &lateralFuncNode{l: &resultNode{}, fn: r.srf, ordinality: r.ordinality}, cols: r.cols}
	}
	if err := checkDupAliases(l.cols, r.cols); err != nil {
		return nil, err
	}
	kind := map[pg.JoinType]joinKind{pg.JoinType_JOIN_INNER: joinInner, pg.JoinType_JOIN_LEFT: joinLeft, pg.JoinType_JOIN_RIGHT: joinRight, pg.JoinType_JOIN_FULL: joinFull}[j.Jointype]
	cols := append(append([]scopeCol{}, l.cols...), r.cols...)
	sc := &scope{cols: cols, parent: outer}
	var on *Expr
	using := strs(j.UsingClause)
	if j.IsNatural {
		for _, lc := range l.cols {
			for _, rc := range r.cols {
				if lc.name == rc.name && !lc.hidden && !rc.hidden && !lc.nostar && !rc.nostar {
					using = append(using, lc.name)
				}
			}
		}
	}
	type usingPair struct{ li, ri int }
	var pairs []usingPair
	if len(using) > 0 {
		var conds []*Expr
		for _, name := range using {
			li, ri := -1, -1
			for i, col := range l.cols {
				if col.name == name && !col.hidden && !col.nostar {
					li = i
				}
			}
			for i, col := range r.cols {
				if col.name == name && !col.hidden && !col.nostar {
					ri = i
				}
			}
			if li < 0 || ri < 0 {
				side := "left"
				if li >= 0 {
					side = "right"
				}
				return nil, sqlstate.Errorf(sqlstate.CodeUndefinedColumn, "column \"%s\" specified in USING clause does not exist in %s table", name, side)
			}
			lref := colRef(li, l.cols[li])
			rref := colRef(len(l.cols)+ri, r.cols[ri])
			eq, err := c.binop("=", lref, rref, -1)
			if err != nil {
				return nil, err
			}
			conds = append(conds, eq)
			cols[li].hidden = true
			cols[len(l.cols)+ri].hidden = true
			pairs = append(pairs, usingPair{li, ri})
		}
		on = andAll(conds)
	} else if j.Quals != nil {
		e, err := c.expr(j.Quals, sc)
		if err != nil {
			return nil, err
		}
		if on, err = c.boolArg(e, -1, "JOIN/ON"); err != nil {
			return nil, err
		}
	}
	rels := append([]*baseRel{}, l.rels...)
	for _, b := range l.rels {
		if kind == joinRight || kind == joinFull {
			b.nullable = true
		}
	}
	for _, b := range r.rels {
		if kind == joinLeft || kind == joinFull {
			b.nullable = true
		}
		rels = append(rels, b)
	}
	var jnode node
	if r.lateral != nil {
		if kind != joinInner && kind != joinLeft {
			return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "RIGHT and FULL joins with LATERAL are not supported")
		}
		jnode = &lateralNode{l: l.node, sub: r.lateral, lw: len(l.cols), rw: len(r.cols), on: on, left: kind == joinLeft}
	} else {
		jn := &joinNode{l: l.node, r: r.node, kind: kind, on: on, lw: len(l.cols), rw: len(r.cols)}
		if on != nil && len(using) == 0 {
			jn.hashL, jn.hashR = c.equiKeys(j.Quals, l.cols, r.cols, outer)
		}
		jnode = jn
	}
	out := &fromItem{node: jnode, cols: cols, rels: rels}
	if len(pairs) > 0 {
		// The USING columns come first, once each, as PostgreSQL shows
		// them: the left value, the right one for a RIGHT join, the
		// first non-NULL for a FULL join. The sides' own copies stay
		// reachable qualified (t.a).
		lw := len(l.cols)
		var exprs []*Expr
		var merged []scopeCol
		for _, p := range pairs {
			li, ri := p.li, lw+p.ri
			markUsed(out, li)
			markUsed(out, ri)
			col := l.cols[p.li]
			col.table, col.schema, col.hidden = "", "", false
			if kind == joinFull {
				t, err := commonType([]uint32{l.cols[p.li].oid, r.cols[p.ri].oid}, "JOIN/USING", -1)
				if err != nil {
					return nil, err
				}
				col.oid = t
			}
			merged = append(merged, col)
			k := kind
			exprs = append(exprs, &Expr{oid: col.oid, name: col.name, desc: quoteIdent(col.name), eval: func(_ *evalCtx, row []any) (any, error) {
				switch {
				case k == joinRight:
					return row[ri], nil
				case k == joinFull && row[li] == nil:
					return row[ri], nil
				}
				return row[li], nil
			}})
		}
		for i := range cols {
			i := i
			exprs = append(exprs, &Expr{oid: cols[i].oid, desc: quoteIdent(cols[i].name), eval: func(_ *evalCtx, row []any) (any, error) { return row[i], nil }})
		}
		out = &fromItem{node: &projectNode{in: jnode, exprs: exprs}, cols: append(merged, cols...), rels: rels}
	}
	if j.Alias != nil {
		for i := range out.cols {
			out.cols[i].table = j.Alias.Aliasname
		}
	}
	// The ON clause's column uses count for the scans' Needed.
	mergeUsed(out, sc)
	return out, nil
}

// mergeUsed records, in the scans' own used sets, the columns an
// expression compiled over from's columns referenced.
func mergeUsed(from *fromItem, sc *scope) {
	for i := range sc.used {
		markUsed(from, i)
	}
}

func markUsed(from *fromItem, i int) {
	// Columns are laid out in order; find the relation holding i.
	for _, r := range from.rels {
		k := indexOfCols(from.cols, r.cols)
		if k >= 0 && i >= k && i < k+len(r.cols) {
			r.scan.extraUsed(i - k)
			return
		}
	}
}

func indexOfCols(all, part []scopeCol) int {
	if len(part) == 0 {
		return -1
	}
	for i := 0; i+len(part) <= len(all); i++ {
		if all[i].table == part[0].table && all[i].name == part[0].name && all[i+len(part)-1].name == part[len(part)-1].name {
			return i
		}
	}
	return -1
}

func (n *scanNode) extraUsed(i int) {
	if n.extra == nil {
		n.extra = map[int]bool{}
	}
	n.extra[i] = true
}

func colRef(i int, col scopeCol) *Expr {
	return &Expr{oid: col.oid, name: col.name, desc: quoteIdent(col.table) + "." + quoteIdent(col.name), eval: func(_ *evalCtx, row []any) (any, error) { return row[i], nil }}
}

func andAll(conds []*Expr) *Expr {
	if len(conds) == 1 {
		return conds[0]
	}
	return &Expr{oid: pgtypes.OIDBool, desc: descs(conds), eval: func(ec *evalCtx, row []any) (any, error) {
		return and3many(ec, row, conds)
	}}
}

func and3many(ec *evalCtx, row []any, conds []*Expr) (any, error) {
	sawNull := false
	for _, c := range conds {
		v, err := c.eval(ec, row)
		if err != nil {
			return nil, err
		}
		if v == false {
			return false, nil
		}
		if v == nil {
			sawNull = true
		}
	}
	if sawNull {
		return nil, nil
	}
	return true, nil
}

// conjuncts splits a WHERE clause at its top-level ANDs.
func conjuncts(n *pg.Node) []*pg.Node {
	if n == nil {
		return nil
	}
	if b := n.GetBoolExpr(); b != nil && b.Boolop == pg.BoolExprType_AND_EXPR {
		var out []*pg.Node
		for _, a := range b.Args {
			out = append(out, conjuncts(a)...)
		}
		return out
	}
	return []*pg.Node{n}
}

func hasSubLink(n *pg.Node) bool {
	found := false
	walk(n, func(m *pg.Node) bool {
		if m.GetSubLink() != nil {
			found = true
		}
		return !found
	})
	return found
}

// target is one compiled select-list entry.
type target struct {
	expr *Expr
	name string
	node *pg.Node // the AST, for ORDER BY matching; nil for * expansions
}

func (c *compiler) simpleSelect(s *pg.SelectStmt, outer *scope) (*query, error) {
	from, err := c.fromClause(s.FromClause, outer)
	if err != nil {
		return nil, err
	}
	sc := &scope{cols: from.cols, parent: outer}
	for _, r := range from.rels {
		r := r
		k := indexOfCols(from.cols, r.cols)
		r.scan.offset = 0
		r.scan.used = func() map[int]bool {
			m := map[int]bool{}
			for i := range r.scan.extra {
				m[i] = true
			}
			for i := range sc.used {
				if i >= k && i < k+len(r.cols) {
					m[i-k] = true
				}
			}
			return m
		}
	}
	var n node = from.node
	// WHERE: conjuncts over one relation go to its scan.
	var rest []*Expr
	for _, cj := range conjuncts(s.WhereClause) {
		if containsAgg(cj) {
			return nil, errAt(aggLocation(cj), codeGroupingError, "aggregate functions are not allowed in WHERE")
		}
		if pushed := c.tryPush(cj, from, sc); pushed {
			continue
		}
		e, err := c.expr(cj, sc)
		if err != nil {
			return nil, err
		}
		if e, err = c.boolArg(e, -1, "WHERE"); err != nil {
			return nil, err
		}
		rest = append(rest, e)
	}
	if len(rest) > 0 {
		n = &filterNode{in: n, preds: rest}
	}
	// Grouping.
	grouped := len(s.GroupClause) > 0 || s.HavingClause != nil
	for _, t := range s.TargetList {
		grouped = grouped || containsAgg(t)
	}
	for _, o := range s.SortClause {
		grouped = grouped || containsAgg(o)
	}
	psc := sc // the scope select-list expressions compile in
	var g *grouping
	var agg *aggNode
	if grouped {
		g = &grouping{keyCol: map[int]int{}, keyFP: map[string]int{}, in: sc}
		var keys []*Expr
		for _, gn := range s.GroupClause {
			kn := gn
			// GROUP BY position or output alias.
			if a := gn.GetAConst(); a != nil && a.GetIval() != nil {
				k := int(a.GetIval().Ival)
				if k < 1 || k > len(s.TargetList) {
					return nil, errAt(a.Location, codeInvalidColumnReference, "GROUP BY position %d is not in select list", k)
				}
				kn = s.TargetList[k-1].GetResTarget().Val
			} else if cr := gn.GetColumnRef(); cr != nil {
				parts := strs(cr.Fields)
				if len(parts) == 1 {
					if _, err := c.column(&scope{cols: sc.cols}, parts, cr.Location); err != nil {
						for _, t := range s.TargetList {
							if rt := t.GetResTarget(); rt != nil && rt.Name == parts[0] {
								kn = rt.Val
							}
						}
					}
				}
			}
			if containsAgg(kn) {
				return nil, errAt(-1, codeGroupingError, "aggregate functions are not allowed in GROUP BY")
			}
			e, err := c.expr(kn, sc)
			if err != nil {
				return nil, err
			}
			slot := len(keys)
			keys = append(keys, e)
			g.keyFP[fingerprint(kn)] = slot
			if cr := kn.GetColumnRef(); cr != nil {
				parts := strs(cr.Fields)
				for i, col := range sc.cols {
					if col.name == parts[len(parts)-1] && (len(parts) == 1 || col.table == parts[len(parts)-2]) && !col.hidden {
						g.keyCol[i] = slot
					}
				}
			}
		}
		g.nkeys = len(keys)
		if sc.used == nil {
			sc.used = map[int]bool{}
		}
		agg = &aggNode{in: n, keys: keys, aggs: &g.aggs, grouped: len(s.GroupClause) > 0}
		n = agg
		psc = &scope{cols: sc.cols, parent: outer, grp: g}
		// Keep column-use tracking on the original scope.
		psc.used = sc.used
	}
	if s.HavingClause != nil {
		e, err := c.expr(s.HavingClause, psc)
		if err != nil {
			return nil, err
		}
		if e, err = c.boolArg(e, -1, "HAVING"); err != nil {
			return nil, err
		}
		n = &filterNode{in: n, preds: []*Expr{e}, what: "Filter"}
	}
	// Select list, with set-returning functions hoisted into slots past
	// the input row.
	srfBase := new(int)
	var srfs []*Expr
	c.srfSinks = append(c.srfSinks, &srfSink{base: srfBase, srfs: &srfs})
	defer func() { c.srfSinks = c.srfSinks[:len(c.srfSinks)-1] }()
	winBase := new(int)
	var wins []*winSpec
	c.winSinks = append(c.winSinks, &winSink{base: winBase, specs: &wins})
	defer func() { c.winSinks = c.winSinks[:len(c.winSinks)-1] }()
	var targets []target
	for _, t := range s.TargetList {
		rt := t.GetResTarget()
		if rt == nil {
			continue
		}
		if cr := rt.Val.GetColumnRef(); cr != nil {
			parts := strs(cr.Fields)
			if parts[len(parts)-1] == "*" {
				exp, err := c.expandStar(psc, parts, cr.Location)
				if err != nil {
					return nil, err
				}
				targets = append(targets, exp...)
				continue
			}
		}
		if ind := rt.Val.GetAIndirection(); ind != nil && len(ind.Indirection) > 0 && ind.Indirection[len(ind.Indirection)-1].GetAStar() != nil {
			e, err := c.expr(rt.Val, psc)
			if err != nil {
				return nil, err
			}
			cols := e.srfCols
			if cols == nil {
				cols = e.recCols
			}
			for k, col := range cols {
				k := k
				in := e
				targets = append(targets, target{name: col.Name, expr: &Expr{oid: col.OID, name: col.Name, desc: quoteIdent(col.Name), eval: func(ec *evalCtx, row []any) (any, error) {
					v, err := in.eval(ec, row)
					if r, ok := v.(Record); ok && k < len(r.Vals) {
						return r.Vals[k], err
					}
					return nil, err
				}}})
			}
			continue
		}
		e, err := c.expr(rt.Val, psc)
		if err != nil {
			return nil, err
		}
		name := e.name
		if rt.Name != "" {
			name = rt.Name
		}
		targets = append(targets, target{expr: e, name: name, node: rt.Val})
	}
	var exprs []*Expr
	var names []string
	var tnodes []*pg.Node
	for _, t := range targets {
		exprs = append(exprs, t.expr)
		names = append(names, t.name)
		tnodes = append(tnodes, t.node)
	}
	nvis := len(exprs)
	// DISTINCT ON and ORDER BY items become hidden columns unless they
	// name a select item.
	var distinctIdx []int
	distinctOn := len(s.DistinctClause) > 0 && s.DistinctClause[0] != nil && s.DistinctClause[0].Node != nil
	if distinctOn {
		for _, dn := range s.DistinctClause {
			idx, err := c.outputRef(dn, names, tnodes)
			if err != nil {
				return nil, err
			}
			if idx < 0 {
				e, err := c.expr(dn, psc)
				if err != nil {
					return nil, err
				}
				idx = len(exprs)
				exprs = append(exprs, e)
			}
			distinctIdx = append(distinctIdx, idx)
		}
	}
	var keys []sortKey
	for _, on := range s.SortClause {
		sb := on.GetSortBy()
		if sb == nil {
			continue
		}
		idx, err := c.outputRef(sb.Node, names, tnodes)
		if err != nil {
			return nil, err
		}
		if idx < 0 {
			if len(s.DistinctClause) > 0 && !distinctOn {
				return nil, errAt(sb.Location, codeInvalidColumnReference, "for SELECT DISTINCT, ORDER BY expressions must appear in select list")
			}
			e, err := c.expr(sb.Node, psc)
			if err != nil {
				return nil, err
			}
			idx = len(exprs)
			exprs = append(exprs, e)
		}
		keys = append(keys, sortKeyOf(sb, idx, exprs[idx].desc))
	}
	if distinctOn {
		for i, d := range distinctIdx {
			if i < len(keys) && keys[i].idx != d {
				return nil, errAt(-1, codeInvalidColumnReference, "SELECT DISTINCT ON expressions must match initial ORDER BY expressions")
			}
		}
	}
	if grouped {
		*winBase = g.nkeys + len(g.aggs)
	} else {
		*winBase = len(sc.cols)
	}
	*srfBase = *winBase + len(wins)
	if len(wins) > 0 {
		n = &windowNode{in: n, specs: &wins}
	}
	for i, e := range exprs {
		if e.srf != nil {
			// A bare set-returning function call in the select list.
			exprs[i] = c.hoist(e, c.srfSinks[len(c.srfSinks)-1])
		}
	}
	limit, offset, err := c.limits(s)
	if err != nil {
		return nil, err
	}
	needSort := len(keys) > 0 && !c.ordered(from, keys, exprs, sc, grouped || len(srfs) > 0 || len(wins) > 0)
	if grouped && len(srfs) == 0 && len(wins) == 0 {
		c.pushAggregates(from, rest, agg)
	}
	// Push LIMIT to a lone scan when nothing between needs all rows.
	if len(from.rels) == 1 && from.rels[0].scan == from.node && len(rest) == 0 && !grouped && len(srfs) == 0 && len(wins) == 0 &&
		len(s.DistinctClause) == 0 && !needSort && limit != nil && exactFilters(from.rels[0].scan) {
		from.rels[0].scan.limit = limit
		from.rels[0].scan.offset2 = offset
	}
	n = &projectNode{in: n, exprs: exprs, srfs: srfs}
	if needSort {
		n = &sortNode{in: n, keys: keys}
	}
	if len(s.DistinctClause) > 0 {
		idx := distinctIdx
		if !distinctOn {
			for i := 0; i < nvis; i++ {
				idx = append(idx, i)
			}
		}
		n = &distinctNode{in: n, idx: idx, on: distinctOn}
	}
	if limit != nil || offset != nil {
		n = &limitNode{in: n, limit: limit, offset: offset}
	}
	if len(exprs) > nvis {
		n = &stripNode{in: n, n: nvis}
	}
	q := &query{node: n, names: names}
	for _, e := range exprs[:nvis] {
		q.oids = append(q.oids, e.oid)
		q.origins = append(q.origins, e.origin)
		rc := e.recCols
		if rc == nil && len(e.srfCols) > 1 {
			rc = e.srfCols
		}
		q.recs = append(q.recs, rc)
	}
	return q, nil
}

// exactFilters reports whether the relation applies every pushed filter
// itself.
func exactFilters(s *scanNode) bool {
	if len(s.filters) == 0 {
		return true
	}
	ex, ok := s.rel.(Exacter)
	if !ok {
		return false
	}
	for i, f := range s.filters {
		if !ex.Exact(Filter{Node: s.filterNodes[i], Expr: f}) {
			return false
		}
	}
	return true
}

// ordered reports whether the sort keys follow the lone scanned
// relation's own order, so that no sort is needed; it may ask the scan
// to go in reverse.
func (c *compiler) ordered(from *fromItem, keys []sortKey, exprs []*Expr, sc *scope, blocked bool) bool {
	if blocked || len(from.rels) != 1 || from.rels[0].scan != from.node {
		return false
	}
	scan := from.rels[0].scan
	o, ok := scan.rel.(Ordered)
	if !ok {
		return false
	}
	ord := o.Ordering()
	if len(keys) > len(ord) {
		return false
	}
	desc := keys[0].desc
	for i, k := range keys {
		if k.desc != desc || k.nullsFirst != k.desc {
			return false
		}
		col, ok := exprs[k.idx].colIndex()
		if !ok || col != ord[i] {
			return false
		}
	}
	if desc {
		r, ok := scan.rel.(Reverser)
		if !ok || !r.CanReverse() {
			return false
		}
		scan.reverse = true
	}
	return true
}

// tryPush compiles a WHERE conjunct over a single base relation that no
// outer join makes nullable, and hands it to that relation's scan.
func (c *compiler) tryPush(cj *pg.Node, from *fromItem, full *scope) bool {
	if hasSubLink(cj) || len(from.rels) == 0 {
		return false
	}
	// What does not compile over the whole FROM list (an ambiguous
	// name, a typo) stays in the WHERE filter, to fail there.
	saved := append([]uint32(nil), c.params...)
	if e, err := c.expr(cj, full); err != nil || e.srf != nil || e.oid != pgtypes.OIDBool {
		c.params = saved
		return false
	}
	for _, r := range from.rels {
		if r.nullable {
			continue
		}
		local := &scope{cols: r.cols}
		saved := append([]uint32(nil), c.params...)
		e, err := c.expr(cj, local)
		if err != nil {
			c.params = saved
			continue
		}
		if e.oid != pgtypes.OIDBool {
			c.params = saved
			return false
		}
		if e.srf != nil {
			return false
		}
		for i := range local.used {
			r.scan.extraUsed(i)
		}
		r.scan.filters = append(r.scan.filters, e)
		r.scan.filterNodes = append(r.scan.filterNodes, any(cj))
		return true
	}
	return false
}

// expandStar expands * or t.* in a select list.
func (c *compiler) expandStar(sc *scope, parts []string, loc int32) ([]target, error) {
	var out []target
	found := false
	// Over one table, EXPLAIN names the columns unqualified, as
	// PostgreSQL's deparser does.
	oneTable := true
	for _, col := range sc.cols {
		oneTable = oneTable && col.table == sc.cols[0].table
	}
	for _, col := range sc.cols {
		if (col.hidden && len(parts) == 1) || col.nostar {
			continue
		}
		if len(parts) > 1 && col.table != parts[len(parts)-2] {
			continue
		}
		found = true
		e, err := c.column(sc, []string{col.table, col.name}, loc)
		if err != nil {
			if col.table == "" {
				e, err = c.column(sc, []string{col.name}, loc)
			}
			if err != nil {
				return nil, err
			}
		}
		if oneTable && e.desc != quoteIdent(col.name) {
			cp := *e
			cp.desc = quoteIdent(col.name)
			e = &cp
		}
		out = append(out, target{expr: e, name: col.name})
	}
	if !found {
		if len(parts) > 1 {
			return nil, errAt(loc, sqlstate.CodeUndefinedTable, "missing FROM-clause entry for table \"%s\"", parts[len(parts)-2])
		}
		if len(sc.cols) == 0 {
			return nil, errAt(loc, codeSyntaxError, "SELECT * with no tables specified is not valid")
		}
	}
	return out, nil
}

// srfSink collects the set-returning functions of one select list.
type srfSink struct {
	base *int
	srfs *[]*Expr
}

// hoist moves a set-returning call into its select list's project node
// and returns the expression that reads its current value.
func (c *compiler) hoist(e *Expr, sink *srfSink) *Expr {
	j := len(*sink.srfs)
	*sink.srfs = append(*sink.srfs, e)
	base := sink.base
	oid := e.oid
	return &Expr{oid: oid, name: e.name, desc: e.desc, srfCols: e.srfColsIfRecord(), recCols: e.srfColsIfRecord(), eval: func(_ *evalCtx, row []any) (any, error) {
		k := *base + j
		if k < len(row) {
			return row[k], nil
		}
		return nil, nil
	}}
}

func (e *Expr) srfColsIfRecord() []pgtypes.Column {
	if len(e.srfCols) > 1 {
		return e.srfCols
	}
	return nil
}

// colIndex reports the input column a plain column reference reads.
func (e *Expr) colIndex() (int, bool) {
	if e.col > 0 {
		return e.col - 1, true
	}
	return 0, false
}

// subLink compiles a subquery expression.
func (c *compiler) subLink(sl *pg.SubLink, sc *scope) (*Expr, error) {
	sel := sl.Subselect.GetSelectStmt()
	if sel == nil {
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "this subquery is not supported")
	}
	bar := &scope{parent: sc, barrier: true}
	// A subquery's select list has its own set-returning functions.
	q, err := c.selectStmt(sel, bar)
	if err != nil {
		return nil, err
	}
	correlated := bar.correlated
	sub := q.node
	key := &struct{ n node }{sub}
	// rows runs the subquery for the current row; uncorrelated ones run
	// once per execution.
	rows := func(ec *evalCtx, row []any, limit int) ([][]any, error) {
		if !correlated {
			if r, ok := ec.run.subs[key]; ok {
				return r, nil
			}
		}
		sec := ec.withOuter(row)
		it, err := openNode(sub, sec)
		if err != nil {
			return nil, err
		}
		defer it.close()
		var out [][]any
		var held int64
		for limit < 0 || len(out) < limit {
			r, err := it.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				ec.release(held)
				return nil, err
			}
			sz := rowSize(r)
			if err := ec.chargeN(sz); err != nil {
				ec.release(held)
				return nil, err
			}
			held += sz
			out = append(out, r)
		}
		if !correlated && limit < 0 {
			ec.run.setSub(key, out)
		} else {
			// The caller uses the rows at once; they do not stay held.
			ec.release(held)
		}
		return out, nil
	}
	switch sl.SubLinkType {
	case pg.SubLinkType_EXISTS_SUBLINK:
		return &Expr{oid: pgtypes.OIDBool, name: "exists", desc: "EXISTS(SubPlan)", eval: func(ec *evalCtx, row []any) (any, error) {
			lim := 1
			if !correlated {
				lim = -1
			}
			r, err := rows(ec, row, lim)
			if err != nil {
				return nil, err
			}
			return len(r) > 0, nil
		}}, nil
	case pg.SubLinkType_EXPR_SUBLINK, pg.SubLinkType_ARRAY_SUBLINK:
		if len(q.oids) != 1 {
			return nil, errAt(sl.Location, codeSyntaxError, "subquery must return only one column")
		}
		oid := settleOID(q.oids[0])
		name := q.names[0]
		if sl.SubLinkType == pg.SubLinkType_ARRAY_SUBLINK {
			at := arrayOf[oid]
			if at == 0 {
				return nil, errAt(sl.Location, codeUndefinedObject, "could not find array type for data type %s", typeName(oid))
			}
			return &Expr{oid: at, name: "array", desc: "ARRAY(SubPlan)", eval: func(ec *evalCtx, row []any) (any, error) {
				r, err := rows(ec, row, -1)
				if err != nil {
					return nil, err
				}
				out := Array{Elem: oid, Vals: make([]any, len(r))}
				for i, x := range r {
					out.Vals[i] = x[0]
				}
				return out, nil
			}}, nil
		}
		var origin *pgtypes.Origin
		if o := q.origin(0); o != nil {
			origin = typmodOrigin(int64(o.Typmod))
		}
		return &Expr{oid: oid, name: name, desc: "(SubPlan)", origin: origin, eval: func(ec *evalCtx, row []any) (any, error) {
			lim := 2
			if !correlated {
				lim = -1
			}
			r, err := rows(ec, row, lim)
			if err != nil {
				return nil, err
			}
			switch {
			case len(r) == 0:
				return nil, nil
			case len(r) > 1:
				return nil, sqlstate.Errorf(codeCardinalityViolation, "more than one row returned by a subquery used as an expression")
			}
			return r[0][0], nil
		}}, nil
	case pg.SubLinkType_ANY_SUBLINK, pg.SubLinkType_ALL_SUBLINK:
		if len(q.oids) != 1 {
			return nil, errAt(sl.Location, codeSyntaxError, "subquery has too many columns")
		}
		l, err := c.expr(sl.Testexpr, sc)
		if err != nil {
			return nil, err
		}
		op := "="
		if len(sl.OperName) > 0 {
			op = opName(sl.OperName)
		}
		all := sl.SubLinkType == pg.SubLinkType_ALL_SUBLINK
		oid := settleOID(q.oids[0])
		arr := &Expr{oid: arrayOf[oid], desc: "(SubPlan)", eval: func(ec *evalCtx, row []any) (any, error) {
			r, err := rows(ec, row, -1)
			if err != nil {
				return nil, err
			}
			out := Array{Elem: oid, Vals: make([]any, len(r))}
			for i, x := range r {
				out.Vals[i] = x[0]
			}
			return out, nil
		}}
		if arr.oid == 0 {
			return nil, errAt(sl.Location, sqlstate.CodeFeatureNotSupported, "IN over type %s is not supported", typeName(oid))
		}
		e, err := c.anyAll(op, l, arr, all, sl.Location)
		if err != nil {
			return nil, err
		}
		e.desc = "(" + l.desc + " " + op + " ANY (SubPlan))"
		return e, nil
	}
	return nil, errAt(sl.Location, sqlstate.CodeFeatureNotSupported, "this kind of subquery is not supported")
}

// equiKeys finds the ON conjuncts "left expression = right expression"
// whose sides compare by the same value encoding, for a hash join.
func (c *compiler) equiKeys(quals *pg.Node, lcols, rcols []scopeCol, outer *scope) (ls, rs []*Expr) {
	for _, cj := range conjuncts(quals) {
		a := cj.GetAExpr()
		if a == nil || a.Kind != pg.A_Expr_Kind_AEXPR_OP || opName(a.Name) != "=" || a.Lexpr == nil || hasSubLink(cj) {
			continue
		}
		try := func(x, y *pg.Node) bool {
			saved := append([]uint32(nil), c.params...)
			l, err1 := c.expr(x, &scope{cols: lcols, parent: outer})
			r, err2 := c.expr(y, &scope{cols: rcols, parent: outer})
			if err1 != nil || err2 != nil || l.srf != nil || r.srf != nil || !hashable(l.oid, r.oid) {
				c.params = saved
				return false
			}
			ls, rs = append(ls, l), append(rs, r)
			return true
		}
		if !try(a.Lexpr, a.Rexpr) {
			try(a.Rexpr, a.Lexpr)
		}
	}
	return ls, rs
}

// hashable reports whether equal values of types a and b encode alike
// in rowKey.
func hashable(a, b uint32) bool {
	switch {
	case a == pgtypes.OIDUnknown || b == pgtypes.OIDUnknown:
		return false
	case (isInt(a) || isOIDLike(a)) && (isInt(b) || isOIDLike(b)):
		return true
	case isText(a) && isText(b):
		return a != OIDBpchar && b != OIDBpchar
	case a == b:
		return a == pgtypes.OIDBool || a == pgtypes.OIDDate || a == pgtypes.OIDUUID || a == pgtypes.OIDNumeric
	}
	return false
}
