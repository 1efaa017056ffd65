package pgeval

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// commonType is PostgreSQL's select_common_type: the type a CASE,
// COALESCE, ARRAY[] or UNION column resolves to.
func commonType(oids []uint32, what string, loc int32) (uint32, error) {
	cand := uint32(0)
	for _, o := range oids {
		if o == pgtypes.OIDUnknown {
			continue
		}
		if cand == 0 {
			cand = o
			continue
		}
		if o == cand {
			continue
		}
		switch {
		case isText(cand) && isText(o):
			cand = pgtypes.OIDText
		case implicitCast(cand, o) && !implicitCast(o, cand):
			cand = o
		case implicitCast(o, cand):
		default:
			return 0, errAt(loc, codeDatatypeMismatch, "%s types %s and %s cannot be matched", what, typeName(cand), typeName(o))
		}
	}
	if cand == 0 {
		return pgtypes.OIDText, nil
	}
	return cand, nil
}

func (c *compiler) unifyAll(es []*Expr, what string, loc int32) ([]*Expr, uint32, error) {
	var oids []uint32
	for _, e := range es {
		oids = append(oids, e.oid)
	}
	t, err := commonType(oids, what, loc)
	if err != nil {
		return nil, 0, err
	}
	out := make([]*Expr, len(es))
	for i, e := range es {
		if out[i], err = c.coerce(e, t, loc); err != nil {
			return nil, 0, err
		}
	}
	return out, t, nil
}

func (c *compiler) caseExpr(ce *pg.CaseExpr, sc *scope) (*Expr, error) {
	var arg *Expr
	var err error
	if ce.Arg != nil {
		if arg, err = c.expr(ce.Arg, sc); err != nil {
			return nil, err
		}
	}
	var conds, results []*Expr
	for _, w := range ce.Args {
		cw := w.GetCaseWhen()
		if cw == nil {
			continue
		}
		cond, err := c.expr(cw.Expr, sc)
		if err != nil {
			return nil, err
		}
		if arg != nil {
			if cond, err = c.binop("=", arg, cond, cw.Location); err != nil {
				return nil, err
			}
		} else if cond, err = c.boolArg(cond, cw.Location, "CASE/WHEN"); err != nil {
			return nil, err
		}
		res, err := c.expr(cw.Result, sc)
		if err != nil {
			return nil, err
		}
		conds = append(conds, cond)
		results = append(results, res)
	}
	def := constExpr(pgtypes.OIDUnknown, "?column?", nil)
	name := "case"
	if ce.Defresult != nil {
		if def, err = c.expr(ce.Defresult, sc); err != nil {
			return nil, err
		}
		// CASE is named after its ELSE when that has a name of its own.
		if !weakColname(ce.Defresult) {
			name = def.name
		}
	}
	all, t, err := c.unifyAll(append(results, def), "CASE", ce.Location)
	if err != nil {
		return nil, err
	}
	results, def = all[:len(results)], all[len(results)]
	return &Expr{oid: t, name: name, desc: "CASE ... END", origin: commonTypmod(all), eval: func(ec *evalCtx, row []any) (any, error) {
		for i, cond := range conds {
			v, err := cond.eval(ec, row)
			if err != nil {
				return nil, err
			}
			if v == true {
				return results[i].eval(ec, row)
			}
		}
		return def.eval(ec, row)
	}}, nil
}

