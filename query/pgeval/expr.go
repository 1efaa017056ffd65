package pgeval

import (
	"context"
	"fmt"
	"math/big"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// evalCtx is what an expression or a plan node runs with.
type evalCtx struct {
	ctx  context.Context
	env  *Env
	args []any
	// outer holds the current rows of the enclosing queries, innermost
	// last, for correlated subqueries.
	outer [][]any
	// run is shared by every evalCtx derived for one execution.
	run *runState
}

// runState is per execution: caches of uncorrelated subqueries and CTEs,
// the memory budget, and whether the nodes count their rows and time
// (EXPLAIN ANALYZE).
type runState struct {
	subs    map[any][][]any
	budget  int64
	used    int64
	analyze bool
}

func (ec *evalCtx) withOuter(row []any) *evalCtx {
	c := *ec
	c.outer = append(append([][]any(nil), ec.outer...), row)
	return &c
}

// charge accounts for a row held by a materializing node; release
// gives the bytes back when the node lets go of its rows.
func (ec *evalCtx) charge(row []any) error {
	return ec.chargeN(rowSize(row))
}

func (ec *evalCtx) release(n int64) {
	if ec.run != nil {
		ec.run.used -= n
	}
}

func rowSize(row []any) int64 {
	n := int64(24)
	for _, v := range row {
		n += 16
		switch x := v.(type) {
		case string:
			n += int64(len(x))
		case []byte:
			n += int64(len(x))
		case pgtypes.Numeric:
			n += int64(len(x))
		case Array:
			n += int64(len(x.Vals)) * 24
		}
	}
	return n
}

func (ec *evalCtx) chargeN(n int64) error {
	if ec.run == nil {
		return nil
	}
	ec.run.used += n
	if ec.run.used > ec.run.budget {
		e := sqlstate.Errorf(codeOutOfMemory, "out of memory")
		e.Detail = fmt.Sprintf("The statement needs more than %d bytes to sort, group or deduplicate rows.", ec.run.budget)
		return e
	}
	return nil
}

// Expr is a compiled, typed expression over one row.
type Expr struct {
	oid  uint32
	name string // the result column name PostgreSQL would give it
	desc string // for EXPLAIN
	eval func(ec *evalCtx, row []any) (any, error)
	// isConst: the value is val whatever the row (literals, folded casts).
	isConst bool
	val     any
	// param is the 1-based parameter number of a bare $n, so that the
	// context can give it a type.
	param int
	// srf, for set-returning functions, yields the rows.
	srf func(ec *evalCtx, row []any) ([][]any, error)
	// srfCols are the columns a set-returning function yields (one for
	// scalar ones).
	srfCols []pgtypes.Column
	// compiled by CompileExpr: the parameter types.
	params []uint32
	// col is 1 + the input column index of a plain column reference.
	col int
	// pos is the 1-based position of a literal in the statement text,
	// for errors about it; 0 if unknown.
	pos int
	// recCols are the fields of a record-typed expression, when known.
	recCols []pgtypes.Column
	// origin is the table column the expression reads as it is, and its
	// type modifier, as RowDescription reports them; nil: neither.
	origin *pgtypes.Origin
}

// OID is the expression's result type.
func (e *Expr) OID() uint32 { return e.oid }

// Origin is the table column the expression reads as it is and its type
// modifier (nil: none), for a result column's description.
func (e *Expr) Origin() *pgtypes.Origin { return e.origin }

// Params are the parameter types CompileExpr inferred.
func (e *Expr) Params() []uint32 { return e.params }

// String describes the expression as EXPLAIN prints it.
func (e *Expr) String() string { return e.desc }

// Eval evaluates the expression over row.
func (e *Expr) Eval(ctx context.Context, env *Env, row []any, args []any) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, sqlstate.Errorf(sqlstate.CodeInternal, "internal error evaluating %s: %v", e.desc, r)
		}
	}()
	return e.eval(newEvalCtx(ctx, env, args), row)
}

// setSub remembers a subquery's or work table's rows for the run.
func (r *runState) setSub(key any, rows [][]any) {
	if r.subs == nil {
		r.subs = map[any][][]any{}
	}
	r.subs[key] = rows
}

// newEvalCtx starts an execution: its evalCtx and runState come in one
// allocation, which a point query's executions notice.
func newEvalCtx(ctx context.Context, env *Env, args []any) *evalCtx {
	b := int64(64 << 20)
	if env != nil && env.SortBudget > 0 {
		b = env.SortBudget
	}
	f := &struct {
		ec evalCtx
		rs runState
	}{evalCtx{ctx: ctx, env: env, args: args}, runState{budget: b}} // subs is made on first use: most runs have no subquery
	f.ec.run = &f.rs
	return &f.ec
}

func constExpr(oid uint32, name string, v any) *Expr {
	return &Expr{oid: oid, name: name, desc: constDesc(oid, v), isConst: true, val: v,
		eval: func(*evalCtx, []any) (any, error) { return v, nil }}
}

