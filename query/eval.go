package query

import (
	"context"
	"fmt"
	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
	"math"
	"math/big"
	"strings"
	"time"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// SELECT without FROM: a list of expressions evaluated once. The types
// are fixed at compile time, so Describe answers before any Execute.

type expr struct {
	oid  uint32
	name string // the column name PostgreSQL would give it
	eval func(env *evalEnv) (any, error)
}

type evalEnv struct {
	ctx  context.Context
	s    *Session
	args []any
}

type compiler struct {
	s          *Session
	params     []uint32
	firstParam int // position of the first parameter reference
}

func (s *Session) compileSelect(st *Statement, sel *pg.SelectStmt, paramOIDs []uint32) (*Statement, error) {
	if len(sel.FromClause) > 0 || sel.WhereClause != nil || len(sel.GroupClause) > 0 || sel.HavingClause != nil ||
		len(sel.ValuesLists) > 0 || sel.Op != pg.SetOperation_SETOP_NONE || len(sel.SortClause) > 0 ||
		sel.LimitCount != nil || sel.LimitOffset != nil || len(sel.DistinctClause) > 0 || sel.IntoClause != nil || sel.WithClause != nil {
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "SELECT over tables (FROM, WHERE, ORDER BY, LIMIT, ...) is not supported yet: cellar's SQL layer arrives with issue 6")
	}
	c := &compiler{s: s, params: append([]uint32(nil), paramOIDs...)}
	var exprs []*expr
	for _, t := range sel.TargetList {
		rt := t.GetResTarget()
		if rt == nil {
			return nil, sqlstate.Errorf(sqlstate.CodeSyntaxError, "unexpected select target")
		}
		e, err := c.expr(rt.Val, 0)
		if err != nil {
			return nil, err
		}
		if rt.Name != "" {
			e.name = rt.Name
		}
		if e.oid == pgtypes.OIDUnknown {
			e.oid = pgtypes.OIDText // an untyped literal in a result is text
		}
		exprs = append(exprs, e)
	}
	for i, p := range c.params {
		if p == 0 {
			c.params[i] = pgtypes.OIDText
		}
	}
	st.Params = c.params
	st.ParamPosition = c.firstParam
	for _, e := range exprs {
		st.Columns = append(st.Columns, pgtypes.Column{Name: e.name, OID: e.oid})
	}
	st.kind = "SELECT"
	st.run = func(ctx context.Context, s *Session, args []any) (*Result, error) {
		env := &evalEnv{ctx: ctx, s: s, args: args}
		row := make([]any, len(exprs))
		for i, e := range exprs {
			v, err := e.eval(env)
			if err != nil {
				return nil, err
			}
			row[i] = v
		}
		return &Result{Columns: st.Columns, Rows: [][]any{row}, Tag: "SELECT 1"}, nil
	}
	return st, nil
}

func constant(oid uint32, name string, v any) *expr {
	return &expr{oid: oid, name: name, eval: func(*evalEnv) (any, error) { return v, nil }}
}

