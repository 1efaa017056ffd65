package pgeval

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// compareValues orders two non-NULL values of comparable types.
func compareValues(a, b any) int {
	switch x := a.(type) {
	case int64:
		switch y := b.(type) {
		case int64:
			return cmpInt(x, y)
		case Reg:
			return cmpInt(x, int64(y.OID))
		case float64:
			return cmpFloat(float64(x), y)
		case pgtypes.Numeric:
			return cmpNumeric(pgtypes.Numeric(strconv.FormatInt(x, 10)), y)
		}
	case Reg:
		return compareValues(int64(x.OID), b)
	case float64:
		switch y := b.(type) {
		case float64:
			return cmpFloat(x, y)
		case int64, pgtypes.Numeric:
			return cmpFloat(x, toFloat(y))
		}
	case pgtypes.Numeric:
		switch y := b.(type) {
		case pgtypes.Numeric:
			return cmpNumeric(x, y)
		case int64:
			return cmpNumeric(x, pgtypes.Numeric(strconv.FormatInt(y, 10)))
		case float64:
			return cmpFloat(toFloat(x), y)
		}
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y)
		}
	case bool:
		if y, ok := b.(bool); ok {
			switch {
			case x == y:
				return 0
			case !x:
				return -1
			}
			return 1
		}
	case time.Time:
		if y, ok := b.(time.Time); ok {
			return x.Compare(y)
		}
	case pgtypes.Interval:
		if y, ok := b.(pgtypes.Interval); ok {
			return x.Cmp(y)
		}
	case []byte:
		if y, ok := b.([]byte); ok {
			return bytes.Compare(x, y)
		}
	case [16]byte:
		if y, ok := b.([16]byte); ok {
			return bytes.Compare(x[:], y[:])
		}
	case Array:
		if y, ok := b.(Array); ok {
			for i := 0; i < len(x.Vals) && i < len(y.Vals); i++ {
				if c := compareNullsLast(x.Vals[i], y.Vals[i]); c != 0 {
					return c
				}
			}
			return cmpInt(int64(len(x.Vals)), int64(len(y.Vals)))
		}
	case Record:
		if y, ok := b.(Record); ok {
			for i := 0; i < len(x.Vals) && i < len(y.Vals); i++ {
				if c := compareNullsLast(x.Vals[i], y.Vals[i]); c != 0 {
					return c
				}
			}
			return cmpInt(int64(len(x.Vals)), int64(len(y.Vals)))
		}
	}
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