func constDesc(oid uint32, v any) string {
	if v == nil {
		return "NULL"
	}
	switch oid {
	case pgtypes.OIDInt4, pgtypes.OIDInt8, pgtypes.OIDNumeric, pgtypes.OIDBool:
		return FormatText(oid, v)
	}
	s := "'" + strings.ReplaceAll(FormatText(oid, v), "'", "''") + "'"
	if oid == pgtypes.OIDUnknown {
		return s
	}
	return s + "::" + typeName(oid)
}

// scopeCol is a column visible to expressions.
type scopeCol struct {
	schema, table, name string
	oid                 uint32
	// rec are the fields of a record-typed column, when known.
	rec []pgtypes.Column
	// hidden columns take no part in * and unqualified lookup (the right
	// side's copy of a JOIN USING column).
	hidden bool
	// nostar columns are reached by name only: * and t.*, a whole-row
	// reference, NATURAL and USING leave them out (StarColumner).
	nostar bool
	origin *pgtypes.Origin
}

// scope is the columns of one query level's FROM list; parent is the
// enclosing query's.
type scope struct {
	cols   []scopeCol
	parent *scope
	// grp is set while compiling expressions that run after grouping.
	grp *grouping
	// correlated is set when an expression at a deeper level referenced
	// this scope's columns.
	correlated bool
	// used marks referenced columns (for ScanRequest.Needed).
	used map[int]bool
	// barrier scopes have no columns: a subquery's, to learn whether
	// anything inside it referenced the outside (correlation).
	barrier bool
}

// grouping maps pre-aggregation expressions to slots of the
// post-aggregation row: [group keys..., aggregates...].
type grouping struct {
	keyCol map[int]int    // input column index → key slot
	keyFP  map[string]int // expression fingerprint → key slot
	nkeys  int
	aggs   []*aggSpec
	in     *scope // the pre-aggregation scope
}

// compiler holds what one statement's compilation shares.
type compiler struct {
	ctx    context.Context
	env    *Env
	params []uint32
	ctes   []map[string]*cteDef
	// depth guards against runaway recursion on absurd input.
	depth int
	// srfSinks collect set-returning functions of the select lists being
	// compiled, innermost last.
	srfSinks []*srfSink
	winSinks []*winSink
}

func (c *compiler) paramType(i int) uint32 {
	if i < len(c.params) {
		return c.params[i]
	}
	return 0
}

func pos(loc int32) int {
	if loc < 0 {
		return 0
	}
	return int(loc) + 1
}

func errAt(loc int32, code, format string, args ...any) error {
	e := sqlstate.Errorf(code, format, args...)
	e.Position = pos(loc)
	return e
}

// strs returns the String values of a name list (funcname, fields).
func strs(nodes []*pg.Node) []string {
	var out []string
	for _, n := range nodes {
		if s := n.GetString_(); s != nil {
			out = append(out, s.Sval)
		} else if n.GetAStar() != nil {
			out = append(out, "*")
		}
	}
	return out
}

// lookupColumn resolves a possibly qualified column name through the
// scope chain.
func (c *compiler) column(sc *scope, parts []string, loc int32) (*Expr, error) {
	name := parts[len(parts)-1]
	qual := parts[:len(parts)-1]
	depth := -1
	for s := sc; s != nil; s = s.parent {
		if s.barrier {
			continue
		}
		depth++
		found := -1
		for i, col := range s.cols {
			if col.name != name {
				continue
			}
			if len(qual) == 0 && col.hidden {
				continue
			}
			if len(qual) >= 1 && col.table != qual[len(qual)-1] {
				continue
			}
			if len(qual) >= 2 && col.schema != "" && col.schema != qual[len(qual)-2] {
				continue
			}
			if found >= 0 {
				return nil, errAt(loc, codeAmbiguousColumn, "column reference \"%s\" is ambiguous", strings.Join(parts, "."))
			}
			found = i
		}
		if found < 0 {
			continue
		}
		if s.used == nil {
			s.used = map[int]bool{}
		}
		s.used[found] = true
		for t := sc; t != s; t = t.parent {
			t.correlated = true
		}
		if depth > 0 {
			s.correlated = true
		}
		idx := found
		col := s.cols[found]
		if s.grp != nil {
			slot, ok := s.grp.keyCol[found]
			if !ok {
				return nil, errAt(loc, codeGroupingError, "column \"%s.%s\" must appear in the GROUP BY clause or be used in an aggregate function", col.table, col.name)
			}
			idx = slot
		}
		desc := quoteIdent(name)
		if len(qual) > 0 {
			desc = quoteIdent(qual[len(qual)-1]) + "." + desc
		}
		d := depth
		if d == 0 {
			ci := 0
			if s.grp == nil {
				ci = idx + 1
			}
			return &Expr{oid: col.oid, name: name, desc: desc, col: ci, recCols: col.rec, origin: col.origin, eval: func(_ *evalCtx, row []any) (any, error) {
				if idx < len(row) {
					return row[idx], nil
				}
				return nil, nil
			}}, nil
		}
		return &Expr{oid: col.oid, name: name, desc: desc, recCols: col.rec, origin: col.origin, eval: func(ec *evalCtx, _ []any) (any, error) {
			k := len(ec.outer) - d
			if k < 0 || idx >= len(ec.outer[k]) {
				return nil, nil
			}
			return ec.outer[k][idx], nil
		}}, nil
	}
	if len(qual) == 0 {
		// A bare table name is a whole-row reference (row_to_json(t)).
		for s := sc; s != nil; s = s.parent {
			for _, col := range s.cols {
				if col.table == name {
					return c.wholeRow(sc, []string{name, "*"}, loc)
				}
			}
		}
	}
	if len(qual) > 0 {
		// A qualifier that names no FROM item is PostgreSQL's "missing
		// FROM-clause entry".
		known := false
		for s := sc; s != nil; s = s.parent {
			for _, col := range s.cols {
				if col.table == qual[len(qual)-1] {
					known = true
				}
			}
		}
		if !known {
			return nil, errAt(loc, sqlstate.CodeUndefinedTable, "missing FROM-clause entry for table \"%s\"", qual[len(qual)-1])
		}
	}
	return nil, errAt(loc, sqlstate.CodeUndefinedColumn, "column \"%s\" does not exist", strings.Join(parts, "."))
}