// expr compiles an expression; want, if set, is the type the context
// expects, which an untyped parameter takes.
func (c *compiler) expr(n *pg.Node, want uint32) (*expr, error) {
	switch x := n.Node.(type) {
	case *pg.Node_AConst:
		a := x.AConst
		if a.Isnull {
			return constant(pgtypes.OIDUnknown, "?column?", nil), nil
		}
		switch v := a.Val.(type) {
		case *pg.A_Const_Ival:
			return constant(pgtypes.OIDInt4, "?column?", int64(v.Ival.Ival)), nil
		case *pg.A_Const_Fval:
			// Integers too large for int4 come as Fval too.
			if i, err := pgtypes.ParseText(pgtypes.OIDInt8, v.Fval.Fval); err == nil {
				return constant(pgtypes.OIDInt8, "?column?", i), nil
			}
			n, err := pgtypes.ParseNumeric(v.Fval.Fval)
			if err != nil {
				return nil, sqlstate.Errorf(sqlstate.CodeInvalidTextRepresent, "invalid number %q", v.Fval.Fval)
			}
			return constant(pgtypes.OIDNumeric, "?column?", n), nil
		case *pg.A_Const_Sval:
			return constant(pgtypes.OIDUnknown, "?column?", v.Sval.Sval), nil
		case *pg.A_Const_Boolval:
			return constant(pgtypes.OIDBool, "bool", v.Boolval.Boolval), nil
		case *pg.A_Const_Bsval:
			return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "bit strings are not supported")
		}
	case *pg.Node_ParamRef:
		i := int(x.ParamRef.Number) - 1
		if i < 0 || i >= 65535 {
			return nil, &sqlstate.Error{Code: sqlstate.CodeUndefinedParameter, Message: fmt.Sprintf("there is no parameter $%d", i+1), Position: int(x.ParamRef.Location) + 1}
		}
		for len(c.params) <= i {
			c.params = append(c.params, 0)
		}
		if c.firstParam == 0 {
			c.firstParam = int(x.ParamRef.Location) + 1
		}
		if c.params[i] == 0 && want != 0 && want != pgtypes.OIDUnknown {
			c.params[i] = want
		}
		oid := c.params[i]
		if oid == 0 {
			oid = pgtypes.OIDText
			c.params[i] = oid
		}
		return &expr{oid: oid, name: "?column?", eval: func(env *evalEnv) (any, error) { return env.args[i], nil }}, nil
	case *pg.Node_TypeCast:
		to, err := typeOf(x.TypeCast.TypeName)
		if err != nil {
			return nil, err
		}
		in, err := c.expr(x.TypeCast.Arg, to)
		if err != nil {
			return nil, err
		}
		name := in.name
		switch x.TypeCast.Arg.Node.(type) {
		case *pg.Node_AConst, *pg.Node_ParamRef:
			name = typeColumnName(to)
		}
		from := in.oid
		return &expr{oid: to, name: name, eval: func(env *evalEnv) (any, error) {
			v, err := in.eval(env)
			if err != nil || v == nil {
				return v, err
			}
			return cast(v, from, to)
		}}, nil
	case *pg.Node_AExpr:
		return c.operator(x.AExpr)
	case *pg.Node_FuncCall:
		return c.function(x.FuncCall)
	case *pg.Node_SqlvalueFunction:
		return c.sqlValueFunction(x.SqlvalueFunction)
	case *pg.Node_ColumnRef:
		var parts []string
		for _, f := range x.ColumnRef.Fields {
			if s := f.GetString_(); s != nil {
				parts = append(parts, s.Sval)
			} else {
				parts = append(parts, "*")
			}
		}
		return nil, &sqlstate.Error{Code: sqlstate.CodeUndefinedColumn, Message: fmt.Sprintf("column %q does not exist", strings.Join(parts, ".")), Position: int(x.ColumnRef.Location) + 1}
	}
	return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "this expression is not supported yet (%s)", strings.TrimPrefix(fmt.Sprintf("%T", n.Node), "*pg_query.Node_"))
}

func typeOf(t *pg.TypeName) (uint32, error) {
	var names []string
	for _, n := range t.Names {
		if s := n.GetString_(); s != nil && s.Sval != "pg_catalog" {
			names = append(names, s.Sval)
		}
	}
	name := strings.ToLower(strings.Join(names, "."))
	if len(t.ArrayBounds) > 0 {
		return 0, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "array types are not supported")
	}
	if oid, ok := pgtypes.TypeNames[name]; ok {
		return oid, nil
	}
	return 0, &sqlstate.Error{Code: sqlstate.CodeUndefinedObject, Message: fmt.Sprintf("type %q does not exist", name), Position: int(t.Location) + 1}
}

