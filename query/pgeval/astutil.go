package pgeval

import (
	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// pg_query's AST is protobuf, so one reflective walk reaches every node
// of a statement, whatever its kind.

// WalkAST calls fn on every message under m (m included), depth first,
// but not on a constant's value (under A_Const); fn returns false to skip
// a message's children.
func WalkAST(m proto.Message, fn func(proto.Message) bool) {
	if m == nil {
		return
	}
	walkReflect(m.ProtoReflect(), fn)
}

func walkReflect(m protoreflect.Message, fn func(proto.Message) bool) {
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

// walk visits n and the Nodes under it, depth first; fn returns false to
// skip a node's children.
func walk(n *pg.Node, fn func(*pg.Node) bool) {
	if n == nil {
		return
	}
	WalkAST(n, func(m proto.Message) bool {
		if node, ok := m.(*pg.Node); ok {
			return fn(node)
		}
		return true
	})
}

// fingerprint identifies an expression's AST regardless of where it
// appears in the text (GROUP BY matching, ORDER BY on select items).
func fingerprint(n *pg.Node) string {
	if n == nil {
		return ""
	}
	c := proto.Clone(n)
	clearLocations(c.ProtoReflect())
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c)
	if err != nil {
		return ""
	}
	return string(b)
}

func clearLocations(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Name() == "location":
			m.Clear(fd)
		case fd.Kind() == protoreflect.MessageKind && fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				clearLocations(l.Get(i).Message())
			}
		case fd.Kind() == protoreflect.MessageKind && !fd.IsMap():
			clearLocations(v.Message())
		}
		return true
	})
}