// compareNullsLast orders values with NULL after everything, as a
// default ascending sort and array comparison do.
func compareNullsLast(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return compareValues(a, b)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cmpFloat orders NaN above everything and equal to itself, as
// PostgreSQL does.
func cmpFloat(a, b float64) int {
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cmpNumeric orders numerics as numeric_cmp does: -Infinity, the
// numbers, Infinity, then NaN (equal to itself).
func cmpNumeric(a, b pgtypes.Numeric) int {
	rank := func(n pgtypes.Numeric) int {
		switch n {
		case pgtypes.NumericNegInf:
			return 0
		case pgtypes.NumericPosInf:
			return 2
		case pgtypes.NumericNaN:
			return 3
		}
		return 1
	}
	if ra, rb := rank(a), rank(b); ra != 1 || rb != 1 {
		return cmpInt(int64(ra), int64(rb))
	}
	return toRat(a).Cmp(toRat(b))
}

// valuesEqual is = for two non-NULL values (DISTINCT, GROUP BY, IN).
func valuesEqual(a, b any) bool { return compareValues(a, b) == 0 }

func opName(names []*pg.Node) string {
	p := strs(names)
	if len(p) > 1 && p[0] == "pg_catalog" {
		p = p[1:]
	}
	return strings.Join(p, ".")
}

func noOperator(loc int32, op string, l, r uint32) error {
	var e error
	if l == 0 {
		e = errAt(loc, sqlstate.CodeUndefinedFunction, "operator does not exist: %s %s", op, typeName(r))
	} else {
		e = errAt(loc, sqlstate.CodeUndefinedFunction, "operator does not exist: %s %s %s", typeName(l), op, typeName(r))
	}
	e.(*sqlstate.Error).Hint = "No operator matches the given name and argument types. You might need to add explicit type casts."
	return e
}

// comparable reports whether values of types a and b can be compared,
// and the type both sides convert to (0: compare as they are).
func (c *compiler) unify(l, r *Expr, loc int32) (*Expr, *Expr, bool, error) {
	lo, ro := l.oid, r.oid
	var err error
	switch {
	case lo == pgtypes.OIDUnknown && ro == pgtypes.OIDUnknown:
		if l, err = c.coerce(l, pgtypes.OIDText, loc); err != nil {
			return nil, nil, false, err
		}
		r, err = c.coerce(r, pgtypes.OIDText, loc)
		return l, r, err == nil, err
	case lo == pgtypes.OIDUnknown:
		l, err = c.coerce(l, ro, loc)
		return l, r, err == nil, err
	case ro == pgtypes.OIDUnknown:
		r, err = c.coerce(r, lo, loc)
		return l, r, err == nil, err
	}
	ok := lo == ro ||
		(isNumber(lo) && isNumber(ro)) ||
		(isText(lo) && isText(ro)) ||
		((isInt(lo) || isOIDLike(lo)) && (isInt(ro) || isOIDLike(ro))) ||
		(isTime(lo) && isTime(ro)) ||
		(isArray(lo) && isArray(ro) && (elemOf[lo] == elemOf[ro] || implicitCast(elemOf[lo], elemOf[ro]) || implicitCast(elemOf[ro], elemOf[lo])))
	if lo == pgtypes.OIDJSON && ro == pgtypes.OIDJSON {
		ok = false
	}
	return l, r, ok, nil
}

func (c *compiler) aexpr(a *pg.A_Expr, sc *scope) (*Expr, error) {
	op := opName(a.Name)
	switch a.Kind {
	case pg.A_Expr_Kind_AEXPR_OP:
		if a.Lexpr == nil {
			r, err := c.expr(a.Rexpr, sc)
			if err != nil {
				return nil, err
			}
			return c.unary(op, r, a.Location)
		}
		l, err := c.expr(a.Lexpr, sc)
		if err != nil {
			return nil, err
		}
		r, err := c.expr(a.Rexpr, sc)
		if err != nil {
			return nil, err
		}
		return c.binop(op, l, r, a.Location)
	case pg.A_Expr_Kind_AEXPR_OP_ANY, pg.A_Expr_Kind_AEXPR_OP_ALL:
		l, err := c.expr(a.Lexpr, sc)
		if err != nil {
			return nil, err
		}
		r, err := c.expr(a.Rexpr, sc)
		if err != nil {
			return nil, err
		}
		return c.anyAll(op, l, r, a.Kind == pg.A_Expr_Kind_AEXPR_OP_ALL, a.Location)
	case pg.A_Expr_Kind_AEXPR_DISTINCT, pg.A_Expr_Kind_AEXPR_NOT_DISTINCT:
		l, err := c.expr(a.Lexpr, sc)
		if err != nil {
			return nil, err
		}
		r, err := c.expr(a.Rexpr, sc)
		if err != nil {
			return nil, err
		}
		l, r, ok, err := c.unify(l, r, a.Location)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, noOperator(a.Location, "=", l.oid, r.oid)
		}
		distinct := a.Kind == pg.A_Expr_Kind_AEXPR_DISTINCT
		d := " IS DISTINCT FROM "
		if !distinct {
			d = " IS NOT DISTINCT FROM "
		}
		return &Expr{oid: pgtypes.OIDBool, name: "?column?", desc: l.desc + d + r.desc, eval: func(ec *evalCtx, row []any) (any, error) {
			x, err := l.eval(ec, row)
			if err != nil {
				return nil, err
			}
			y, err := r.eval(ec, row)
			if err != nil {
				return nil, err
			}
			var same bool
			switch {
			case x == nil || y == nil:
				same = x == nil && y == nil
			default:
				same = compareValues(x, y) == 0
			}
			return same != distinct, nil
		}}, nil
	case pg.A_Expr_Kind_AEXPR_NULLIF:
		l, err := c.expr(a.Lexpr, sc)
		if err != nil {
			return nil, err
		}
		r, err := c.expr(a.Rexpr, sc)
		if err != nil {
			return nil, err
		}
		eq, err := c.binop("=", l, r, a.Location)
		if err != nil {
			return nil, err
		}
		l = c.settle(l)
		return &Expr{oid: l.oid, name: "nullif", desc: "NULLIF(" + l.desc + ", " + r.desc + ")", eval: func(ec *evalCtx, row []any) (any, error) {
			e, err := eq.eval(ec, row)
			if err != nil {
				return nil, err
			}
			if e == true {
				return nil, nil
			}
			return l.eval(ec, row)
		}}, nil
	case pg.A_Expr_Kind_AEXPR_IN:
		l, err := c.expr(a.Lexpr, sc)
		if err != nil {
			return nil, err
		}
		list := a.Rexpr.GetList()
		if list == nil {
			return nil, errAt(a.Location, sqlstate.CodeFeatureNotSupported, "IN needs a list")
		}
		var items []*Expr
		for _, it := range list.Items {
			e, err := c.expr(it, sc)
			if err != nil {
				return nil, err
			}
			items = append(items, e)
		}
		// The list takes the type common to it and the left side, as
		// transformAExprIn picks it: 1.5 IN (1, '2.5') is numeric.
		oids := []uint32{l.oid}
		for _, it := range items {
			oids = append(oids, it.oid)
		}
		if t, err := commonType(oids, "IN", a.Location); err == nil && l.oid != pgtypes.OIDUnknown {
			for i, it := range items {
				if items[i], err = c.coerce(it, t, a.Location); err != nil {
					return nil, err
				}
			}
		}
		arr, err := c.arrayOfExprs(items, a.Location)
		if err != nil {
			return nil, err
		}
		cmpOp := "="
		if op == "<>" {
			cmpOp = "<>"
		}
		e, err := c.anyAll(cmpOp, l, arr, op == "<>", a.Location)
		if err != nil {
			return nil, err
		}
		var d []string
		for _, it := range items {
			d = append(d, it.desc)
		}
		e.desc = l.desc + " IN (" + strings.Join(d, ", ") + ")"
		if op == "<>" {
			e.desc = l.desc + " NOT IN (" + strings.Join(d, ", ") + ")"
		}
		return e, nil
	case pg.A_Expr_Kind_AEXPR_LIKE, pg.A_Expr_Kind_AEXPR_ILIKE, pg.A_Expr_Kind_AEXPR_SIMILAR:
		l, err := c.expr(a.Lexpr, sc)
		if err != nil {
			return nil, err
		}
		var r, esc *Expr
		if f := a.Rexpr.GetFuncCall(); f != nil && a.Kind != pg.A_Expr_Kind_AEXPR_SIMILAR && opName(f.Funcname) == "like_escape" && len(f.Args) == 2 {
			if r, err = c.expr(f.Args[0], sc); err != nil {
				return nil, err
			}
			if esc, err = c.expr(f.Args[1], sc); err != nil {
				return nil, err
			}
		} else if r, err = c.expr(a.Rexpr, sc); err != nil {
			return nil, err
		}
		if a.Kind == pg.A_Expr_Kind_AEXPR_SIMILAR {
			// The grammar made the pattern similar_to_escape(pattern
			// [, escape]), a regular expression; op is ~ or !~.
			return c.binop(op, l, r, a.Location)
		}
		return c.like(op, l, r, esc, a.Location)
	case pg.A_Expr_Kind_AEXPR_BETWEEN, pg.A_Expr_Kind_AEXPR_NOT_BETWEEN, pg.A_Expr_Kind_AEXPR_BETWEEN_SYM, pg.A_Expr_Kind_AEXPR_NOT_BETWEEN_SYM:
		l, err := c.expr(a.Lexpr, sc)
		if err != nil {
			return nil, err
		}
		list := a.Rexpr.GetList()
		if list == nil || len(list.Items) != 2 {
			return nil, errAt(a.Location, codeSyntaxError, "BETWEEN needs two bounds")
		}
		lo, err := c.expr(list.Items[0], sc)
		if err != nil {
			return nil, err
		}
		hi, err := c.expr(list.Items[1], sc)
		if err != nil {
			return nil, err
		}
		ge, err := c.binop(">=", l, lo, a.Location)
		if err != nil {
			return nil, err
		}
		le, err := c.binop("<=", l, hi, a.Location)
		if err != nil {
			return nil, err
		}
		sym := a.Kind == pg.A_Expr_Kind_AEXPR_BETWEEN_SYM || a.Kind == pg.A_Expr_Kind_AEXPR_NOT_BETWEEN_SYM
		not := a.Kind == pg.A_Expr_Kind_AEXPR_NOT_BETWEEN || a.Kind == pg.A_Expr_Kind_AEXPR_NOT_BETWEEN_SYM
		var ge2, le2 *Expr
		if sym {
			if ge2, err = c.binop(">=", l, hi, a.Location); err != nil {
				return nil, err
			}
			if le2, err = c.binop("<=", l, lo, a.Location); err != nil {
				return nil, err
			}
		}
		d := l.desc + " BETWEEN " + lo.desc + " AND " + hi.desc
		if not {
			d = l.desc + " NOT BETWEEN " + lo.desc + " AND " + hi.desc
		}
		return &Expr{oid: pgtypes.OIDBool, name: "?column?", desc: d, eval: func(ec *evalCtx, row []any) (any, error) {
			v, err := and3(ec, row, ge, le)
			if err != nil {
				return nil, err
			}
			if sym && v != true {
				w, err := and3(ec, row, ge2, le2)
				if err != nil {
					return nil, err
				}
				if w == true || v == nil {
					v = w
				}
			}
			if not && v != nil {
				return !v.(bool), nil
			}
			return v, nil
		}}, nil
	}
	return nil, errAt(a.Location, sqlstate.CodeFeatureNotSupported, "operator kind %s is not supported", a.Kind)
}

func and3(ec *evalCtx, row []any, a, b *Expr) (any, error) {
	x, err := a.eval(ec, row)
	if err != nil {
		return nil, err
	}
	if x == false {
		return false, nil
	}
	y, err := b.eval(ec, row)
	if err != nil {
		return nil, err
	}
	if y == false {
		return false, nil
	}
	if x == nil || y == nil {
		return nil, nil
	}
	return true, nil
}

func (c *compiler) unary(op string, r *Expr, loc int32) (*Expr, error) {
	if r.oid == pgtypes.OIDUnknown {
		var err error
		if r, err = c.coerce(r, pgtypes.OIDNumeric, loc); err != nil {
			return nil, err
		}
	}
	switch op {
	case "+":
		if isNumber(r.oid) {
			return r, nil
		}
	case "-":
		if isNumber(r.oid) || r.oid == OIDInterval {
			oid := r.oid
			out := &Expr{oid: oid, name: "?column?", desc: "(- " + r.desc + ")", eval: func(ec *evalCtx, row []any) (any, error) {
				v, err := r.eval(ec, row)
				if err != nil || v == nil {
					return v, err
				}
				switch x := v.(type) {
				case int64:
					lo, _ := intRange(oid)
					if x == lo {
						return nil, rangeError(oid)
					}
					return -x, nil
				case float64:
					return -x, nil
				case pgtypes.Interval:
					return x.Neg()
				case pgtypes.Numeric:
					return negNumeric(x), nil
				}
				return v, nil
			}}
			if r.isConst {
				v, err := out.eval(nil, nil)
				if err != nil {
					return nil, err
				}
				k := constExpr(oid, "?column?", v)
				return k, nil
			}
			return out, nil
		}
	case "~":
		if isInt(r.oid) {
			return &Expr{oid: r.oid, name: "?column?", desc: "(~ " + r.desc + ")", eval: func(ec *evalCtx, row []any) (any, error) {
				v, err := r.eval(ec, row)
				if err != nil || v == nil {
					return v, err
				}
				return ^v.(int64), nil
			}}, nil
		}
	case "@":
		if isNumber(r.oid) {
			e, err := c.callBuiltin("abs", []*Expr{r}, loc)
			if err != nil {
				return nil, err
			}
			ne := *e
			ne.name = "?column?"
			return &ne, nil
		}
	}
	return nil, noOperator(loc, op, 0, r.oid)
}

// binop compiles l op r.
func (c *compiler) binop(op string, l, r *Expr, loc int32) (*Expr, error) {
	switch op {
	case "=", "<>", "!=", "<", ">", "<=", ">=":
		l2, r2, ok, err := c.unify(l, r, loc)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, noOperator(loc, op, l.oid, r.oid)
		}
		return cmpExpr(op, l2, r2), nil
	case "+", "-", "*", "/", "%":
		return c.arith(op, l, r, loc)
	case "||":
		return c.concatOp(l, r, loc)
	case "~", "~*", "!~", "!~*", "~~", "~~*", "!~~", "!~~*":
		if strings.Contains(op, "~~") {
			return c.like(map[string]string{"~~": "~~", "~~*": "~~*", "!~~": "!~~", "!~~*": "!~~*"}[op], l, r, nil, loc)
		}
		return c.regexOp(op, l, r, loc)
	case "->", "->>", "#>", "#>>":
		return c.jsonOp(op, l, r, loc)
	case "@>", "<@", "&&":
		return c.arrayOp(op, l, r, loc)
	case "^":
		e, err := c.callBuiltin("power", []*Expr{l, r}, loc)
		if err != nil {
			return nil, noOperator(loc, op, l.oid, r.oid)
		}
		ne := *e
		ne.name, ne.desc = "?column?", "("+l.desc+" ^ "+r.desc+")"
		return &ne, nil
	case "&", "|", "#", "<<", ">>":
		return c.bitwise(op, l, r, loc)
	}
	return nil, noOperator(loc, op, l.oid, r.oid)
}