// expr compiles an expression in scope sc.
func (c *compiler) expr(n *pg.Node, sc *scope) (*Expr, error) {
	if n == nil {
		return constExpr(pgtypes.OIDUnknown, "?column?", nil), nil
	}
	c.depth++
	defer func() { c.depth-- }()
	if c.depth > 500 {
		return nil, sqlstate.Errorf(sqlstate.CodeProgramLimitExceeded, "stack depth limit exceeded")
	}
	if sc != nil && sc.grp != nil {
		if slot, ok := sc.grp.keyFP[fingerprint(n)]; ok && n.GetAConst() == nil {
			e, err := c.expr(n, sc.grp.in)
			if err != nil {
				return nil, err
			}
			return &Expr{oid: e.oid, name: e.name, desc: e.desc, origin: e.origin, eval: func(_ *evalCtx, row []any) (any, error) { return row[slot], nil }}, nil
		}
	}
	switch x := n.Node.(type) {
	case *pg.Node_AConst:
		return c.aconst(x.AConst)
	case *pg.Node_ParamRef:
		i := int(x.ParamRef.Number)
		if i < 1 || i > 65535 {
			return nil, errAt(x.ParamRef.Location, sqlstate.CodeUndefinedParameter, "there is no parameter $%d", i)
		}
		for len(c.params) < i {
			c.params = append(c.params, 0)
		}
		oid := c.params[i-1]
		if oid == 0 {
			oid = pgtypes.OIDUnknown
		}
		return &Expr{oid: oid, name: "?column?", desc: fmt.Sprintf("$%d", i), param: i, eval: func(ec *evalCtx, _ []any) (any, error) {
			if i-1 < len(ec.args) {
				return ec.args[i-1], nil
			}
			return nil, sqlstate.Errorf(sqlstate.CodeProtocolViolation, "no value for parameter $%d", i)
		}}, nil
	case *pg.Node_ColumnRef:
		parts := strs(x.ColumnRef.Fields)
		if len(parts) > 0 && parts[len(parts)-1] == "*" {
			return c.wholeRow(sc, parts, x.ColumnRef.Location)
		}
		return c.column(sc, parts, x.ColumnRef.Location)
	case *pg.Node_TypeCast:
		return c.typeCast(x.TypeCast, sc)
	case *pg.Node_AExpr:
		return c.aexpr(x.AExpr, sc)
	case *pg.Node_BoolExpr:
		return c.boolExpr(x.BoolExpr, sc)
	case *pg.Node_NullTest:
		return c.nullTest(x.NullTest, sc)
	case *pg.Node_BooleanTest:
		return c.booleanTest(x.BooleanTest, sc)
	case *pg.Node_FuncCall:
		return c.funcCall(x.FuncCall, sc)
	case *pg.Node_SqlvalueFunction:
		return c.sqlValueFunction(x.SqlvalueFunction)
	case *pg.Node_CaseExpr:
		return c.caseExpr(x.CaseExpr, sc)
	case *pg.Node_CoalesceExpr:
		return c.coalesce(x.CoalesceExpr, sc)
	case *pg.Node_MinMaxExpr:
		return c.minMax(x.MinMaxExpr, sc)
	case *pg.Node_SubLink:
		return c.subLink(x.SubLink, sc)
	case *pg.Node_AArrayExpr:
		return c.arrayExpr(x.AArrayExpr, sc)
	case *pg.Node_AIndirection:
		return c.indirection(x.AIndirection, sc)
	case *pg.Node_RowExpr:
		return c.rowExpr(x.RowExpr.Args, sc)
	case *pg.Node_CollateClause:
		e, err := c.expr(x.CollateClause.Arg, sc)
		if err != nil || e.origin == nil || e.origin.Table == 0 {
			return e, err
		}
		// COLLATE keeps the type modifier, not the column.
		ne := *e
		ne.origin = typmodOrigin(int64(e.origin.Typmod))
		return &ne, nil
	case *pg.Node_SetToDefault:
		return nil, sqlstate.Errorf(codeSyntaxError, "DEFAULT is not allowed in this context")
	}
	return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "expression %s is not supported", strings.TrimPrefix(fmt.Sprintf("%T", n.Node), "*pg_query.Node_"))
}