func (c *compiler) exprs(nodes []*pg.Node, sc *scope) ([]*Expr, error) {
	var out []*Expr
	for _, n := range nodes {
		e, err := c.expr(n, sc)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func descs(es []*Expr) string {
	var d []string
	for _, e := range es {
		d = append(d, e.desc)
	}
	return strings.Join(d, ", ")
}

func (c *compiler) coalesce(ce *pg.CoalesceExpr, sc *scope) (*Expr, error) {
	args, err := c.exprs(ce.Args, sc)
	if err != nil {
		return nil, err
	}
	args, t, err := c.unifyAll(args, "COALESCE", ce.Location)
	if err != nil {
		return nil, err
	}
	return &Expr{oid: t, name: "coalesce", desc: "COALESCE(" + descs(args) + ")", origin: commonTypmod(args), eval: func(ec *evalCtx, row []any) (any, error) {
		for _, a := range args {
			v, err := a.eval(ec, row)
			if err != nil || v != nil {
				return v, err
			}
		}
		return nil, nil
	}}, nil
}

func (c *compiler) minMax(m *pg.MinMaxExpr, sc *scope) (*Expr, error) {
	args, err := c.exprs(m.Args, sc)
	if err != nil {
		return nil, err
	}
	name := "greatest"
	if m.Op == pg.MinMaxOp_IS_LEAST {
		name = "least"
	}
	args, t, err := c.unifyAll(args, strings.ToUpper(name), m.Location)
	if err != nil {
		return nil, err
	}
	greatest := name == "greatest"
	return &Expr{oid: t, name: name, desc: strings.ToUpper(name) + "(" + descs(args) + ")", origin: commonTypmod(args), eval: func(ec *evalCtx, row []any) (any, error) {
		var best any
		for _, a := range args {
			v, err := a.eval(ec, row)
			if err != nil {
				return nil, err
			}
			if v == nil {
				continue
			}
			if best == nil || (compareValues(v, best) > 0) == greatest && compareValues(v, best) != 0 {
				best = v
			}
		}
		return best, nil
	}}, nil
}

// arrayOfExprs builds ARRAY[items...].
func (c *compiler) arrayOfExprs(items []*Expr, loc int32) (*Expr, error) {
	items, t, err := c.unifyAll(items, "ARRAY", loc)
	if err != nil {
		return nil, err
	}
	at := arrayOf[t]
	if at == 0 {
		return nil, errAt(loc, codeUndefinedObject, "could not find array type for data type %s", typeName(t))
	}
	e := &Expr{oid: at, name: "array", desc: "ARRAY[" + descs(items) + "]", origin: commonTypmod(items), eval: func(ec *evalCtx, row []any) (any, error) {
		out := Array{Elem: t, Vals: make([]any, len(items))}
		for i, it := range items {
			v, err := it.eval(ec, row)
			if err != nil {
				return nil, err
			}
			out.Vals[i] = v
		}
		return out, nil
	}}
	allConst := true
	for _, it := range items {
		allConst = allConst && it.isConst
	}
	if allConst {
		v, err := e.eval(nil, nil)
		if err != nil {
			return nil, err
		}
		k := constExpr(at, "array", v)
		k.desc, k.origin = e.desc, e.origin
		return k, nil
	}
	return e, nil
}

func (c *compiler) arrayExpr(a *pg.A_ArrayExpr, sc *scope) (*Expr, error) {
	items, err := c.exprs(a.Elements, sc)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		if isArray(it.oid) {
			return nil, errAt(a.Location, sqlstate.CodeFeatureNotSupported, "multidimensional arrays are not supported")
		}
	}
	if len(items) == 0 {
		e := sqlstate.Errorf(codeIndeterminate, "cannot determine type of empty array")
		e.Position, e.Hint = pos(a.Location), "Explicitly cast to the desired type, for example ARRAY[]::integer[]."
		return nil, e
	}
	return c.arrayOfExprs(items, a.Location)
}

const codeIndeterminate = "42P18"

// indirection compiles subscripts (x[1], x[1:2]) and field selection
// ((x).field).
func (c *compiler) indirection(ind *pg.A_Indirection, sc *scope) (*Expr, error) {
	e, err := c.expr(ind.Arg, sc)
	if err != nil {
		return nil, err
	}
	for _, n := range ind.Indirection {
		switch x := n.Node.(type) {
		case *pg.Node_AIndices:
			if e, err = c.subscript(e, x.AIndices, sc); err != nil {
				return nil, err
			}
		case *pg.Node_String_:
			if e, err = c.field(e, x.String_.Sval); err != nil {
				return nil, err
			}
		case *pg.Node_AStar:
			// (x).* in a select list: keep the record.
		default:
			return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "this indirection is not supported")
		}
	}
	return e, nil
}