func cmpExpr(op string, l, r *Expr) *Expr {
	test := cmpTest(op)
	if op == "!=" {
		op = "<>"
	}
	return &Expr{oid: pgtypes.OIDBool, name: "?column?", desc: "(" + l.desc + " " + op + " " + r.desc + ")", eval: func(ec *evalCtx, row []any) (any, error) {
		x, err := l.eval(ec, row)
		if err != nil || x == nil {
			return nil, err
		}
		y, err := r.eval(ec, row)
		if err != nil || y == nil {
			return nil, err
		}
		return test(compareValues(x, y)), nil
	}}
}

func cmpTest(op string) func(int) bool {
	switch op {
	case "=":
		return func(c int) bool { return c == 0 }
	case "<>", "!=":
		return func(c int) bool { return c != 0 }
	case "<":
		return func(c int) bool { return c < 0 }
	case ">":
		return func(c int) bool { return c > 0 }
	case "<=":
		return func(c int) bool { return c <= 0 }
	}
	return func(c int) bool { return c >= 0 }
}

// arithType is the result type of arithmetic on two numbers.
func arithType(a, b uint32) uint32 {
	switch {
	case isFloat(a) || isFloat(b):
		if a == pgtypes.OIDFloat4 && b == pgtypes.OIDFloat4 {
			return pgtypes.OIDFloat4
		}
		return pgtypes.OIDFloat8
	case a == pgtypes.OIDNumeric || b == pgtypes.OIDNumeric:
		return pgtypes.OIDNumeric
	case a == pgtypes.OIDInt8 || b == pgtypes.OIDInt8:
		return pgtypes.OIDInt8
	case a == pgtypes.OIDInt4 || b == pgtypes.OIDInt4:
		return pgtypes.OIDInt4
	}
	return pgtypes.OIDInt2
}