func (c *compiler) aconst(a *pg.A_Const) (*Expr, error) {
	e, err := c.aconst1(a)
	if e != nil {
		e.pos = pos(a.Location)
	}
	return e, err
}

func (c *compiler) aconst1(a *pg.A_Const) (*Expr, error) {
	if a.Isnull {
		return constExpr(pgtypes.OIDUnknown, "?column?", nil), nil
	}
	switch v := a.Val.(type) {
	case *pg.A_Const_Ival:
		return constExpr(pgtypes.OIDInt4, "?column?", int64(v.Ival.Ival)), nil
	case *pg.A_Const_Fval:
		// Integers too large for int4 come as Fval too.
		if i, err := pgtypes.ParseText(pgtypes.OIDInt8, v.Fval.Fval); err == nil {
			return constExpr(pgtypes.OIDInt8, "?column?", i), nil
		}
		n, err := pgtypes.ParseNumeric(v.Fval.Fval)
		if err != nil {
			return nil, errAt(a.Location, sqlstate.CodeInvalidTextRepresent, "invalid input syntax for type numeric: \"%s\"", v.Fval.Fval)
		}
		return constExpr(pgtypes.OIDNumeric, "?column?", n), nil
	case *pg.A_Const_Sval:
		return constExpr(pgtypes.OIDUnknown, "?column?", v.Sval.Sval), nil
	case *pg.A_Const_Boolval:
		return constExpr(pgtypes.OIDBool, "?column?", v.Boolval.Boolval), nil
	case *pg.A_Const_Bsval:
		return nil, errAt(a.Location, sqlstate.CodeFeatureNotSupported, "bit strings are not supported")
	}
	return constExpr(pgtypes.OIDUnknown, "?column?", nil), nil
}

// wholeRow is t.* used as a value: a record of t's columns.
func (c *compiler) wholeRow(sc *scope, parts []string, loc int32) (*Expr, error) {
	args, err := c.starFields(sc, parts, loc)
	if err != nil {
		return nil, err
	}
	return recordOf(args, parts[len(parts)-2]), nil
}

// starFields are the columns t.* stands for.
func (c *compiler) starFields(sc *scope, parts []string, loc int32) ([]*Expr, error) {
	if sc == nil || len(parts) < 2 {
		return nil, errAt(loc, sqlstate.CodeFeatureNotSupported, "* is not allowed here")
	}
	var args []*Expr
	var cols []scopeCol
	for s := sc; s != nil && len(cols) == 0; s = s.parent {
		for _, col := range s.cols {
			if col.table == parts[len(parts)-2] && !col.nostar {
				cols = append(cols, col)
			}
		}
	}
	for _, col := range cols {
		{
			e, err := c.column(sc, []string{col.table, col.name}, loc)
			if err != nil {
				return nil, err
			}
			e.name = col.name
			args = append(args, e)
		}
	}
	if len(args) == 0 {
		return nil, errAt(loc, sqlstate.CodeUndefinedTable, "missing FROM-clause entry for table \"%s\"", parts[len(parts)-2])
	}
	return args, nil
}

func recordOf(args []*Expr, name string) *Expr {
	cols := make([]pgtypes.Column, len(args))
	for i, a := range args {
		cols[i] = pgtypes.Column{Name: a.name, OID: a.oid}
		if cols[i].OID == pgtypes.OIDUnknown {
			cols[i].OID = pgtypes.OIDText
		}
	}
	return &Expr{oid: OIDRecord, name: name, desc: "ROW(...)", recCols: cols, eval: func(ec *evalCtx, row []any) (any, error) {
		vals := make([]any, len(args))
		for i, a := range args {
			v, err := a.eval(ec, row)
			if err != nil {
				return nil, err
			}
			vals[i] = v
		}
		return Record{Cols: cols, Vals: vals}, nil
	}}
}

func (c *compiler) rowExpr(argNodes []*pg.Node, sc *scope) (*Expr, error) {
	var args []*Expr
	for _, a := range argNodes {
		// ROW(t.*, x) is ROW(t.a, t.b, x), as in PostgreSQL.
		if cr := a.GetColumnRef(); cr != nil {
			if parts := strs(cr.Fields); len(parts) > 1 && parts[len(parts)-1] == "*" {
				fields, err := c.starFields(sc, parts, cr.Location)
				if err != nil {
					return nil, err
				}
				args = append(args, fields...)
				continue
			}
		}
		e, err := c.expr(a, sc)
		if err != nil {
			return nil, err
		}
		args = append(args, c.settle(e))
	}
	for i, e := range args {
		e.name = fmt.Sprintf("f%d", i+1)
	}
	r := recordOf(args, "row")
	return r, nil
}

