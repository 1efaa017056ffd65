package query

import (
	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/cellardb/cellar/query/pgeval"
)

// walk calls fn on every message under m (m included), depth first;
// fn returns false to skip a message's children (pgeval.WalkAST).
func walk(m proto.Message, fn func(protoMessage) bool) { pgeval.WalkAST(m, fn) }

// columnRefs calls fn on every column reference under m, not descending
// into subqueries when skipSub is set.
func columnRefs(m proto.Message, skipSub bool, fn func(*pg.ColumnRef)) {
	walk(m, func(x proto.Message) bool {
		switch n := x.(type) {
		case *pg.ColumnRef:
			fn(n)
		case *pg.SubLink:
			return !skipSub
		}
		return true
	})
}

// hasSubquery reports whether m holds a subquery.
func hasSubquery(m proto.Message) bool {
	found := false
	walk(m, func(x proto.Message) bool {
		switch x.(type) {
		case *pg.SubLink, *pg.RangeSubselect:
			found = true
		}
		return !found
	})
	return found
}

// fieldNames returns a column reference's names ("*" for A_Star).
func fieldNames(c *pg.ColumnRef) []string {
	out := make([]string, len(c.Fields))
	for i, f := range c.Fields {
		if s := f.GetString_(); s != nil {
			out[i] = s.Sval
		} else {
			out[i] = "*"
		}
	}
	return out
}

// protoMessage is any node of the AST.
type protoMessage = proto.Message

func strNode(s string) *pg.Node { return pg.MakeStrNode(s) }