// typeColumnName is the column name PostgreSQL gives a cast literal.
func typeColumnName(oid uint32) string {
	switch oid {
	case pgtypes.OIDInt2:
		return "int2"
	case pgtypes.OIDInt4:
		return "int4"
	case pgtypes.OIDInt8:
		return "int8"
	case pgtypes.OIDFloat4:
		return "float4"
	case pgtypes.OIDFloat8:
		return "float8"
	case pgtypes.OIDBool:
		return "bool"
	case pgtypes.OIDVarchar:
		return "varchar"
	case pgtypes.OIDTimestamptz:
		return "timestamptz"
	}
	return pgtypes.TypeName(oid)
}

// cast converts a value between types through its text form, with
// PostgreSQL's rules for what a string may become.
func cast(v any, from, to uint32) (any, error) {
	if from == to {
		return v, nil
	}
	if b, ok := v.(bool); ok && isText(to) {
		return map[bool]string{true: "true", false: "false"}[b], nil
	}
	switch to {
	case pgtypes.OIDInt2, pgtypes.OIDInt4, pgtypes.OIDInt8:
		if f, ok := v.(float64); ok {
			v = int64(math.RoundToEven(f))
			from = pgtypes.OIDInt8
		}
	}
	return pgtypes.ParseText(to, pgtypes.FormatText(from, v))
}

func isInt(oid uint32) bool {
	return oid == pgtypes.OIDInt2 || oid == pgtypes.OIDInt4 || oid == pgtypes.OIDInt8
}
func isFloat(oid uint32) bool { return oid == pgtypes.OIDFloat4 || oid == pgtypes.OIDFloat8 }
func isNumber(oid uint32) bool {
	return isInt(oid) || isFloat(oid) || oid == pgtypes.OIDNumeric
}
func isText(oid uint32) bool {
	return oid == pgtypes.OIDText || oid == pgtypes.OIDVarchar || oid == pgtypes.OIDName || oid == pgtypes.OIDUnknown
}

func opName(names []*pg.Node) string {
	var parts []string
	for _, n := range names {
		if s := n.GetString_(); s != nil {
			parts = append(parts, s.Sval)
		}
	}
	return strings.Join(parts, ".")
}