// settle gives an unknown-typed expression the type text, as PostgreSQL
// does where nothing else decides.
func (c *compiler) settle(e *Expr) *Expr {
	if e.oid != pgtypes.OIDUnknown {
		return e
	}
	out, err := c.coerce(e, pgtypes.OIDText, -1)
	if err != nil {
		return e
	}
	return out
}

// coerce converts e to type to implicitly (or, with explicit, as a
// cast). Unknown literals are converted at compile time, so that a bad
// literal fails at prepare as in PostgreSQL; parameters adopt the type.
func (c *compiler) coerce(e *Expr, to uint32, loc int32) (*Expr, error) {
	return c.convert(e, to, loc, false)
}

func (c *compiler) convert(e *Expr, to uint32, loc int32, explicit bool) (*Expr, error) {
	if e.oid == to || to == OIDAny || to == 0 {
		return e, nil
	}
	if e.param > 0 && e.oid == pgtypes.OIDUnknown {
		c.params[e.param-1] = to
		ne := *e
		ne.oid = to
		return &ne, nil
	}
	// pg_node_tree is binary-coercible to text, implicitly
	// (pg_get_expr(adbin, adrelid)).
	if !explicit && !implicitCast(e.oid, to) && !(e.oid == OIDPgNodeTree && isText(to)) {
		return nil, errAt(loc, codeDatatypeMismatch, "argument is of type %s, not %s", typeName(e.oid), typeName(to))
	}
	if explicit && !canCast(e.oid, to) {
		return nil, errAt(loc, sqlstate.CodeCannotCoerce, "cannot cast type %s to %s", typeName(e.oid), typeName(to))
	}
	from := e.oid
	if e.isConst {
		ec := &evalCtx{ctx: c.ctx, env: c.env}
		v, err := castValue(e.val, from, to, ec)
		if err != nil {
			// PostgreSQL points at a literal whose text does not fit the
			// type.
			if se, ok := err.(*sqlstate.Error); ok && se.Position == 0 && from == pgtypes.OIDUnknown {
				cp := *se
				cp.Position = e.pos
				if cp.Position == 0 && loc >= 0 {
					cp.Position = pos(loc)
				}
				return nil, &cp
			}
			return nil, err
		}
		out := constExpr(to, e.name, v)
		if from != pgtypes.OIDUnknown {
			out.desc = "(" + e.desc + ")::" + typeName(to)
		}
		return out, nil
	}
	in := e
	return &Expr{oid: to, name: e.name, desc: "(" + e.desc + ")::" + typeName(to), eval: func(ec *evalCtx, row []any) (any, error) {
		v, err := in.eval(ec, row)
		if err != nil || v == nil {
			return v, err
		}
		return castValue(v, from, to, ec)
	}}, nil
}

// typeOID resolves a TypeName.
func (c *compiler) typeOID(t *pg.TypeName) (uint32, int64, error) {
	names := strs(t.Names)
	if len(names) > 1 && names[0] == "pg_catalog" {
		names = names[1:]
	}
	name := strings.Join(names, ".")
	oid, ok := typeNames[name]
	if !ok {
		// pg_query spells some SQL-standard names itself.
		switch name {
		case "timestamptz":
			oid, ok = pgtypes.OIDTimestamptz, true
		}
	}
	if !ok && unsupportedTypes[name] {
		return 0, -1, errAt(t.Location, sqlstate.CodeFeatureNotSupported, "type %s is not supported", name)
	}
	if !ok {
		return 0, -1, errAt(t.Location, codeUndefinedObject, "type \"%s\" does not exist", name)
	}
	typmod := int64(-1)
	var mods []int64
	for _, m := range t.Typmods {
		if a := m.GetAConst(); a != nil && a.GetIval() != nil {
			mods = append(mods, int64(a.GetIval().Ival))
		}
	}
	switch {
	case len(mods) == 0:
	case oid == OIDInterval:
		precision := pgtypes.IntervalFullPrecision
		if len(mods) > 1 {
			precision = int(mods[1])
		}
		tm, err := pgtypes.IntervalTypmod(int(mods[0]), precision)
		if err != nil {
			return 0, -1, errAt(t.Location, sqlstate.CodeInvalidParameterValue, "%s", err.(*sqlstate.Error).Message)
		}
		typmod = int64(tm)
	case oid == pgtypes.OIDVarchar || oid == OIDBpchar:
		typmod = mods[0] + 4
	case oid == pgtypes.OIDNumeric:
		scale := int64(0)
		if len(mods) > 1 {
			scale = mods[1]
		}
		typmod = (mods[0]<<16 | scale) + 4
	default:
		typmod = mods[0]
	}
	if oid == OIDBpchar && typmod < 0 && name != "bpchar" {
		// char without a length is char(1).
		typmod = 5
	}
	if len(t.ArrayBounds) > 0 {
		a, ok := arrayOf[oid]
		if !ok {
			return 0, -1, errAt(t.Location, codeUndefinedObject, "type \"%s[]\" does not exist", name)
		}
		oid = a
	}
	return oid, typmod, nil
}

