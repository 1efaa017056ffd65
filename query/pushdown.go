package query

import (
	"context"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/query/catalog"
	"github.com/cellardb/cellar/query/pgeval"
	"github.com/cellardb/cellar/query/pgtypes"
)

// Value predicates pushed to the tablet servers. A WHERE conjunct that
// compares a declared column with a constant (=, <>, <, <=, >, >=), tests
// it for NULL, or matches a TEXT column with LIKE 'prefix%' becomes a
// kv condition (model.Condition): the tablet server decodes the column's
// newest cell and drops the rows that fail, so they never cross the
// network. Such a conjunct is exact (the evaluator need not re-check it),
// so a LIMIT still reaches the scan. A comparison whose constant would
// need a lossy conversion to the column's type (bigint > 5.5) stays in
// the gateway.

// valueColumn returns the declared column a node names, if it is one
// that a condition can test (not the key, not a family's JSONB column).
func (r *tableRel) valueColumn(n *pg.Node) (catalog.Column, bool) {
	c := n.GetColumnRef()
	if c == nil {
		return catalog.Column{}, false
	}
	f := fieldNames(c)
	name := f[len(f)-1]
	for _, col := range r.codec.cols {
		if col.Name == name && !col.Key && col.Qualifier != "" {
			return col, true
		}
	}
	return catalog.Column{}, false
}

var condOps = map[string]model.CondOp{"=": model.CondEQ, "<>": model.CondNE, "!=": model.CondNE, "<": model.CondLT,
	"<=": model.CondLE, ">": model.CondGT, ">=": model.CondGE}

var flipped = map[model.CondOp]model.CondOp{model.CondLT: model.CondGT, model.CondLE: model.CondGE, model.CondGT: model.CondLT,
	model.CondGE: model.CondLE, model.CondEQ: model.CondEQ, model.CondNE: model.CondNE}

// condShape reads a conjunct as column op constant; ok is false if it is
// not one a condition can carry.
func (r *tableRel) condShape(n *pg.Node) (col catalog.Column, op model.CondOp, operand *pg.Node, ok bool) {
	if nt := n.GetNullTest(); nt != nil {
		col, ok := r.valueColumn(nt.Arg)
		if !ok || nt.Argisrow {
			return col, 0, nil, false
		}
		if nt.Nulltesttype == pg.NullTestType_IS_NULL {
			return col, model.CondIsNull, nil, true
		}
		return col, model.CondIsNotNull, nil, true
	}
	e := n.GetAExpr()
	if e == nil || len(e.Name) != 1 {
		return col, 0, nil, false
	}
	name := e.Name[0].GetString_().GetSval()
	switch e.Kind {
	case pg.A_Expr_Kind_AEXPR_OP:
		o, known := condOps[name]
		if !known {
			return col, 0, nil, false
		}
		if c, isCol := r.valueColumn(e.Lexpr); isCol && isConstant(e.Rexpr) {
			return c, o, e.Rexpr, true
		}
		if c, isCol := r.valueColumn(e.Rexpr); isCol && isConstant(e.Lexpr) {
			return c, flipped[o], e.Lexpr, true
		}
	case pg.A_Expr_Kind_AEXPR_LIKE:
		c, isCol := r.valueColumn(e.Lexpr)
		pat := e.Rexpr.GetAConst().GetSval()
		if name == "~~" && isCol && c.Type == model.TypeText && pat != nil && likePrefix(pat.Sval) != "" {
			return c, model.CondPrefix, e.Rexpr, true
		}
	}
	return col, 0, nil, false
}

// lossless reports whether a constant of type from compares with a column
// of type to exactly as its conversion to to.
func lossless(from, to uint32) bool {
	isInt := func(o uint32) bool { return o == pgtypes.OIDInt2 || o == pgtypes.OIDInt4 || o == pgtypes.OIDInt8 }
	isText := func(o uint32) bool { return o == pgtypes.OIDText || o == pgtypes.OIDVarchar }
	switch {
	case from == to, from == pgtypes.OIDUnknown:
		return true
	case isInt(from) && isInt(to), from == pgtypes.OIDFloat4 && to == pgtypes.OIDFloat8, isText(from) && isText(to):
		return true
	case isInt(from) && to == pgtypes.OIDNumeric:
		return true // numeric = integer compares as numeric
	}
	return false
}

// pushable reports, at plan time, whether a conjunct becomes a condition.
func (r *tableRel) pushable(n *pg.Node, env *pgeval.Env) bool {
	col, op, operand, ok := r.condShape(n)
	if !ok {
		return false
	}
	if op == model.CondIsNull || op == model.CondIsNotNull || op == model.CondPrefix {
		return true
	}
	e, err := r.term(operand, env)
	return err == nil && lossless(e.OID(), catalog.TypeOID(col.Type))
}

// conditions turns the pushable conjuncts into conditions. none is set
// if a constant is NULL: the comparison is never true, so no row passes.
func (r *tableRel) conditions(ctx context.Context, req pgeval.ScanRequest) (conds []model.Condition, none bool, err error) {
	for _, f := range req.Filters {
		n, ok := f.Node.(*pg.Node)
		if !ok || !r.pushable(n, req.Env) {
			continue
		}
		col, op, operand, _ := r.condShape(n)
		c := model.Condition{Family: col.Family, Qualifier: []byte(col.Qualifier), Type: col.Type, Op: op}
		switch op {
		case model.CondIsNull, model.CondIsNotNull:
		case model.CondPrefix:
			c.Operand = []byte(likePrefix(operand.GetAConst().GetSval().Sval))
		default:
			e, err := r.term(operand, req.Env)
			if err != nil {
				return nil, false, err
			}
			v, err := e.Eval(ctx, req.Env, nil, req.Args)
			if err != nil {
				return nil, false, err
			}
			if v == nil {
				return nil, true, nil
			}
			if v, err = pgeval.Cast(v, e.OID(), catalog.TypeOID(col.Type)); err != nil {
				return nil, false, err
			}
			if c.Operand, err = model.EncodeValue(col.Type, toModel(v)); err != nil {
				return nil, false, kvError(err, false)
			}
		}
		conds = append(conds, c)
	}
	return conds, false, nil
}