func (c *compiler) operator(a *pg.A_Expr) (*expr, error) {
	if a.Kind != pg.A_Expr_Kind_AEXPR_OP {
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "this operator form is not supported yet")
	}
	op := opName(a.Name)
	pos := int(a.Location) + 1
	if a.Lexpr == nil { // prefix operator
		r, err := c.expr(a.Rexpr, 0)
		if err != nil {
			return nil, err
		}
		if op != "-" && op != "+" || !isNumber(r.oid) {
			return nil, &sqlstate.Error{Code: sqlstate.CodeUndefinedFunction, Message: fmt.Sprintf("operator does not exist: %s %s", op, pgtypes.TypeName(r.oid)), Position: pos}
		}
		return &expr{oid: r.oid, name: "?column?", eval: func(env *evalEnv) (any, error) {
			v, err := r.eval(env)
			if err != nil || v == nil || op == "+" {
				return v, err
			}
			return arith("-", r.oid, int64(0), v, r.oid)
		}}, nil
	}
	// Type the side that has a type first, so that an untyped parameter on
	// the other side takes it.
	var l, r *expr
	var err error
	if _, lParam := a.Lexpr.Node.(*pg.Node_ParamRef); lParam {
		if r, err = c.expr(a.Rexpr, 0); err != nil {
			return nil, err
		}
		if l, err = c.expr(a.Lexpr, hint(r.oid)); err != nil {
			return nil, err
		}
	} else {
		if l, err = c.expr(a.Lexpr, 0); err != nil {
			return nil, err
		}
		if r, err = c.expr(a.Rexpr, hint(l.oid)); err != nil {
			return nil, err
		}
	}
	lt, rt := l.oid, r.oid
	// An untyped literal takes the other side's type.
	if lt == pgtypes.OIDUnknown && rt != pgtypes.OIDUnknown {
		lt = rt
	}
	if rt == pgtypes.OIDUnknown && lt != pgtypes.OIDUnknown {
		rt = lt
	}
	both := func(v1, v2 any) bool { return v1 != nil && v2 != nil }
	conv := func(v any, from, to uint32) (any, error) {
		if from == pgtypes.OIDUnknown && to != pgtypes.OIDUnknown {
			return pgtypes.ParseText(to, v.(string))
		}
		return v, nil
	}
	binary := func(oid uint32, f func(a, b any) (any, error)) *expr {
		return &expr{oid: oid, name: "?column?", eval: func(env *evalEnv) (any, error) {
			x, err := l.eval(env)
			if err != nil {
				return nil, err
			}
			y, err := r.eval(env)
			if err != nil || !both(x, y) {
				return nil, err
			}
			if x, err = conv(x, l.oid, lt); err != nil {
				return nil, err
			}
			if y, err = conv(y, r.oid, rt); err != nil {
				return nil, err
			}
			return f(x, y)
		}}
	}
	switch op {
	case "+", "-", "*", "/", "%":
		if !isNumber(lt) || !isNumber(rt) {
			break
		}
		res := resultType(lt, rt)
		return binary(res, func(x, y any) (any, error) { return arith(op, lt, x, y, rt) }), nil
	case "||":
		if isText(lt) || isText(rt) {
			return binary(pgtypes.OIDText, func(x, y any) (any, error) {
				return pgtypes.FormatText(lt, x) + pgtypes.FormatText(rt, y), nil
			}), nil
		}
	case "=", "<>", "!=", "<", ">", "<=", ">=":
		comparable := (isNumber(lt) && isNumber(rt)) || (isText(lt) && isText(rt)) || lt == rt
		if !comparable {
			break
		}
		return binary(pgtypes.OIDBool, func(x, y any) (any, error) {
			c, err := compare(x, lt, y, rt)
			if err != nil {
				return nil, err
			}
			switch op {
			case "=":
				return c == 0, nil
			case "<>", "!=":
				return c != 0, nil
			case "<":
				return c < 0, nil
			case ">":
				return c > 0, nil
			case "<=":
				return c <= 0, nil
			}
			return c >= 0, nil
		}), nil
	}
	return nil, &sqlstate.Error{Code: sqlstate.CodeUndefinedFunction, Message: fmt.Sprintf("operator does not exist: %s %s %s", pgtypes.TypeName(lt), op, pgtypes.TypeName(rt)),
		Hint: "No operator matches the given name and argument types.", Position: pos}
}

func hint(oid uint32) uint32 {
	if oid == pgtypes.OIDUnknown {
		return 0
	}
	return oid
}

// resultType is the type of arithmetic on two numbers.
func resultType(a, b uint32) uint32 {
	switch {
	case a == pgtypes.OIDNumeric || b == pgtypes.OIDNumeric:
		if isFloat(a) || isFloat(b) {
			return pgtypes.OIDFloat8
		}
		return pgtypes.OIDNumeric
	case isFloat(a) || isFloat(b):
		return pgtypes.OIDFloat8
	case a == pgtypes.OIDInt8 || b == pgtypes.OIDInt8:
		return pgtypes.OIDInt8
	case a == pgtypes.OIDInt4 || b == pgtypes.OIDInt4:
		return pgtypes.OIDInt4
	}
	return pgtypes.OIDInt2
}

func toRat(v any) *big.Rat {
	switch x := v.(type) {
	case int64:
		return new(big.Rat).SetInt64(x)
	case float64:
		r, _ := new(big.Rat).SetString(fmt.Sprint(x))
		return r
	case pgtypes.Numeric:
		r, _ := new(big.Rat).SetString(string(x))
		return r
	}
	return new(big.Rat)
}

func numScale(v any) int {
	if n, ok := v.(pgtypes.Numeric); ok {
		if i := strings.IndexByte(string(n), '.'); i >= 0 {
			return len(n) - i - 1
		}
	}
	return 0
}

