package query

import (
	"bytes"
	"context"
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/query/pgeval"
)

// Row ranges from WHERE (DESIGN.md section 5): conjuncts on the key
// columns — =, IN, <, <=, >, >=, BETWEEN, LIKE 'prefix%', and AND/OR of
// them — become the row ranges a scan reads; a point lookup is one range
// of one row, so it touches one tablet. Anything else reads the whole
// table (the filters still apply, on every row).

// rangeSet is a sorted list of disjoint row ranges; nil means none
// (nothing matches) and full() the whole table.
type rangeSet []model.RowRange

func full() rangeSet { return rangeSet{{}} }

// isFull: rs is the whole table.
func (rs rangeSet) isFull() bool {
	return len(rs) == 1 && len(rs[0].Start) == 0 && len(rs[0].End) == 0
}

// keyTerm evaluates the constant side of a comparison and encodes it as
// a key prefix: for a single raw key the key itself; for encoded keys
// the value's encoding. ok is false if n is not constant or not usable.
type keyTerm func(n *pg.Node) (key []byte, null bool, ok bool, err error)

// keyAnalyzer finds row ranges for one key column (the first, or the only
// one). prefixOnly: the key has more columns, so an equality is a prefix
// range.
type keyAnalyzer struct {
	column     string
	term       keyTerm
	prefixOnly bool
	// raw: the row key is the value itself, so LIKE 'p%' is a range.
	raw bool
}

// ranges returns the row ranges of a conjunction of filters.
func (a *keyAnalyzer) ranges(conj []*pg.Node) (rangeSet, error) {
	out := full()
	for _, n := range conj {
		rs, err := a.node(n)
		if err != nil {
			return nil, err
		}
		out = intersect(out, rs)
	}
	return out, nil
}

func (a *keyAnalyzer) isKey(n *pg.Node) bool { return isColumn(n, a.column) }

// isColumn: n is a reference to column (qualified or not).
func isColumn(n *pg.Node, column string) bool {
	c := n.GetColumnRef()
	if c == nil || len(c.Fields) == 0 {
		return false
	}
	return c.Fields[len(c.Fields)-1].GetString_().GetSval() == column
}

func (a *keyAnalyzer) node(n *pg.Node) (rangeSet, error) {
	switch {
	case n.GetBoolExpr() != nil:
		b := n.GetBoolExpr()
		switch b.Boolop {
		case pg.BoolExprType_AND_EXPR:
			return a.ranges(b.Args)
		case pg.BoolExprType_OR_EXPR:
			var out rangeSet
			for _, arg := range b.Args {
				rs, err := a.node(arg)
				if err != nil {
					return nil, err
				}
				out = union(out, rs)
			}
			return out, nil
		}
	case n.GetAExpr() != nil:
		return a.aexpr(n.GetAExpr())
	}
	return full(), nil
}

func (a *keyAnalyzer) aexpr(e *pg.A_Expr) (rangeSet, error) {
	op := ""
	if len(e.Name) == 1 {
		op = e.Name[0].GetString_().GetSval()
	}
	l, r := e.Lexpr, e.Rexpr
	switch e.Kind {
	case pg.A_Expr_Kind_AEXPR_OP:
		if !a.isKey(l) && a.isKey(r) {
			l, r = r, l
			op = map[string]string{"<": ">", ">": "<", "<=": ">=", ">=": "<=", "=": "="}[op]
		}
		if !a.isKey(l) {
			return full(), nil
		}
		k, null, ok, err := a.term(r)
		if err != nil || !ok {
			return full(), err
		}
		if null {
			return nil, nil
		}
		return a.compare(op, k), nil
	case pg.A_Expr_Kind_AEXPR_IN:
		if !a.isKey(l) || op != "=" {
			return full(), nil
		}
		var out rangeSet
		for _, item := range r.GetList().GetItems() {
			k, null, ok, err := a.term(item)
			if err != nil || !ok {
				return full(), err
			}
			if !null {
				out = union(out, a.compare("=", k))
			}
		}
		return out, nil
	case pg.A_Expr_Kind_AEXPR_BETWEEN:
		items := r.GetList().GetItems()
		if !a.isKey(l) || len(items) != 2 {
			return full(), nil
		}
		lo, null1, ok1, err := a.term(items[0])
		if err != nil || !ok1 {
			return full(), err
		}
		hi, null2, ok2, err := a.term(items[1])
		if err != nil || !ok2 {
			return full(), err
		}
		if null1 || null2 {
			return nil, nil
		}
		return intersect(a.compare(">=", lo), a.compare("<=", hi)), nil
	case pg.A_Expr_Kind_AEXPR_LIKE:
		if !a.raw || !a.isKey(l) || op != "~~" {
			return full(), nil
		}
		pat := r.GetAConst().GetSval()
		if pat == nil {
			return full(), nil
		}
		prefix := likePrefix(pat.Sval)
		if prefix == "" {
			return full(), nil
		}
		return rangeSet{{Start: []byte(prefix), End: prefixEnd([]byte(prefix))}}, nil
	}
	return full(), nil
}