func (c *compiler) typeCast(tc *pg.TypeCast, sc *scope) (*Expr, error) {
	to, typmod, err := c.typeOID(tc.TypeName)
	if err != nil {
		return nil, err
	}
	arr := tc.Arg.GetAArrayExpr()
	if arr != nil && len(arr.Elements) == 0 && elemOf[to] != 0 && to != OIDInt2Vector && to != OIDOidVector {
		// The cast is what gives ARRAY[] its type.
		k := constExpr(to, "array", Array{Elem: elemOf[to], Vals: []any{}})
		k.desc = "ARRAY[]::" + typeName(to)
		return k, nil
	}
	in, err := c.expr(tc.Arg, sc)
	if err != nil {
		return nil, err
	}
	inMod := int64(-1)
	if in.origin != nil {
		inMod = int64(in.origin.Typmod)
	}
	var out *Expr
	if s, ok := in.val.(string); ok && in.isConst && in.oid == pgtypes.OIDUnknown && to == OIDInterval && typmod >= 0 {
		// A literal is read with the qualifier (interval '1' day is a
		// day), as interval_in reads it with the typmod.
		ec := &evalCtx{ctx: c.ctx, env: c.env}
		v, err := pgtypes.ParseInterval(s, styleOf(ec), int32(typmod))
		if err != nil {
			if se, ok := err.(*sqlstate.Error); ok && se.Position == 0 {
				cp := *se
				cp.Position = in.pos
				return nil, &cp
			}
			return nil, err
		}
		out = constExpr(to, in.name, v)
	} else {
		if out, err = c.convert(in, to, tc.Location, true); err != nil {
			return nil, err
		}
		out = c.applyTypmod(out, to, typmod)
	}
	// A cast is named after its type unless what it casts has a name of
	// its own (a column, a function, a subquery), as FigureColname does.
	name := in.name
	if weakColname(tc.Arg) {
		name = typeShortName(to)
		if e := elemOf[to]; e != 0 && to != OIDInt2Vector && to != OIDOidVector {
			name = typeShortName(e)
		}
	}
	ne := *out
	ne.name = name
	if to == in.oid && typmod == inMod {
		// A cast to the type the value has changes nothing: a column
		// stays the table's.
		ne.origin = in.origin
	} else {
		ne.origin = typmodOrigin(typmod)
	}
	return &ne, nil
}

// typmodOrigin is the origin of an expression with type modifier typmod
// (none for -1) that reads no table column.
func typmodOrigin(typmod int64) *pgtypes.Origin {
	if typmod < 0 {
		return nil
	}
	return &pgtypes.Origin{Typmod: int32(typmod)}
}

// weakColname reports whether FigureColnameInternal gives n a strength
// of at most 1 (a literal, a parameter, an operator, CASE ...), so that a
// cast of it is named after the type.
func weakColname(n *pg.Node) bool {
	switch x := n.Node.(type) {
	case *pg.Node_ColumnRef, *pg.Node_FuncCall, *pg.Node_AArrayExpr, *pg.Node_RowExpr, *pg.Node_CoalesceExpr,
		*pg.Node_MinMaxExpr, *pg.Node_SqlvalueFunction, *pg.Node_GroupingFunc, *pg.Node_XmlExpr, *pg.Node_XmlSerialize:
		return false
	case *pg.Node_AIndirection:
		ind := x.AIndirection.Indirection
		if len(ind) > 0 && ind[len(ind)-1].GetString_() != nil {
			return false
		}
		return weakColname(x.AIndirection.Arg)
	case *pg.Node_AExpr:
		return x.AExpr.Kind != pg.A_Expr_Kind_AEXPR_NULLIF
	case *pg.Node_TypeCast:
		return weakColname(x.TypeCast.Arg)
	case *pg.Node_CollateClause:
		return weakColname(x.CollateClause.Arg)
	case *pg.Node_CaseExpr:
		return x.CaseExpr.Defresult == nil || weakColname(x.CaseExpr.Defresult)
	case *pg.Node_SubLink:
		switch x.SubLink.SubLinkType {
		case pg.SubLinkType_EXISTS_SUBLINK, pg.SubLinkType_ARRAY_SUBLINK, pg.SubLinkType_EXPR_SUBLINK:
			return false
		}
	}
	return true
}