func (c *compiler) arith(op string, l, r *Expr, loc int32) (*Expr, error) {
	var err error
	if l.oid == pgtypes.OIDUnknown && r.oid == pgtypes.OIDUnknown {
		return nil, errAt(loc, sqlstate.CodeUndefinedFunction, "operator is not unique: unknown %s unknown", op)
	}
	if l.oid == pgtypes.OIDUnknown || r.oid == pgtypes.OIDUnknown {
		known, unknownLeft := r.oid, true
		if r.oid == pgtypes.OIDUnknown {
			known, unknownLeft = l.oid, false
		}
		to, ambiguous := unknownOperand(op, known, unknownLeft)
		if ambiguous {
			ls, rs := typeName(l.oid), typeName(r.oid)
			e := errAt(loc, codeAmbiguousFunction, "operator is not unique: %s %s %s", ls, op, rs)
			e.(*sqlstate.Error).Hint = "Could not choose a best candidate operator. You might need to add explicit type casts."
			return nil, e
		}
		if unknownLeft {
			l, err = c.coerce(l, to, loc)
		} else {
			r, err = c.coerce(r, to, loc)
		}
		if err != nil {
			return nil, err
		}
	}
	bin := func(oid uint32, f func(x, y any) (any, error)) *Expr {
		return binCtx(oid, op, l, r, func(_ *evalCtx, x, y any) (any, error) { return f(x, y) })
	}
	switch {
	case isNumber(l.oid) && isNumber(r.oid):
		res := arithType(l.oid, r.oid)
		return bin(res, func(x, y any) (any, error) { return arithValues(op, res, x, y) }), nil
	case l.oid == pgtypes.OIDDate && isInt(r.oid) && (op == "+" || op == "-"):
		return bin(pgtypes.OIDDate, func(x, y any) (any, error) {
			d := y.(int64)
			if op == "-" {
				d = -d
			}
			return x.(time.Time).AddDate(0, 0, int(d)), nil
		}), nil
	case isInt(l.oid) && r.oid == pgtypes.OIDDate && op == "+":
		return bin(pgtypes.OIDDate, func(x, y any) (any, error) { return y.(time.Time).AddDate(0, 0, int(x.(int64))), nil }), nil
	case l.oid == pgtypes.OIDDate && r.oid == pgtypes.OIDDate && op == "-":
		return bin(pgtypes.OIDInt4, func(x, y any) (any, error) {
			a, b := x.(time.Time), y.(time.Time)
			if pgtypes.IsInfinite(a) != 0 || pgtypes.IsInfinite(b) != 0 {
				return nil, sqlstate.Errorf(codeDatetimeOverflow, "cannot subtract infinite dates")
			}
			return int64(julianDay(a) - julianDay(b)), nil
		}), nil
	}
	if e, ok := c.intervalArith(op, l, r, bin); ok {
		return e, nil
	}
	return nil, noOperator(loc, op, l.oid, r.oid)
}

// unknownOperand is the type an unknown literal takes next to an operand
// of type known, as PostgreSQL's operator resolution picks it: the same
// type where that operator exists (timestamp - timestamp), else the one
// candidate (timestamp + interval, interval * float8). ambiguous is
// PostgreSQL's "operator is not unique" (date + unknown).
func unknownOperand(op string, known uint32, unknownLeft bool) (to uint32, ambiguous bool) {
	switch {
	case op == "+" && (known == pgtypes.OIDTimestamp || known == pgtypes.OIDTimestamptz || known == OIDTime):
		return OIDInterval, false
	case op == "+" && known == pgtypes.OIDDate:
		return 0, true
	case (op == "*" || op == "/" && !unknownLeft) && known == OIDInterval:
		return pgtypes.OIDFloat8, false
	}
	return known, false
}

// intervalArith compiles the operators on dates, times, timestamps and
// intervals other than date ± integer.
func (c *compiler) intervalArith(op string, l, r *Expr, bin func(uint32, func(x, y any) (any, error)) *Expr) (*Expr, bool) {
	zone := func(oid uint32) func(ec *evalCtx) *time.Location {
		return func(ec *evalCtx) *time.Location {
			if oid == pgtypes.OIDTimestamptz {
				return styleOf(ec).Location()
			}
			return nil
		}
	}
	plusMinus := op == "+" || op == "-"
	switch {
	case isTime(l.oid) && r.oid == OIDInterval && plusMinus, l.oid == OIDInterval && isTime(r.oid) && op == "+":
		ts := l
		if l.oid == OIDInterval {
			ts = r
		}
		oid := ts.oid
		if oid == pgtypes.OIDDate {
			oid = pgtypes.OIDTimestamp
		}
		loc := zone(oid)
		return binCtx(oid, op, l, r, func(ec *evalCtx, x, y any) (any, error) {
			t, d := x, y
			if ts != l {
				t, d = y, x
			}
			span := d.(pgtypes.Interval)
			if op == "-" {
				// timestamp_mi_interval negates each field unchecked.
				span = pgtypes.Interval{Months: -span.Months, Days: -span.Days, Micros: -span.Micros}
			}
			return addInterval(t.(time.Time), span, loc(ec))
		}), true
	case isTime(l.oid) && isTime(r.oid) && op == "-":
		// Both sides as the wider type: timestamptz over timestamp over
		// date.
		to := max(timeRank(l.oid), timeRank(r.oid))
		oid := []uint32{pgtypes.OIDDate, pgtypes.OIDTimestamp, pgtypes.OIDTimestamptz}[to]
		lo, ro := l.oid, r.oid
		return binCtx(OIDInterval, op, l, r, func(ec *evalCtx, x, y any) (any, error) {
			loc := styleOf(ec).Location()
			a := castTime(x.(time.Time), lo, oid, loc)
			b := castTime(y.(time.Time), ro, oid, loc)
			return subTimestamps(a, b)
		}), true
	case l.oid == OIDTime && r.oid == OIDInterval && plusMinus:
		return bin(OIDTime, func(x, y any) (any, error) {
			return addTimeInterval(x.(time.Time), y.(pgtypes.Interval), op == "-"), nil
		}), true
	case l.oid == OIDInterval && r.oid == OIDTime && op == "+":
		return bin(OIDTime, func(x, y any) (any, error) {
			return addTimeInterval(y.(time.Time), x.(pgtypes.Interval), false), nil
		}), true
	case l.oid == OIDTime && r.oid == OIDTime && op == "-":
		return bin(OIDInterval, func(x, y any) (any, error) {
			return pgtypes.Interval{Micros: pgtypes.TimeOfDayMicros(x.(time.Time)) - pgtypes.TimeOfDayMicros(y.(time.Time))}, nil
		}), true
	case l.oid == OIDInterval && r.oid == OIDInterval && plusMinus:
		return bin(OIDInterval, func(x, y any) (any, error) {
			if op == "-" {
				return x.(pgtypes.Interval).Sub(y.(pgtypes.Interval))
			}
			return x.(pgtypes.Interval).Add(y.(pgtypes.Interval))
		}), true
	case l.oid == OIDInterval && isNumber(r.oid) && (op == "*" || op == "/"):
		return bin(OIDInterval, func(x, y any) (any, error) {
			return scaleInterval(x.(pgtypes.Interval), toFloat(y), op == "/")
		}), true
	case isNumber(l.oid) && r.oid == OIDInterval && op == "*":
		return bin(OIDInterval, func(x, y any) (any, error) {
			return scaleInterval(y.(pgtypes.Interval), toFloat(x), false)
		}), true
	}
	return nil, false
}

// timeRank orders date, timestamp and timestamptz by which converts to
// which implicitly.
func timeRank(oid uint32) int {
	switch oid {
	case pgtypes.OIDTimestamp:
		return 1
	case pgtypes.OIDTimestamptz:
		return 2
	}
	return 0
}

// binCtx is a binary operator whose function needs the evaluation
// context (the session's time zone); NULL in, NULL out.
func binCtx(oid uint32, op string, l, r *Expr, f func(ec *evalCtx, x, y any) (any, error)) *Expr {
	return &Expr{oid: oid, name: "?column?", desc: "(" + l.desc + " " + op + " " + r.desc + ")", eval: func(ec *evalCtx, row []any) (any, error) {
		x, err := l.eval(ec, row)
		if err != nil || x == nil {
			return nil, err
		}
		y, err := r.eval(ec, row)
		if err != nil || y == nil {
			return nil, err
		}
		return f(ec, x, y)
	}}
}

