package pgeval

import (
	"sort"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// winSpec is one ranking window function call of a select list.
type winSpec struct {
	name      string
	partition []*Expr
	order     []*Expr
	keys      []sortKey // over [partition..., order...]
}

// winSink collects a select list's window calls; their values are
// appended to the input row at *base.
type winSink struct {
	base  *int
	specs *[]*winSpec
}

var windowFuncs = map[string]bool{"row_number": true, "rank": true, "dense_rank": true}

// window compiles f(...) OVER (PARTITION BY ... ORDER BY ...).
func (c *compiler) window(name string, f *pg.FuncCall, sc *scope) (*Expr, error) {
	if !windowFuncs[name] || len(f.Args) > 0 {
		return nil, errAt(f.Location, sqlstate.CodeFeatureNotSupported, "window function %s is not supported (only row_number, rank and dense_rank are)", name)
	}
	if len(c.winSinks) == 0 {
		return nil, errAt(f.Location, codeWindowingError, "window functions are not allowed here")
	}
	if f.Over.Name != "" || f.Over.Refname != "" {
		return nil, errAt(f.Location, sqlstate.CodeFeatureNotSupported, "named windows are not supported")
	}
	spec := &winSpec{name: name}
	for _, p := range f.Over.PartitionClause {
		e, err := c.expr(p, sc)
		if err != nil {
			return nil, err
		}
		spec.partition = append(spec.partition, e)
		spec.keys = append(spec.keys, sortKey{idx: len(spec.keys)})
	}
	for _, o := range f.Over.OrderClause {
		sb := o.GetSortBy()
		if sb == nil {
			continue
		}
		e, err := c.expr(sb.Node, sc)
		if err != nil {
			return nil, err
		}
		spec.order = append(spec.order, e)
		spec.keys = append(spec.keys, sortKeyOf(sb, len(spec.keys), e.desc))
	}
	sink := c.winSinks[len(c.winSinks)-1]
	j := len(*sink.specs)
	*sink.specs = append(*sink.specs, spec)
	base := sink.base
	return &Expr{oid: pgtypes.OIDInt8, name: name, desc: name + "() OVER (...)", eval: func(_ *evalCtx, row []any) (any, error) {
		k := *base + j
		if k < len(row) {
			return row[k], nil
		}
		return nil, nil
	}}, nil
}

// windowNode computes ranking window functions over all its input rows
// and appends their values to each row.
type windowNode struct {
	nodeStats
	in    node
	specs *[]*winSpec
}

func (n *windowNode) open(ec *evalCtx) (iter, error) {
	rows, held, err := materialize(n.in, ec)
	if err != nil {
		return nil, err
	}
	width := 0
	if len(rows) > 0 {
		width = len(rows[0])
	}
	for i := range rows {
		rows[i] = append(rows[i][:width:width], make([]any, len(*n.specs))...)
	}
	order := make([]int, len(rows))
	for s, spec := range *n.specs {
		keys := make([][]any, len(rows))
		for i, r := range rows {
			k := make([]any, 0, len(spec.partition)+len(spec.order))
			for _, e := range append(append([]*Expr{}, spec.partition...), spec.order...) {
				v, err := e.eval(ec, r[:width])
				if err != nil {
					ec.release(held)
					return nil, err
				}
				k = append(k, v)
			}
			keys[i] = k
		}
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return compareRows(keys[order[a]], keys[order[b]], spec.keys) < 0 })
		np := len(spec.partition)
		var num, rank, dense int64
		for pos, i := range order {
			newPart := pos == 0 || rowKey(keys[i][:np], nil) != rowKey(keys[order[pos-1]][:np], nil)
			if newPart {
				num, rank, dense = 0, 0, 0
			}
			num++
			if newPart || rowKey(keys[i][np:], nil) != rowKey(keys[order[pos-1]][np:], nil) {
				rank = num
				dense++
			}
			switch spec.name {
			case "row_number":
				rows[i][width+s] = num
			case "rank":
				rows[i][width+s] = rank
			default:
				rows[i][width+s] = dense
			}
		}
	}
	out := make([][]any, len(rows))
	for p, i := range order {
		out[p] = rows[i]
	}
	if len(*n.specs) == 0 {
		out = rows
	}
	return &heldIter{iter: &sliceIter{rows: out}, ec: ec, held: held}, nil
}

func (n *windowNode) explain() (string, []string, []node) {
	var names []string
	for _, s := range *n.specs {
		names = append(names, s.name)
	}
	return "WindowAgg", []string{"Functions: " + strings.Join(names, ", ")}, []node{n.in}
}
