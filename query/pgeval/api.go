package pgeval

import (
	"context"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// CompileExpr compiles a standalone expression over one row whose
// columns are scope (INSERT values, UPDATE SET, RETURNING). Subqueries
// in it may read relations through env.Catalog.
func CompileExpr(n *pg.Node, scope []pgtypes.Column, env *Env, paramOIDs []uint32) (e *Expr, err error) {
	return CompileExprTable(n, "", scope, env, paramOIDs)
}

// CompileExprTable is CompileExpr where the columns may also be
// qualified by table (t.col).
func CompileExprTable(n *pg.Node, table string, cols []pgtypes.Column, env *Env, paramOIDs []uint32) (e *Expr, err error) {
	defer func() {
		if r := recover(); r != nil {
			e, err = nil, sqlstate.Errorf(sqlstate.CodeInternal, "internal error compiling expression: %v", r)
		}
	}()
	c := &compiler{ctx: context.Background(), env: env, params: append([]uint32(nil), paramOIDs...)}
	sc := &scope{}
	for _, col := range cols {
		sc.cols = append(sc.cols, scopeCol{table: table, name: col.Name, oid: col.OID, origin: col.Origin})
	}
	if containsAgg(n) {
		return nil, sqlstate.Errorf(codeGroupingError, "aggregate functions are not allowed here")
	}
	out, err := c.expr(n, sc)
	if err != nil {
		return nil, err
	}
	if out.srf != nil {
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "set-returning functions are not allowed here")
	}
	cp := *out
	cp.params = c.finalParams()
	return &cp, nil
}

// CompileExprAs is CompileExpr converting the result to type to, as an
// assignment (INSERT, UPDATE) does: unknown literals and parameters take
// the type, and the other values are cast.
func CompileExprAs(n *pg.Node, cols []pgtypes.Column, to uint32, env *Env, paramOIDs []uint32) (e *Expr, err error) {
	defer func() {
		if r := recover(); r != nil {
			e, err = nil, sqlstate.Errorf(sqlstate.CodeInternal, "internal error compiling expression: %v", r)
		}
	}()
	c := &compiler{ctx: context.Background(), env: env, params: append([]uint32(nil), paramOIDs...)}
	sc := &scope{}
	for _, col := range cols {
		sc.cols = append(sc.cols, scopeCol{name: col.Name, oid: col.OID, origin: col.Origin})
	}
	if containsAgg(n) {
		return nil, sqlstate.Errorf(codeGroupingError, "aggregate functions are not allowed here")
	}
	out, err := c.expr(n, sc)
	if err != nil {
		return nil, err
	}
	if out.srf != nil {
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "set-returning functions are not allowed here")
	}
	if out, err = c.convert(out, to, -1, true); err != nil {
		return nil, err
	}
	cp := *out
	cp.params = c.finalParams()
	return &cp, nil
}

// Compare orders two non-NULL values of comparable types, as ORDER BY
// does: negative, zero or positive.
func Compare(a, b any) int { return compareValues(a, b) }

// CompareNullsLast is Compare with NULL sorting after every value (the
// default ascending order).
func CompareNullsLast(a, b any) int { return compareNullsLast(a, b) }

// TypeName is the name of a type as format_type prints it without a
// modifier, for every type this package knows.
func TypeName(oid uint32) string { return typeName(oid) }

// LookupType resolves a type name as a cast spells it (int4,
// "character varying", text[] ...).
func LookupType(name string) (uint32, bool) {
	oid, ok := typeNames[name]
	return oid, ok
}