func arith(op string, lt uint32, x, y any, rt uint32) (any, error) {
	res := resultType(lt, rt)
	switch {
	case isInt(res):
		a, b := x.(int64), y.(int64)
		var v int64
		switch op {
		case "+":
			v = a + b
			if (v > a) != (b > 0) {
				return nil, rangeError(res)
			}
		case "-":
			v = a - b
			if (v < a) != (b > 0) {
				return nil, rangeError(res)
			}
		case "*":
			if a != 0 && b != 0 {
				v = a * b
				if v/b != a {
					return nil, rangeError(res)
				}
			}
		case "/", "%":
			if b == 0 {
				return nil, sqlstate.Errorf(sqlstate.CodeDivisionByZero, "division by zero")
			}
			if op == "/" {
				v = a / b
			} else {
				v = a % b
			}
		}
		if (res == pgtypes.OIDInt4 && (v > math.MaxInt32 || v < math.MinInt32)) || (res == pgtypes.OIDInt2 && (v > math.MaxInt16 || v < math.MinInt16)) {
			return nil, rangeError(res)
		}
		return v, nil
	case isFloat(res):
		a, b := toFloat(x), toFloat(y)
		switch op {
		case "+":
			return a + b, nil
		case "-":
			return a - b, nil
		case "*":
			return a * b, nil
		case "/", "%":
			if b == 0 {
				return nil, sqlstate.Errorf(sqlstate.CodeDivisionByZero, "division by zero")
			}
			if op == "/" {
				return a / b, nil
			}
			return math.Mod(a, b), nil
		}
	}
	a, b := toRat(x), toRat(y)
	scale := max(numScale(x), numScale(y))
	var r *big.Rat
	switch op {
	case "+":
		r = new(big.Rat).Add(a, b)
	case "-":
		r = new(big.Rat).Sub(a, b)
	case "*":
		r = new(big.Rat).Mul(a, b)
		scale = numScale(x) + numScale(y)
	case "/":
		if b.Sign() == 0 {
			return nil, sqlstate.Errorf(sqlstate.CodeDivisionByZero, "division by zero")
		}
		r = new(big.Rat).Quo(a, b)
		scale = max(scale, 16)
	default:
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "numeric %% is not supported")
	}
	return pgtypes.Numeric(r.FloatString(scale)), nil
}

func rangeError(oid uint32) error {
	return sqlstate.Errorf(sqlstate.CodeNumericOutOfRange, "%s out of range", map[uint32]string{pgtypes.OIDInt2: "smallint", pgtypes.OIDInt4: "integer", pgtypes.OIDInt8: "bigint"}[oid])
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	case pgtypes.Numeric:
		f, _ := toRat(x).Float64()
		return f
	}
	return 0
}

func compare(x any, lt uint32, y any, rt uint32) (int, error) {
	switch {
	case isNumber(lt) && isNumber(rt):
		if isInt(lt) && isInt(rt) {
			a, b := x.(int64), y.(int64)
			switch {
			case a < b:
				return -1, nil
			case a > b:
				return 1, nil
			}
			return 0, nil
		}
		return toRat(x).Cmp(toRat(y)), nil
	case isText(lt) && isText(rt):
		return strings.Compare(x.(string), y.(string)), nil
	}
	a, b := pgtypes.FormatText(lt, x), pgtypes.FormatText(rt, y)
	return strings.Compare(a, b), nil
}