// applyTypmod enforces varchar(n)/char(n) lengths, numeric scale and
// interval fields and precision.
func (c *compiler) applyTypmod(e *Expr, to uint32, typmod int64) *Expr {
	if typmod < 0 {
		return e
	}
	switch to {
	case pgtypes.OIDVarchar, OIDBpchar:
		n := int(typmod - 4)
		in := e
		return &Expr{oid: to, name: e.name, desc: e.desc, isConst: false, eval: func(ec *evalCtx, row []any) (any, error) {
			v, err := in.eval(ec, row)
			if s, ok := v.(string); ok && len([]rune(s)) > n {
				return string([]rune(s)[:n]), err
			}
			if s, ok := v.(string); ok && to == OIDBpchar && len([]rune(s)) < n {
				return s + strings.Repeat(" ", n-len([]rune(s))), err
			}
			return v, err
		}}
	case pgtypes.OIDNumeric:
		precision, scale := int((typmod-4)>>16), int((typmod-4)&0xffff)
		in := e
		return &Expr{oid: to, name: e.name, desc: e.desc, eval: func(ec *evalCtx, row []any) (any, error) {
			v, err := in.eval(ec, row)
			if n, ok := v.(pgtypes.Numeric); ok && err == nil {
				return NumericTypmod(n, precision, scale)
			}
			return v, err
		}}
	case OIDInterval:
		in := e
		return &Expr{oid: to, name: e.name, desc: e.desc, eval: func(ec *evalCtx, row []any) (any, error) {
			v, err := in.eval(ec, row)
			if iv, ok := v.(pgtypes.Interval); ok && err == nil {
				return pgtypes.AdjustInterval(iv, int32(typmod))
			}
			return v, err
		}}
	}
	return e
}

// NumericTypmod makes n a NUMERIC(precision, scale) as PostgreSQL does:
// rounded half away from zero to scale fraction digits, then 22003 if its
// absolute value is not below 10^(precision-scale). NaN passes; an
// infinity never fits.
func NumericTypmod(n pgtypes.Numeric, precision, scale int) (pgtypes.Numeric, error) {
	overflow := func(detail string) error {
		e := sqlstate.Errorf(sqlstate.CodeNumericOutOfRange, "numeric field overflow")
		e.Detail = detail
		return e
	}
	switch n {
	case "NaN":
		return n, nil
	case "Infinity", "-Infinity":
		return "", overflow(fmt.Sprintf("A field with precision %d, scale %d cannot hold an infinite value.", precision, scale))
	}
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return "", sqlstate.Errorf(sqlstate.CodeInvalidTextRepresent, "invalid input syntax for type numeric: %q", string(n))
	}
	out := roundHalfAway(r, scale)
	r.SetString(string(out))
	d := precision - scale
	limit := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(d, -d))), nil))
	if d < 0 {
		limit.Inv(limit)
	}
	if r.Abs(r).Cmp(limit) >= 0 {
		bound := "1"
		if d != 0 {
			bound = fmt.Sprintf("10^%d", d)
		}
		return "", overflow(fmt.Sprintf("A field with precision %d, scale %d must round to an absolute value less than %s.", precision, scale, bound))
	}
	return out, nil
}

func (c *compiler) boolExpr(b *pg.BoolExpr, sc *scope) (*Expr, error) {
	var args []*Expr
	for _, a := range b.Args {
		e, err := c.expr(a, sc)
		if err != nil {
			return nil, err
		}
		e, err = c.boolArg(e, b.Location, map[pg.BoolExprType]string{pg.BoolExprType_AND_EXPR: "AND", pg.BoolExprType_OR_EXPR: "OR", pg.BoolExprType_NOT_EXPR: "NOT"}[b.Boolop])
		if err != nil {
			return nil, err
		}
		args = append(args, e)
	}
	switch b.Boolop {
	case pg.BoolExprType_NOT_EXPR:
		a := args[0]
		return &Expr{oid: pgtypes.OIDBool, name: "?column?", desc: "NOT " + a.desc, eval: func(ec *evalCtx, row []any) (any, error) {
			v, err := a.eval(ec, row)
			if err != nil || v == nil {
				return nil, err
			}
			return !v.(bool), nil
		}}, nil
	case pg.BoolExprType_AND_EXPR, pg.BoolExprType_OR_EXPR:
		and := b.Boolop == pg.BoolExprType_AND_EXPR
		var d []string
		for _, a := range args {
			d = append(d, a.desc)
		}
		op := " OR "
		if and {
			op = " AND "
		}
		return &Expr{oid: pgtypes.OIDBool, name: "?column?", desc: "(" + strings.Join(d, op) + ")", eval: func(ec *evalCtx, row []any) (any, error) {
			sawNull := false
			for _, a := range args {
				v, err := a.eval(ec, row)
				if err != nil {
					return nil, err
				}
				if v == nil {
					sawNull = true
					continue
				}
				if v.(bool) != and {
					return !and, nil
				}
			}
			if sawNull {
				return nil, nil
			}
			return and, nil
		}}, nil
	}
	return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "boolean operator %s is not supported", b.Boolop)
}

// boolArg checks an argument of AND/OR/NOT/WHERE is boolean.
func (c *compiler) boolArg(e *Expr, loc int32, what string) (*Expr, error) {
	if e.oid == pgtypes.OIDBool {
		return e, nil
	}
	if e.oid == pgtypes.OIDUnknown {
		return c.coerce(e, pgtypes.OIDBool, loc)
	}
	return nil, errAt(loc, codeDatatypeMismatch, "argument of %s must be type boolean, not type %s", what, typeName(e.oid))
}