// arithValues does + - * / % on numbers, in the result type res.
func arithValues(op string, res uint32, x, y any) (any, error) {
	switch {
	case isInt(res):
		a, b := x.(int64), y.(int64)
		var v int64
		switch op {
		case "+":
			v = a + b
			if (b > 0 && v < a) || (b < 0 && v > a) {
				return nil, rangeError(res)
			}
		case "-":
			v = a - b
			if (b > 0 && v > a) || (b < 0 && v < a) {
				return nil, rangeError(res)
			}
		case "*":
			if a != 0 && b != 0 {
				v = a * b
				if v/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
					return nil, rangeError(res)
				}
			}
		case "/", "%":
			if b == 0 {
				return nil, sqlstate.Errorf(sqlstate.CodeDivisionByZero, "division by zero")
			}
			if b == -1 {
				if op == "%" {
					return int64(0), nil
				}
				if a == math.MinInt64 {
					return nil, rangeError(res)
				}
				v = -a
			} else if op == "/" {
				v = a / b
			} else {
				v = a % b
			}
		}
		lo, hi := intRange(res)
		if v < lo || v > hi {
			return nil, rangeError(res)
		}
		return v, nil
	case isFloat(res):
		a, b := toFloat(x), toFloat(y)
		var v float64
		switch op {
		case "+":
			v = a + b
		case "-":
			v = a - b
		case "*":
			v = a * b
		case "/", "%":
			if b == 0 {
				return nil, sqlstate.Errorf(sqlstate.CodeDivisionByZero, "division by zero")
			}
			if op == "/" {
				v = a / b
			} else {
				v = math.Mod(a, b)
			}
		}
		if math.IsInf(v, 0) && !math.IsInf(a, 0) && !math.IsInf(b, 0) {
			return nil, sqlstate.Errorf(sqlstate.CodeNumericOutOfRange, "value out of range: overflow")
		}
		if res == pgtypes.OIDFloat4 {
			v = float64(float32(v))
		}
		return v, nil
	}
	if nx, _ := x.(pgtypes.Numeric); nx.IsSpecial() {
		return specialArith(op, nx, asNumeric(y))
	}
	if ny, _ := y.(pgtypes.Numeric); ny.IsSpecial() {
		return specialArith(op, asNumeric(x), ny)
	}
	a, b := toRat(x), toRat(y)
	sa, sb := numScale(x), numScale(y)
	switch op {
	case "+":
		return roundHalfAway(new(big.Rat).Add(a, b), max(sa, sb)), nil
	case "-":
		return roundHalfAway(new(big.Rat).Sub(a, b), max(sa, sb)), nil
	case "*":
		return roundHalfAway(new(big.Rat).Mul(a, b), sa+sb), nil
	case "/":
		if b.Sign() == 0 {
			return nil, sqlstate.Errorf(sqlstate.CodeDivisionByZero, "division by zero")
		}
		return roundHalfAway(new(big.Rat).Quo(a, b), divScale(a, b, sa, sb)), nil
	case "%":
		if b.Sign() == 0 {
			return nil, sqlstate.Errorf(sqlstate.CodeDivisionByZero, "division by zero")
		}
		q := new(big.Rat).Quo(a, b)
		qi := new(big.Int).Quo(q.Num(), q.Denom())
		m := new(big.Rat).Sub(a, new(big.Rat).Mul(b, new(big.Rat).SetInt(qi)))
		return roundHalfAway(m, max(sa, sb)), nil
	}
	return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "numeric %s is not supported", op)
}

// asNumeric is an integer or numeric value as a numeric.
func asNumeric(v any) pgtypes.Numeric {
	if i, ok := v.(int64); ok {
		return pgtypes.Numeric(strconv.FormatInt(i, 10))
	}
	n, _ := v.(pgtypes.Numeric)
	return n
}

// numSign is the sign of a numeric other than NaN, infinities included.
func numSign(n pgtypes.Numeric) int {
	if i := n.Inf(); i != 0 {
		return i
	}
	return toRat(n).Sign()
}

// negNumeric is -n.
func negNumeric(n pgtypes.Numeric) pgtypes.Numeric {
	switch {
	case n == pgtypes.NumericNaN || numSign(n) == 0:
		return n
	case strings.HasPrefix(string(n), "-"):
		return n[1:]
	}
	return "-" + n
}

// specialArith is + - * / % with NaN or an infinity on a side, as
// numeric_add, numeric_sub, numeric_mul, numeric_div and numeric_mod
// answer: NaN wins, Infinity - Infinity and Infinity * 0 are NaN, a
// number over an infinity is 0, and an infinity over 0 still fails.
func specialArith(op string, a, b pgtypes.Numeric) (any, error) {
	if a == pgtypes.NumericNaN || b == pgtypes.NumericNaN {
		return pgtypes.NumericNaN, nil
	}
	ia, ib := a.Inf(), b.Inf()
	inf := func(sign int) pgtypes.Numeric {
		switch sign {
		case 1:
			return pgtypes.NumericPosInf
		case -1:
			return pgtypes.NumericNegInf
		}
		return pgtypes.NumericNaN
	}
	divZero := sqlstate.Errorf(sqlstate.CodeDivisionByZero, "division by zero")
	switch op {
	case "+":
		switch {
		case ia != 0 && ib != 0 && ia != ib:
			return pgtypes.NumericNaN, nil
		case ia != 0:
			return a, nil
		}
		return b, nil
	case "-":
		switch {
		case ia != 0 && ia == ib:
			return pgtypes.NumericNaN, nil
		case ia != 0:
			return a, nil
		}
		return negNumeric(b), nil
	case "*":
		return inf(numSign(a) * numSign(b)), nil
	case "/":
		if ia == 0 {
			return pgtypes.Numeric("0"), nil
		}
		if ib != 0 {
			return pgtypes.NumericNaN, nil
		}
		if numSign(b) == 0 {
			return nil, divZero
		}
		return inf(ia * numSign(b)), nil
	case "%":
		if ia == 0 {
			return a, nil
		}
		if numSign(b) == 0 {
			return nil, divZero
		}
		return pgtypes.NumericNaN, nil
	}
	return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "numeric %s is not supported", op)
}

// divScale is PostgreSQL's select_div_scale: at least 16 significant
// digits, and no fewer fraction digits than either input.
func divScale(a, b *big.Rat, sa, sb int) int {
	w := func(r *big.Rat) (int, int) {
		f, _ := new(big.Rat).Abs(r).Float64()
		if f == 0 {
			return 0, 0
		}
		// weight in base-10000 digits and the first base-10000 digit.
		wt := int(math.Floor(math.Log10(f) / 4))
		first := int(f / math.Pow(10000, float64(wt)))
		return wt, first
	}
	w1, f1 := w(a)
	w2, f2 := w(b)
	qw := w1 - w2
	if f1 <= f2 {
		qw--
	}
	rs := 16 - qw*4
	rs = max(rs, sa, sb, 0)
	return min(rs, 1000)
}

// roundHalfAway rounds to scale fraction digits, half away from zero;
// numeric has no negative zero.
func roundHalfAway(r *big.Rat, scale int) pgtypes.Numeric {
	s := r.FloatString(scale)
	if s[0] == '-' && strings.Trim(s[1:], "0.") == "" {
		s = s[1:]
	}
	return pgtypes.Numeric(s)
}

