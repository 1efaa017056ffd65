package pgeval

import (
	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// walk visits n and its descendants depth first; fn returns false to
// skip a node's children.
func walk(n *pg.Node, fn func(*pg.Node) bool) {
	if n == nil {
		return
	}
	if !fn(n) {
		return
	}
	switch x := n.Node.(type) {
	case *pg.Node_AConst:
		return // a constant holds no node; a multi-row VALUES has thousands
	case *pg.Node_List:
		for _, it := range x.List.Items {
			walk(it, fn)
		}
		return
	}
	// Node is one oneof of some 250 fields: Range would test each for
	// presence. Only the one that is set has children.
	m := n.ProtoReflect()
	if fd := m.WhichOneof(m.Descriptor().Oneofs().Get(0)); fd != nil {
		walkMsg(m.Get(fd).Message(), fn)
	}
}

func walkMsg(m protoreflect.Message, fn func(*pg.Node) bool) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() != protoreflect.MessageKind {
			return true
		}
		visit := func(mm protoreflect.Message) {
			if node, ok := mm.Interface().(*pg.Node); ok {
				walk(node, fn)
			} else {
				walkMsg(mm, fn)
			}
		}
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				visit(l.Get(i).Message())
			}
		case fd.IsMap():
		default:
			visit(v.Message())
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