func (c *compiler) nullTest(n *pg.NullTest, sc *scope) (*Expr, error) {
	a, err := c.expr(n.Arg, sc)
	if err != nil {
		return nil, err
	}
	isNull := n.Nulltesttype == pg.NullTestType_IS_NULL
	d := a.desc + " IS NULL"
	if !isNull {
		d = a.desc + " IS NOT NULL"
	}
	return &Expr{oid: pgtypes.OIDBool, name: "?column?", desc: d, eval: func(ec *evalCtx, row []any) (any, error) {
		v, err := a.eval(ec, row)
		if err != nil {
			return nil, err
		}
		// A row is NULL when all its fields are, and NOT NULL when none is.
		if r, ok := v.(Record); ok {
			all, none := true, true
			for _, f := range r.Vals {
				if f == nil {
					none = false
				} else {
					all = false
				}
			}
			if isNull {
				return all, nil
			}
			return none, nil
		}
		return (v == nil) == isNull, nil
	}}, nil
}

func (c *compiler) booleanTest(n *pg.BooleanTest, sc *scope) (*Expr, error) {
	a, err := c.expr(n.Arg, sc)
	if err != nil {
		return nil, err
	}
	if a, err = c.boolArg(a, -1, "IS TRUE"); err != nil {
		return nil, err
	}
	t := n.Booltesttype
	return &Expr{oid: pgtypes.OIDBool, name: "?column?", desc: a.desc + " " + strings.ReplaceAll(strings.TrimPrefix(t.String(), "IS_"), "_", " "), eval: func(ec *evalCtx, row []any) (any, error) {
		v, err := a.eval(ec, row)
		if err != nil {
			return nil, err
		}
		switch t {
		case pg.BoolTestType_IS_TRUE:
			return v == true, nil
		case pg.BoolTestType_IS_NOT_TRUE:
			return v != true, nil
		case pg.BoolTestType_IS_FALSE:
			return v == false, nil
		case pg.BoolTestType_IS_NOT_FALSE:
			return v != false, nil
		case pg.BoolTestType_IS_UNKNOWN:
			return v == nil, nil
		}
		return v != nil, nil
	}}, nil
}

func (c *compiler) sqlValueFunction(f *pg.SQLValueFunction) (*Expr, error) {
	switch f.Op {
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_USER, pg.SQLValueFunctionOp_SVFOP_USER, pg.SQLValueFunctionOp_SVFOP_SESSION_USER, pg.SQLValueFunctionOp_SVFOP_CURRENT_ROLE:
		name := strings.ToLower(strings.TrimPrefix(f.Op.String(), "SVFOP_"))
		return &Expr{oid: pgtypes.OIDName, name: name, desc: "CURRENT_USER", eval: func(ec *evalCtx, _ []any) (any, error) { return ec.env.User, nil }}, nil
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_CATALOG:
		return &Expr{oid: pgtypes.OIDName, name: "current_catalog", desc: "CURRENT_CATALOG", eval: func(ec *evalCtx, _ []any) (any, error) { return ec.env.Database, nil }}, nil
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_SCHEMA:
		return &Expr{oid: pgtypes.OIDName, name: "current_schema", desc: "CURRENT_SCHEMA", eval: func(ec *evalCtx, _ []any) (any, error) { return currentSchema(ec.env), nil }}, nil
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP, pg.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP_N:
		return &Expr{oid: pgtypes.OIDTimestamptz, name: "current_timestamp", desc: "CURRENT_TIMESTAMP", eval: func(ec *evalCtx, _ []any) (any, error) { return ec.env.Now.UTC(), nil }}, nil
	case pg.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP, pg.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP_N:
		return &Expr{oid: pgtypes.OIDTimestamp, name: "localtimestamp", desc: "LOCALTIMESTAMP", eval: func(ec *evalCtx, _ []any) (any, error) {
			return castTime(ec.env.Now, pgtypes.OIDTimestamptz, pgtypes.OIDTimestamp, styleOf(ec).Location()), nil
		}}, nil
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_DATE:
		return &Expr{oid: pgtypes.OIDDate, name: "current_date", desc: "CURRENT_DATE", eval: func(ec *evalCtx, _ []any) (any, error) {
			return currentDate(ec), nil
		}}, nil
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_TIME, pg.SQLValueFunctionOp_SVFOP_CURRENT_TIME_N, pg.SQLValueFunctionOp_SVFOP_LOCALTIME, pg.SQLValueFunctionOp_SVFOP_LOCALTIME_N:
		return &Expr{oid: OIDTime, name: strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(f.Op.String(), "SVFOP_"), "_N")), desc: "CURRENT_TIME", eval: func(ec *evalCtx, _ []any) (any, error) {
			return castTime(ec.env.Now, pgtypes.OIDTimestamptz, pgtypes.OIDTimestamp, styleOf(ec).Location()), nil
		}}, nil
	}
	return nil, errAt(f.Location, sqlstate.CodeFeatureNotSupported, "%s is not supported", strings.TrimPrefix(f.Op.String(), "SVFOP_"))
}