func (c *compiler) concatOp(l, r *Expr, loc int32) (*Expr, error) {
	var err error
	if isArray(l.oid) || isArray(r.oid) {
		return c.arrayConcat(l, r, loc)
	}
	if l.oid == pgtypes.OIDJSONB && (r.oid == pgtypes.OIDJSONB || r.oid == pgtypes.OIDUnknown) {
		if r, err = c.coerce(r, pgtypes.OIDJSONB, loc); err != nil {
			return nil, err
		}
		return &Expr{oid: pgtypes.OIDJSONB, name: "?column?", desc: "(" + l.desc + " || " + r.desc + ")", eval: func(ec *evalCtx, row []any) (any, error) {
			x, err := l.eval(ec, row)
			if err != nil || x == nil {
				return nil, err
			}
			y, err := r.eval(ec, row)
			if err != nil || y == nil {
				return nil, err
			}
			return jsonbConcat(x.(string), y.(string))
		}}, nil
	}
	if !isText(l.oid) && !isText(r.oid) && l.oid != pgtypes.OIDUnknown && r.oid != pgtypes.OIDUnknown {
		return nil, noOperator(loc, "||", l.oid, r.oid)
	}
	lo, ro := l.oid, r.oid
	return &Expr{oid: pgtypes.OIDText, name: "?column?", desc: "(" + l.desc + " || " + r.desc + ")", eval: func(ec *evalCtx, row []any) (any, error) {
		x, err := l.eval(ec, row)
		if err != nil || x == nil {
			return nil, err
		}
		y, err := r.eval(ec, row)
		if err != nil || y == nil {
			return nil, err
		}
		st := styleOf(ec)
		return textOfStyle(lo, x, st) + textOfStyle(ro, y, st), nil
	}}, nil
}

// textOf is a value's text form (for || and text functions).
func textOf(oid uint32, v any) string { return textOfStyle(oid, v, pgtypes.DefaultStyle) }

// textOfStyle is textOf under the session's DateStyle, TimeZone and
// IntervalStyle.
func textOfStyle(oid uint32, v any, st pgtypes.Style) string {
	if s, ok := v.(string); ok {
		if oid == OIDBpchar {
			return strings.TrimRight(s, " ")
		}
		return s
	}
	if b, ok := v.(bool); ok {
		if b {
			return "true"
		}
		return "false"
	}
	return FormatTextStyle(oid, v, st)
}

func (c *compiler) arrayConcat(l, r *Expr, loc int32) (*Expr, error) {
	var err error
	var oid uint32
	switch {
	case isArray(l.oid) && isArray(r.oid):
		oid = l.oid
	case isArray(l.oid):
		if r, err = c.coerce(r, elemOf[l.oid], loc); err != nil {
			return nil, err
		}
		oid = l.oid
	case isArray(r.oid) && r.oid != OIDInt2Vector && r.oid != OIDOidVector && l.oid == pgtypes.OIDUnknown && r.isConst:
		if l, err = c.coerce(l, elemOf[r.oid], loc); err != nil {
			return nil, err
		}
		oid = r.oid
	default:
		if l, err = c.coerce(l, elemOf[r.oid], loc); err != nil {
			return nil, err
		}
		oid = r.oid
	}
	if r.oid == pgtypes.OIDUnknown {
		if r, err = c.coerce(r, oid, loc); err != nil {
			return nil, err
		}
	}
	if l.oid == pgtypes.OIDUnknown {
		if l, err = c.coerce(l, oid, loc); err != nil {
			return nil, err
		}
	}
	elem := elemOf[oid]
	return &Expr{oid: oid, name: "?column?", desc: "(" + l.desc + " || " + r.desc + ")", eval: func(ec *evalCtx, row []any) (any, error) {
		x, err := l.eval(ec, row)
		if err != nil {
			return nil, err
		}
		y, err := r.eval(ec, row)
		if err != nil {
			return nil, err
		}
		out := Array{Elem: elem, Vals: []any{}}
		for _, v := range []any{x, y} {
			switch a := v.(type) {
			case Array:
				out.Vals = append(out.Vals, a.Vals...)
			case nil:
			default:
				out.Vals = append(out.Vals, a)
			}
		}
		if x == nil && y == nil {
			return nil, nil
		}
		return out, nil
	}}, nil
}

