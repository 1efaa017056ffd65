package query

import (
	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// pg_query's AST is protobuf, so one reflective walk reaches every node
// of a statement, whatever its kind.

// walk calls fn on every message under m (m included), depth first, but
// not on a constant's value (under A_Const); fn returns false to skip a
// message's children.
func walk(m proto.Message, fn func(protoMessage) bool) {
	if m == nil {
		return
	}
	walkReflect(m.ProtoReflect(), fn)
}

func walkReflect(m protoreflect.Message, fn func(protoMessage) bool) {
	if !m.IsValid() {
		return
	}
	x := m.Interface()
	if !fn(x) {
		return
	}
	switch n := x.(type) {
	case *pg.A_Const:
		// A constant holds only its value (String, Integer, …), which no
		// walk looks for; a multi-row VALUES has thousands.
		return
	case *pg.List:
		// A multi-row VALUES is a List per row: walk it without
		// reflection.
		for _, it := range n.Items {
			walkReflect(it.ProtoReflect(), fn)
		}
		return
	case *pg.Node:
		// Node, the wrapper around every child, is one oneof of some 250
		// fields: Range would test each for presence (a 500-row INSERT's
		// walks took 5 ms).
		if fd := m.WhichOneof(m.Descriptor().Oneofs().Get(0)); fd != nil {
			walkReflect(m.Get(fd).Message(), fn)
		}
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				walkReflect(l.Get(i).Message(), fn)
			}
		case fd.Message() != nil && !fd.IsMap():
			walkReflect(v.Message(), fn)
		}
		return true
	})
}

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