func (c *compiler) function(f *pg.FuncCall) (*expr, error) {
	name := strings.ToLower(opName(f.Funcname))
	name = strings.TrimPrefix(name, "pg_catalog.")
	argc := len(f.Args)
	pos := int(f.Location) + 1
	arity := func(n int) error {
		if argc != n {
			return &sqlstate.Error{Code: sqlstate.CodeUndefinedFunction, Message: fmt.Sprintf("function %s with %d arguments does not exist", name, argc), Position: pos}
		}
		return nil
	}
	switch name {
	case "version":
		if err := arity(0); err != nil {
			return nil, err
		}
		return constant(pgtypes.OIDText, "version", "PostgreSQL "+ServerVersion+" (cellar) on x86_64-pc-linux-gnu, 64-bit"), nil
	case "current_database":
		if err := arity(0); err != nil {
			return nil, err
		}
		return constant(pgtypes.OIDName, name, c.s.opts.Database), nil
	case "current_schema":
		if err := arity(0); err != nil {
			return nil, err
		}
		return constant(pgtypes.OIDName, name, "public"), nil
	case "pg_backend_pid":
		if err := arity(0); err != nil {
			return nil, err
		}
		return constant(pgtypes.OIDInt4, name, int64(c.s.opts.BackendPID)), nil
	case "now", "transaction_timestamp", "statement_timestamp", "clock_timestamp":
		if err := arity(0); err != nil {
			return nil, err
		}
		return &expr{oid: pgtypes.OIDTimestamptz, name: name, eval: func(env *evalEnv) (any, error) {
			return env.s.opts.Clock().UTC().Truncate(1000), nil
		}}, nil
	case "pg_sleep":
		if err := arity(1); err != nil {
			return nil, err
		}
		arg, err := c.expr(f.Args[0], pgtypes.OIDFloat8)
		if err != nil {
			return nil, err
		}
		return &expr{oid: pgtypes.OIDVoid, name: name, eval: func(env *evalEnv) (any, error) {
			v, err := arg.eval(env)
			if err != nil || v == nil {
				return "", err
			}
			secs := toFloat(v)
			if arg.oid == pgtypes.OIDUnknown || isText(arg.oid) {
				f, err := pgtypes.ParseText(pgtypes.OIDFloat8, pgtypes.FormatText(arg.oid, v))
				if err != nil {
					return nil, err
				}
				secs = f.(float64)
			}
			t := time.NewTimer(time.Duration(secs * float64(time.Second)))
			defer t.Stop()
			select {
			case <-t.C:
				return "", nil
			case <-env.ctx.Done():
				return nil, canceled(env.ctx.Err())
			}
		}}, nil
	case "current_setting":
		if argc < 1 || argc > 2 {
			return nil, arity(1)
		}
		arg, err := c.expr(f.Args[0], pgtypes.OIDText)
		if err != nil {
			return nil, err
		}
		missingOK := false
		if argc == 2 {
			m, err := c.expr(f.Args[1], pgtypes.OIDBool)
			if err != nil {
				return nil, err
			}
			v, err := m.eval(&evalEnv{})
			if err == nil {
				missingOK, _ = v.(bool)
			}
		}
		return &expr{oid: pgtypes.OIDText, name: name, eval: func(env *evalEnv) (any, error) {
			v, err := arg.eval(env)
			if err != nil || v == nil {
				return nil, err
			}
			val, ok := env.s.Setting(pgtypes.FormatText(arg.oid, v))
			if !ok {
				if missingOK {
					return nil, nil
				}
				return nil, unknownSetting(pgtypes.FormatText(arg.oid, v))
			}
			return val, nil
		}}, nil
	}
	return nil, &sqlstate.Error{Code: sqlstate.CodeUndefinedFunction, Message: fmt.Sprintf("function %s does not exist", name), Position: pos,
		Hint: "cellar implements few functions until its SQL layer arrives (issue 6)."}
}

func (c *compiler) sqlValueFunction(f *pg.SQLValueFunction) (*expr, error) {
	switch f.Op {
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_USER, pg.SQLValueFunctionOp_SVFOP_USER, pg.SQLValueFunctionOp_SVFOP_SESSION_USER:
		name := strings.ToLower(strings.TrimPrefix(f.Op.String(), "SVFOP_"))
		return constant(pgtypes.OIDName, name, c.s.opts.User), nil
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_CATALOG:
		return constant(pgtypes.OIDName, "current_catalog", c.s.opts.Database), nil
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP:
		return &expr{oid: pgtypes.OIDTimestamptz, name: "current_timestamp", eval: func(env *evalEnv) (any, error) {
			return env.s.opts.Clock().UTC().Truncate(1000), nil
		}}, nil
	}
	return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "%s is not supported", strings.TrimPrefix(f.Op.String(), "SVFOP_"))
}