func (c *compiler) arrayOp(op string, l, r *Expr, loc int32) (*Expr, error) {
	var err error
	if (l.oid == pgtypes.OIDJSONB || r.oid == pgtypes.OIDJSONB) && op != "&&" {
		return c.jsonbContains(op, l, r, loc)
	}
	if l.oid == pgtypes.OIDUnknown {
		if l, err = c.coerce(l, r.oid, loc); err != nil {
			return nil, err
		}
	}
	if r.oid == pgtypes.OIDUnknown {
		if r, err = c.coerce(r, l.oid, loc); err != nil {
			return nil, err
		}
	}
	if !isArray(l.oid) || !isArray(r.oid) {
		return nil, noOperator(loc, op, l.oid, r.oid)
	}
	contains := func(a, b Array) bool {
		for _, y := range b.Vals {
			found := false
			for _, x := range a.Vals {
				if x != nil && y != nil && valuesEqual(x, y) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
	return &Expr{oid: pgtypes.OIDBool, name: "?column?", desc: "(" + l.desc + " " + op + " " + r.desc + ")", eval: func(ec *evalCtx, row []any) (any, error) {
		x, err := l.eval(ec, row)
		if err != nil || x == nil {
			return nil, err
		}
		y, err := r.eval(ec, row)
		if err != nil || y == nil {
			return nil, err
		}
		a, b := x.(Array), y.(Array)
		switch op {
		case "@>":
			return contains(a, b), nil
		case "<@":
			return contains(b, a), nil
		}
		for _, p := range a.Vals {
			for _, q := range b.Vals {
				if p != nil && q != nil && valuesEqual(p, q) {
					return true, nil
				}
			}
		}
		return false, nil
	}}, nil
}

// anyAll is l op ANY(r) / l op ALL(r) over an array r.
func (c *compiler) anyAll(op string, l, r *Expr, all bool, loc int32) (*Expr, error) {
	var err error
	if r.oid == pgtypes.OIDUnknown {
		lo := l.oid
		if lo == pgtypes.OIDUnknown {
			lo = pgtypes.OIDText
		}
		if r, err = c.coerce(r, arrayOf[lo], loc); err != nil {
			return nil, err
		}
	}
	if !isArray(r.oid) {
		return nil, errAt(loc, codeDatatypeMismatch, "op ANY/ALL (array) requires array on right side")
	}
	elem := &Expr{oid: elemOf[r.oid], name: "?column?", desc: "elem", eval: func(ec *evalCtx, row []any) (any, error) { return row[len(row)-1], nil }}
	// Compile the comparison over (l, element), the element being the
	// last column of an extended row.
	l2, e2, ok, err := c.unify(l, elem, loc)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, noOperator(loc, op, l.oid, elem.oid)
	}
	test := cmpTest(op)
	switch op {
	case "=", "<>", "!=", "<", ">", "<=", ">=":
	default:
		return nil, errAt(loc, sqlstate.CodeFeatureNotSupported, "operator %s with ANY/ALL is not supported", op)
	}
	kind := "ANY"
	if all {
		kind = "ALL"
	}
	return &Expr{oid: pgtypes.OIDBool, name: "?column?", desc: "(" + l.desc + " " + op + " " + kind + " (" + r.desc + "))", eval: func(ec *evalCtx, row []any) (any, error) {
		x, err := l2.eval(ec, row)
		if err != nil {
			return nil, err
		}
		av, err := r.eval(ec, row)
		if err != nil || av == nil {
			return nil, err
		}
		arr := av.(Array)
		if x == nil {
			if len(arr.Vals) == 0 {
				return all, nil
			}
			return nil, nil
		}
		sawNull := false
		for _, v := range arr.Vals {
			if v == nil {
				sawNull = true
				continue
			}
			y, err := e2.eval(ec, []any{v})
			if err != nil {
				return nil, err
			}
			if test(compareValues(x, y)) != all {
				return !all, nil
			}
		}
		if sawNull {
			return nil, nil
		}
		return all, nil
	}}, nil
}

// like compiles LIKE/ILIKE (op is ~~, ~~*, !~~, !~~*).
func (c *compiler) like(op string, l, r, esc *Expr, loc int32) (*Expr, error) {
	var err error
	if l, err = c.textArg(l, loc, op); err != nil {
		return nil, err
	}
	if r, err = c.textArg(r, loc, op); err != nil {
		return nil, err
	}
	if esc != nil {
		if esc, err = c.textArg(esc, loc, op); err != nil {
			return nil, err
		}
	}
	fold := strings.Contains(op, "*")
	not := strings.HasPrefix(op, "!")
	word := map[string]string{"~~": "~~", "~~*": "~~*", "!~~": "!~~", "!~~*": "!~~*"}[op]
	return &Expr{oid: pgtypes.OIDBool, name: "?column?", desc: "(" + l.desc + " " + word + " " + r.desc + ")", eval: func(ec *evalCtx, row []any) (any, error) {
		x, err := l.eval(ec, row)
		if err != nil || x == nil {
			return nil, err
		}
		p, err := r.eval(ec, row)
		if err != nil || p == nil {
			return nil, err
		}
		escape := '\\'
		if esc != nil {
			e, err := esc.eval(ec, row)
			if err != nil || e == nil {
				return nil, err
			}
			rs := []rune(e.(string))
			switch len(rs) {
			case 0:
				escape = -1
			case 1:
				escape = rs[0]
			default:
				return nil, sqlstate.Errorf(codeInvalidEscapeSequence, "invalid escape string")
			}
		}
		s, pat := textOf(l.oid, x), textOf(r.oid, p)
		if fold {
			s, pat = strings.ToLower(s), strings.ToLower(pat)
		}
		m, err := likeMatch([]rune(s), []rune(pat), escape)
		if err != nil {
			return nil, err
		}
		return m != not, nil
	}}, nil
}

// likeMatch matches s against a LIKE pattern.
func likeMatch(s, p []rune, esc rune) (bool, error) {
	for len(p) > 0 {
		switch {
		case p[0] == esc:
			if len(p) < 2 {
				return false, sqlstate.Errorf(codeInvalidEscapeSequence, "LIKE pattern must not end with escape character")
			}
			if len(s) == 0 || s[0] != p[1] {
				return false, nil
			}
			s, p = s[1:], p[2:]
		case p[0] == '%':
			for len(p) > 0 && p[0] == '%' {
				p = p[1:]
			}
			if len(p) == 0 {
				return true, nil
			}
			for i := 0; i <= len(s); i++ {
				m, err := likeMatch(s[i:], p, esc)
				if err != nil || m {
					return m, err
				}
			}
			return false, nil
		case p[0] == '_':
			if len(s) == 0 {
				return false, nil
			}
			s, p = s[1:], p[1:]
		default:
			if len(s) == 0 || s[0] != p[0] {
				return false, nil
			}
			s, p = s[1:], p[1:]
		}
	}
	return len(s) == 0, nil
}

// textArg makes e a text argument: unknown becomes text; other text
// types pass; anything else is an operator error.
func (c *compiler) textArg(e *Expr, loc int32, op string) (*Expr, error) {
	if e.oid == pgtypes.OIDUnknown {
		return c.coerce(e, pgtypes.OIDText, loc)
	}
	if isText(e.oid) {
		return e, nil
	}
	return nil, noOperator(loc, op, e.oid, pgtypes.OIDText)
}

func compileRegex(p string, fold bool) (*regexp.Regexp, error) {
	if fold {
		p = "(?i)" + p
	}
	// PostgreSQL's ARE escapes that RE2 spells differently.
	p = strings.NewReplacer(`\m`, `\b`, `\M`, `\b`, `\y`, `\b`).Replace(p)
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, sqlstate.Errorf(codeInvalidRegex, "invalid regular expression: %v", err)
	}
	return re, nil
}

func (c *compiler) regexOp(op string, l, r *Expr, loc int32) (*Expr, error) {
	var err error
	if l, err = c.textArg(l, loc, op); err != nil {
		return nil, err
	}
	if r, err = c.textArg(r, loc, op); err != nil {
		return nil, err
	}
	fold := strings.Contains(op, "*")
	not := strings.HasPrefix(op, "!")
	var fixed *regexp.Regexp
	if r.isConst && r.val != nil {
		if fixed, err = compileRegex(r.val.(string), fold); err != nil {
			return nil, err
		}
	}
	return &Expr{oid: pgtypes.OIDBool, name: "?column?", desc: "(" + l.desc + " " + op + " " + r.desc + ")", eval: func(ec *evalCtx, row []any) (any, error) {
		x, err := l.eval(ec, row)
		if err != nil || x == nil {
			return nil, err
		}
		re := fixed
		if re == nil {
			p, err := r.eval(ec, row)
			if err != nil || p == nil {
				return nil, err
			}
			if re, err = compileRegex(p.(string), fold); err != nil {
				return nil, err
			}
		}
		return re.MatchString(textOf(l.oid, x)) != not, nil
	}}, nil
}

func (c *compiler) jsonOp(op string, l, r *Expr, loc int32) (*Expr, error) {
	var err error
	if l.oid == pgtypes.OIDUnknown {
		if l, err = c.coerce(l, pgtypes.OIDJSONB, loc); err != nil {
			return nil, err
		}
	}
	if l.oid != pgtypes.OIDJSON && l.oid != pgtypes.OIDJSONB {
		return nil, noOperator(loc, op, l.oid, r.oid)
	}
	if r.oid == pgtypes.OIDUnknown {
		to := pgtypes.OIDText
		if strings.HasPrefix(op, "#") {
			to = arrayOf[pgtypes.OIDText]
		}
		if r, err = c.coerce(r, to, loc); err != nil {
			return nil, err
		}
	}
	asText := strings.HasSuffix(op, ">>")
	oid := l.oid
	if asText {
		oid = pgtypes.OIDText
	}
	return &Expr{oid: oid, name: "?column?", desc: "(" + l.desc + " " + op + " " + r.desc + ")", eval: func(ec *evalCtx, row []any) (any, error) {
		x, err := l.eval(ec, row)
		if err != nil || x == nil {
			return nil, err
		}
		k, err := r.eval(ec, row)
		if err != nil || k == nil {
			return nil, err
		}
		doc, err := pgtypes.ParseJSON(x.(string), l.oid == pgtypes.OIDJSONB)
		if err != nil {
			return nil, err
		}
		var path []any
		if a, ok := k.(Array); ok {
			path = a.Vals
		} else {
			path = []any{k}
		}
		for _, p := range path {
			switch doc.Kind {
			case 'o':
				key, ok := p.(string)
				if !ok {
					return nil, nil
				}
				var found *pgtypes.JSON
				for i, k := range doc.Keys { // the last duplicate wins
					if k == key {
						found = doc.Vals[i]
					}
				}
				if found == nil {
					return nil, nil
				}
				doc = found
			case 'a':
				var i int64
				switch q := p.(type) {
				case int64:
					i = q
				case string:
					n, err := strconv.ParseInt(q, 10, 64)
					if err != nil {
						return nil, nil
					}
					i = n
				default:
					return nil, nil
				}
				if i < 0 {
					i += int64(len(doc.Vals))
				}
				if i < 0 || i >= int64(len(doc.Vals)) {
					return nil, nil
				}
				doc = doc.Vals[i]
			default:
				return nil, nil
			}
		}
		if asText {
			switch doc.Kind {
			case 'z':
				return nil, nil
			case 's':
				return doc.Str, nil
			}
		}
		if l.oid == pgtypes.OIDJSONB {
			return doc.Canonical().String(), nil
		}
		return doc.Raw, nil
	}}, nil
}

// jsonbConcat is jsonb || jsonb: objects merge (the right side wins),
// anything else concatenates as arrays.
func jsonbConcat(a, b string) (any, error) {
	x, err := pgtypes.ParseJSON(a, true)
	if err != nil {
		return nil, err
	}
	y, err := pgtypes.ParseJSON(b, true)
	if err != nil {
		return nil, err
	}
	if x.Kind == 'o' && y.Kind == 'o' {
		m := &pgtypes.JSON{Kind: 'o', Keys: append(append([]string{}, x.Keys...), y.Keys...), Vals: append(append([]*pgtypes.JSON{}, x.Vals...), y.Vals...)}
		return m.Canonical().String(), nil
	}
	arr := &pgtypes.JSON{Kind: 'a'}
	for _, v := range []*pgtypes.JSON{x, y} {
		if v.Kind == 'a' {
			arr.Vals = append(arr.Vals, v.Vals...)
		} else {
			arr.Vals = append(arr.Vals, v)
		}
	}
	return arr.Canonical().String(), nil
}

// bitwise compiles & | # << >> on integers.
func (c *compiler) bitwise(op string, l, r *Expr, loc int32) (*Expr, error) {
	var err error
	if l.oid == pgtypes.OIDUnknown {
		if l, err = c.coerce(l, pgtypes.OIDInt4, loc); err != nil {
			return nil, err
		}
	}
	if r.oid == pgtypes.OIDUnknown {
		if r, err = c.coerce(r, pgtypes.OIDInt4, loc); err != nil {
			return nil, err
		}
	}
	if !isInt(l.oid) || !isInt(r.oid) {
		return nil, noOperator(loc, op, l.oid, r.oid)
	}
	res := arithType(l.oid, r.oid)
	if op == "<<" || op == ">>" {
		res = l.oid
	}
	return &Expr{oid: res, name: "?column?", desc: "(" + l.desc + " " + op + " " + r.desc + ")", eval: func(ec *evalCtx, row []any) (any, error) {
		x, err := l.eval(ec, row)
		if err != nil || x == nil {
			return nil, err
		}
		y, err := r.eval(ec, row)
		if err != nil || y == nil {
			return nil, err
		}
		a, b := x.(int64), y.(int64)
		var v int64
		switch op {
		case "&":
			v = a & b
		case "|":
			v = a | b
		case "#":
			v = a ^ b
		case "<<":
			v = a << (uint64(b) & 63)
		case ">>":
			v = a >> (uint64(b) & 63)
		}
		lo, hi := intRange(res)
		if v < lo || v > hi {
			// Shifts wrap within the type, as in C.
			switch res {
			case pgtypes.OIDInt2:
				v = int64(int16(v))
			case pgtypes.OIDInt4:
				v = int64(int32(v))
			}
		}
		return v, nil
	}}, nil
}

// jsonbContains is jsonb's @> and <@: every member of the contained
// object is in the container with a value it contains, every element of
// a contained array is contained in some element of the container's
// array, and scalars are equal (numbers as numbers); at the top, an array
// contains a scalar it holds.
func (c *compiler) jsonbContains(op string, l, r *Expr, loc int32) (*Expr, error) {
	var err error
	if l, err = c.coerce(l, pgtypes.OIDJSONB, loc); err != nil {
		return nil, err
	}
	if r, err = c.coerce(r, pgtypes.OIDJSONB, loc); err != nil {
		return nil, err
	}
	if l.oid != pgtypes.OIDJSONB || r.oid != pgtypes.OIDJSONB {
		return nil, noOperator(loc, op, l.oid, r.oid)
	}
	return &Expr{oid: pgtypes.OIDBool, name: "?column?", desc: "(" + l.desc + " " + op + " " + r.desc + ")", eval: func(ec *evalCtx, row []any) (any, error) {
		x, err := l.eval(ec, row)
		if err != nil || x == nil {
			return nil, err
		}
		y, err := r.eval(ec, row)
		if err != nil || y == nil {
			return nil, err
		}
		if op == "<@" {
			x, y = y, x
		}
		a, err := pgtypes.ParseJSON(str(x), true)
		if err != nil {
			return nil, err
		}
		b, err := pgtypes.ParseJSON(str(y), true)
		if err != nil {
			return nil, err
		}
		if a.Kind == 'a' && b.Kind != 'a' && b.Kind != 'o' {
			for _, e := range a.Vals {
				if jsonContains(e, b) {
					return true, nil
				}
			}
			return false, nil
		}
		return jsonContains(a, b), nil
	}}, nil
}

func jsonContains(a, b *pgtypes.JSON) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case 'o':
		for i, k := range b.Keys {
			found := false
			for j := len(a.Keys) - 1; j >= 0; j-- { // the last of duplicate keys wins
				if a.Keys[j] == k {
					found = jsonContains(a.Vals[j], b.Vals[i])
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	case 'a':
		for _, be := range b.Vals {
			found := false
			for _, ae := range a.Vals {
				if jsonContains(ae, be) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	case 'n':
		x, okx := new(big.Rat).SetString(a.Str)
		y, oky := new(big.Rat).SetString(b.Str)
		return okx && oky && x.Cmp(y) == 0
	}
	return a.Str == b.Str
}