func (c *compiler) subscript(e *Expr, ix *pg.A_Indices, sc *scope) (*Expr, error) {
	var err error
	if e.oid == pgtypes.OIDUnknown {
		return nil, sqlstate.Errorf(codeDatatypeMismatch, "cannot subscript type unknown because it is not an array")
	}
	if !isArray(e.oid) {
		if e.oid == pgtypes.OIDJSONB {
			return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "jsonb subscripts are not supported")
		}
		return nil, sqlstate.Errorf(codeDatatypeMismatch, "cannot subscript type %s because it does not support subscripting", typeName(e.oid))
	}
	bound := func(n *pg.Node) (*Expr, error) {
		if n == nil {
			return nil, nil
		}
		b, err := c.expr(n, sc)
		if err != nil {
			return nil, err
		}
		if b.oid == pgtypes.OIDUnknown || isNumber(b.oid) {
			return c.convert(b, pgtypes.OIDInt4, -1, true)
		}
		return nil, sqlstate.Errorf(codeDatatypeMismatch, "array subscript must have type integer")
	}
	lo, err := bound(ix.Lidx)
	if err != nil {
		return nil, err
	}
	hi, err := bound(ix.Uidx)
	if err != nil {
		return nil, err
	}
	arr := e
	if !ix.IsSlice {
		elem := elemOf[e.oid]
		return &Expr{oid: elem, name: e.name, desc: "(" + e.desc + ")[" + hi.desc + "]", eval: func(ec *evalCtx, row []any) (any, error) {
			v, err := arr.eval(ec, row)
			if err != nil || v == nil {
				return nil, err
			}
			i, err := hi.eval(ec, row)
			if err != nil || i == nil {
				return nil, err
			}
			a := v.(Array)
			k := int(i.(int64)) - a.lower()
			if k < 0 || k >= len(a.Vals) {
				return nil, nil
			}
			return a.Vals[k], nil
		}}, nil
	}
	oid := e.oid
	if oid == OIDInt2Vector || oid == OIDOidVector {
		oid = arrayOf[elemOf[oid]]
	}
	return &Expr{oid: oid, name: e.name, desc: "(" + e.desc + ")[:]", eval: func(ec *evalCtx, row []any) (any, error) {
		v, err := arr.eval(ec, row)
		if err != nil || v == nil {
			return nil, err
		}
		a := v.(Array)
		from, to := a.lower(), a.lower()+len(a.Vals)-1
		if lo != nil {
			x, err := lo.eval(ec, row)
			if err != nil || x == nil {
				return nil, err
			}
			from = max(from, int(x.(int64)))
		}
		if hi != nil {
			x, err := hi.eval(ec, row)
			if err != nil || x == nil {
				return nil, err
			}
			to = min(to, int(x.(int64)))
		}
		out := Array{Elem: a.Elem, Vals: []any{}}
		for k := from; k <= to; k++ {
			out.Vals = append(out.Vals, a.Vals[k-a.lower()])
		}
		return out, nil
	}}, nil
}

// field selects a field of a record-typed expression. The fields are
// known at compile time when the expression says what it returns
// (srfCols, or a ROW()).
func (c *compiler) field(e *Expr, name string) (*Expr, error) {
	cols := e.srfCols
	if cols == nil && e.recCols != nil {
		cols = e.recCols
	}
	for i, col := range cols {
		if col.Name == name {
			k := i
			in := e
			return &Expr{oid: col.OID, name: name, desc: "(" + e.desc + ")." + quoteIdent(name), eval: func(ec *evalCtx, row []any) (any, error) {
				v, err := in.eval(ec, row)
				if err != nil || v == nil {
					return nil, err
				}
				r, ok := v.(Record)
				if !ok || k >= len(r.Vals) {
					return nil, nil
				}
				return r.Vals[k], nil
			}}, nil
		}
	}
	if e.oid != OIDRecord {
		return nil, sqlstate.Errorf(codeWrongObjectType, "column notation .%s applied to type %s, which is not a composite type", name, typeName(e.oid))
	}
	return nil, sqlstate.Errorf(sqlstate.CodeUndefinedColumn, "column \"%s\" not found in data type record", name)
}