// compare is the range of keys k' with k' op k.
func (a *keyAnalyzer) compare(op string, k []byte) rangeSet {
	after := func(k []byte) []byte { return append(bytes.Clone(k), 0) }
	end := after
	if a.prefixOnly {
		// k is a prefix of every matching key.
		end = prefixEnd
	}
	switch op {
	case "=":
		if !a.prefixOnly {
			return rangeSet{oneRow(k)}
		}
		return rangeSet{{Start: k, End: end(k)}}
	case ">":
		if e := end(k); e != nil {
			return rangeSet{{Start: e}}
		}
		return nil
	case ">=":
		return rangeSet{{Start: k}}
	case "<":
		if len(k) == 0 {
			return nil
		}
		return rangeSet{{End: k}}
	case "<=":
		if e := end(k); e != nil {
			return rangeSet{{End: e}}
		}
		return full()
	}
	return full()
}

// oneRow is the range of the one row k, in one allocation.
func oneRow(k []byte) model.RowRange {
	end := append(make([]byte, 0, len(k)+1), k...)
	end = append(end, 0)
	// The start is capped so that appending to it cannot touch the end.
	return model.RowRange{Start: end[:len(k):len(k)], End: end}
}

// keyEquality returns the constant side of n if n is column = constant
// (either way round), else nil.
func keyEquality(n *pg.Node, column string) *pg.Node {
	e := n.GetAExpr()
	if e == nil || e.Kind != pg.A_Expr_Kind_AEXPR_OP || len(e.Name) != 1 || e.Name[0].GetString_().GetSval() != "=" {
		return nil
	}
	l, r := isColumn(e.Lexpr, column), isColumn(e.Rexpr, column)
	switch {
	case l && !r:
		return e.Rexpr
	case r && !l:
		return e.Lexpr
	}
	return nil
}

// likePrefix is the literal prefix of a LIKE pattern that ends in %, with
// no other wildcard (and no escapes, which would make it other than it
// looks); "" if there is none.
func likePrefix(p string) string {
	i := strings.IndexAny(p, `%_\`)
	if i <= 0 || p[i] != '%' || strings.Trim(p[i:], "%") != "" {
		return ""
	}
	return p[:i]
}

// prefixEnd is the first key after every key with the prefix; nil if
// there is none.
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// cmpStart orders range starts (nil is the table's start); cmpEnd orders
// ends (empty is the table's end).
func cmpEnd(a, b []byte) int {
	switch {
	case len(a) == 0 && len(b) == 0:
		return 0
	case len(a) == 0:
		return 1
	case len(b) == 0:
		return -1
	}
	return bytes.Compare(a, b)
}

func intersect(x, y rangeSet) rangeSet {
	switch {
	case x.isFull():
		return normalize(y)
	case y.isFull():
		return normalize(x)
	}
	var out rangeSet
	for _, a := range x {
		for _, b := range y {
			if r, ok := a.Intersect(b); ok {
				out = append(out, r)
			}
		}
	}
	return normalize(out)
}

func union(x, y rangeSet) rangeSet { return normalize(append(append(rangeSet{}, x...), y...)) }

// normalize sorts ranges and merges the ones that overlap or touch.
func normalize(rs rangeSet) rangeSet {
	if len(rs) == 1 && (len(rs[0].End) == 0 || bytes.Compare(rs[0].Start, rs[0].End) < 0) {
		return rs // a point lookup's one range: nothing to sort or merge
	}
	slices.SortFunc(rs, func(a, b model.RowRange) int { return bytes.Compare(a.Start, b.Start) })
	var out rangeSet
	for _, r := range rs {
		if len(r.End) > 0 && bytes.Compare(r.Start, r.End) >= 0 {
			continue
		}
		if n := len(out); n > 0 && (len(out[n-1].End) == 0 || bytes.Compare(r.Start, out[n-1].End) <= 0) {
			if cmpEnd(r.End, out[n-1].End) > 0 {
				out[n-1].End = r.End
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// constantKey evaluates the constant side e of a key predicate, converts
// it to the key's type to, and encodes it as a row-key prefix; null
// reports a NULL, ok false a value encode cannot take.
func constantKey(ctx context.Context, e *pgeval.Expr, env *pgeval.Env, args []any, to uint32, encode func(any) ([]byte, bool)) (key []byte, null, ok bool, err error) {
	v, err := e.Eval(ctx, env, nil, args)
	if err != nil || v == nil {
		return nil, v == nil && err == nil, err == nil, err
	}
	if v, err = pgeval.Cast(v, e.OID(), to); err != nil {
		return nil, false, false, err
	}
	key, ok = encode(v)
	return key, false, ok, nil
}

// rawKey is a TEXT or BYTEA value as the row key itself.
func rawKey(v any) ([]byte, bool) {
	switch x := v.(type) {
	case string:
		return []byte(x), true
	case []byte:
		return x, true
	}
	return nil, false
}
