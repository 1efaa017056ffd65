package pgeval

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// iter is a node's open row stream.
type iter interface {
	next() ([]any, error)
	close()
}

// node is a plan node.
type node interface {
	open(ec *evalCtx) (iter, error)
	// explain returns the node's title, its property lines, and its
	// children.
	explain() (string, []string, []node)
	stats() *nodeStats
}

// nodeStats are EXPLAIN ANALYZE's counters, filled by runs.
type nodeStats struct {
	rows, loops, nanos atomic.Int64
}

func (s *nodeStats) stats() *nodeStats { return s }

// openNode opens n, counting its rows for EXPLAIN ANALYZE.
func openNode(n node, ec *evalCtx) (iter, error) {
	if ec.run == nil || !ec.run.analyze {
		return n.open(ec) // counting costs two clock reads per row and node
	}
	st := n.stats()
	st.loops.Add(1)
	start := time.Now()
	it, err := n.open(ec)
	st.nanos.Add(int64(time.Since(start)))
	if err != nil {
		return nil, err
	}
	return &countIter{in: it, st: st}, nil
}

type countIter struct {
	in iter
	st *nodeStats
}

func (c *countIter) next() ([]any, error) {
	start := time.Now()
	r, err := c.in.next()
	c.st.nanos.Add(int64(time.Since(start)))
	if err == nil {
		c.st.rows.Add(1)
	}
	return r, err
}
func (c *countIter) close() { c.in.close() }

// sliceIter iterates materialized rows.
type sliceIter struct {
	rows [][]any
	i    int
}

func (s *sliceIter) next() ([]any, error) {
	if s.i >= len(s.rows) {
		return nil, io.EOF
	}
	s.i++
	return s.rows[s.i-1], nil
}
func (s *sliceIter) close() {}

// funcIter adapts closures.
type funcIter struct {
	nextf  func() ([]any, error)
	closef func()
}

func (f *funcIter) next() ([]any, error) { return f.nextf() }
func (f *funcIter) close() {
	if f.closef != nil {
		f.closef()
	}
}

func canceled(ec *evalCtx) error {
	if ec.ctx == nil {
		return nil
	}
	if err := ec.ctx.Err(); err != nil {
		return sqlstate.Errorf(sqlstate.CodeQueryCanceled, "canceling statement due to user request")
	}
	return nil
}

// materialize reads all of n's rows, within the budget; held is what
// they were charged, for release.
func materialize(n node, ec *evalCtx) (rows [][]any, held int64, err error) {
	it, err := openNode(n, ec)
	if err != nil {
		return nil, 0, err
	}
	defer it.close()
	for {
		r, err := it.next()
		if err == io.EOF {
			return rows, held, nil
		}
		if err != nil {
			ec.release(held)
			return nil, 0, err
		}
		sz := rowSize(r)
		if err := ec.chargeN(sz); err != nil {
			ec.release(held)
			return nil, 0, err
		}
		held += sz
		rows = append(rows, r)
	}
}

// heldIter releases its rows' budget when closed.
type heldIter struct {
	iter
	ec   *evalCtx
	held int64
}

func (h *heldIter) close() {
	h.iter.close()
	h.ec.release(h.held)
	h.held = 0
}

// resultNode yields one empty row (SELECT without FROM).
type resultNode struct{ nodeStats }

func (n *resultNode) open(*evalCtx) (iter, error)         { return &sliceIter{rows: [][]any{{}}}, nil }
func (n *resultNode) explain() (string, []string, []node) { return "Result", nil, nil }

// scanNode reads a relation.
type scanNode struct {
	nodeStats
	rel            Relation
	schema, name   string
	alias          string
	ncols          int
	filters        []*Expr // over the relation's own columns
	filterNodes    []any
	used           func() map[int]bool
	offset         int
	limit, offset2 *Expr // pushed LIMIT and OFFSET (rows needed = limit+offset)
	reverse        bool
	extra          map[int]bool
	oids           []uint32 // the relation's column types

	// The request's parts that stay the same from run to run, made on
	// the first (compilation is over by then).
	fixed      sync.Once
	reqFilters []Filter
	reqNeeded  []bool
}

// normalizeRow brings a relation's values to this package's Go types:
// other integer widths become int64, and the text form of a non-text
// type (an array as '{1,2}', an int2vector as '1 2') is parsed. The
// contract asks relations for the canonical types; this keeps a lax
// one from failing type assertions deep inside an expression.
func normalizeRow(r []any, oids []uint32) error {
	for i, v := range r {
		if i >= len(oids) {
			break
		}
		switch x := v.(type) {
		case int:
			r[i] = int64(x)
		case int32:
			r[i] = int64(x)
		case int16:
			r[i] = int64(x)
		case int8:
			r[i] = int64(x)
		case uint32:
			r[i] = int64(x)
		case uint16:
			r[i] = int64(x)
		case uint8:
			r[i] = int64(x)
		case float32:
			r[i] = float64(x)
		case string:
			o := oids[i]
			if !isText(o) && o != pgtypes.OIDJSON && o != pgtypes.OIDJSONB && o != pgtypes.OIDUnknown && o != OIDPgNodeTree {
				p, err := castText(x, o, nil)
				switch {
				case err != nil && isOIDLike(o) && o != OIDOid && o != OIDXid:
					// A reg* value given by name; its OID is unknown here.
					p = Reg{Name: x}
				case err != nil && (o == OIDInet || o == OIDAclitem):
					p = x // a catalog value of a type kept as its text
				case err != nil:
					return err
				}
				r[i] = p
			}
		}
	}
	return nil
}

func (n *scanNode) request(ec *evalCtx) ScanRequest {
	n.fixed.Do(func() {
		for i, f := range n.filters {
			n.reqFilters = append(n.reqFilters, Filter{Node: n.filterNodes[i], Expr: f})
		}
		n.reqNeeded = make([]bool, n.ncols)
		used := n.used()
		for i := range n.reqNeeded {
			n.reqNeeded[i] = used[n.offset+i]
		}
	})
	// Relations may keep what they are given but not change it.
	req := ScanRequest{Limit: -1, Args: ec.args, Env: ec.env, Reverse: n.reverse, Filters: n.reqFilters, Needed: n.reqNeeded}
	if n.limit != nil {
		if l, err := n.limit.eval(ec, nil); err == nil && l != nil {
			total := l.(int64)
			if n.offset2 != nil {
				if o, err := n.offset2.eval(ec, nil); err == nil && o != nil && o.(int64) > 0 {
					total += o.(int64)
				}
			}
			if total >= 0 {
				req.Limit = total
			}
		}
	}
	return req
}

func (n *scanNode) open(ec *evalCtx) (iter, error) {
	rows, err := n.rel.Scan(ec.ctx, n.request(ec))
	if err != nil {
		return nil, err
	}
	return &scanIter{n: n, ec: ec, rows: rows}, nil
}

type scanIter struct {
	n    *scanNode
	ec   *evalCtx
	rows Rows
}

func (s *scanIter) next() ([]any, error) {
	n, ec := s.n, s.ec
	for {
		if err := canceled(ec); err != nil {
			return nil, err
		}
		r, err := s.rows.Next(ec.ctx)
		if err != nil {
			return nil, err
		}
		if len(r) < n.ncols {
			r = append(r, make([]any, n.ncols-len(r))...)
		}
		if err := normalizeRow(r, n.oids); err != nil {
			return nil, err
		}
		ok, err := passes(ec, r, n.filters)
		if err != nil {
			return nil, err
		}
		if ok {
			return r, nil
		}
	}
}

func (s *scanIter) close() { s.rows.Close() }

func (n *scanNode) explain() (string, []string, []node) {
	var props []string
	ex, isEx := n.rel.(Explainer)
	var lines []string
	if isEx {
		lines = ex.Explain(n.request(&evalCtx{ctx: context.Background(), env: &Env{}}))
	}
	// A relation that describes its scan names the node itself; the
	// filters it applies exactly are its to describe.
	exacter, _ := n.rel.(Exacter)
	var d []string
	for i, f := range n.filters {
		if len(lines) > 0 && exacter != nil && exacter.Exact(Filter{Node: n.filterNodes[i], Expr: f}) {
			continue
		}
		d = append(d, f.desc)
	}
	filter := func() {
		if len(d) > 0 {
			props = append(props, "Filter: "+strings.Join(d, " AND "))
		}
	}
	if len(lines) > 0 {
		title := strings.TrimSpace(lines[0])
		if n.alias != "" && n.alias != n.name {
			title += " " + quoteIdent(n.alias)
		}
		props = append(props, dedent(lines[1:])...)
		filter()
		return title, props, nil
	}
	title := "Seq Scan on " + quoteIdent(n.name)
	if n.schema != "" {
		title = "Seq Scan on " + quoteIdent(n.schema) + "." + quoteIdent(n.name)
	}
	if n.alias != "" && n.alias != n.name {
		title += " " + quoteIdent(n.alias)
	}
	filter()
	return title, props, nil
}

// dedent removes the indentation the lines share.
func dedent(lines []string) []string {
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		k := len(l) - len(strings.TrimLeft(l, " "))
		if common < 0 || k < common {
			common = k
		}
	}
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		if len(l) >= common && common > 0 {
			l = l[common:]
		}
		out = append(out, l)
	}
	return out
}

func passes(ec *evalCtx, row []any, preds []*Expr) (bool, error) {
	for _, p := range preds {
		v, err := p.eval(ec, row)
		if err != nil {
			return false, err
		}
		if v != true {
			return false, nil
		}
	}
	return true, nil
}

// filterNode keeps rows for which pred is true.
type filterNode struct {
	nodeStats
	in    node
	preds []*Expr
	what  string
}

func (n *filterNode) open(ec *evalCtx) (iter, error) {
	it, err := openNode(n.in, ec)
	if err != nil {
		return nil, err
	}
	return &funcIter{nextf: func() ([]any, error) {
		for {
			r, err := it.next()
			if err != nil {
				return nil, err
			}
			ok, err := passes(ec, r, n.preds)
			if err != nil {
				return nil, err
			}
			if ok {
				return r, nil
			}
		}
	}, closef: it.close}, nil
}

func (n *filterNode) explain() (string, []string, []node) {
	var d []string
	for _, p := range n.preds {
		d = append(d, p.desc)
	}
	what := n.what
	if what == "" {
		what = "Filter"
	}
	return "Filter", []string{what + ": " + strings.Join(d, " AND ")}, []node{n.in}
}

// valuesNode yields VALUES rows.
type valuesNode struct {
	nodeStats
	rows [][]*Expr
}

func (n *valuesNode) open(ec *evalCtx) (iter, error) {
	i := 0
	return &funcIter{nextf: func() ([]any, error) {
		if i >= len(n.rows) {
			return nil, io.EOF
		}
		out := make([]any, len(n.rows[i]))
		for j, e := range n.rows[i] {
			v, err := e.eval(ec, nil)
			if err != nil {
				return nil, err
			}
			out[j] = v
		}
		i++
		return out, nil
	}}, nil
}

func (n *valuesNode) explain() (string, []string, []node) {
	return fmt.Sprintf("Values Scan (%d rows)", len(n.rows)), nil, nil
}

// joinKind is a join's type.
type joinKind int

const (
	joinInner joinKind = iota
	joinLeft
	joinRight
	joinFull
)

// joinNode is a nested-loop join; the inner side is materialized once
// per open.
type joinNode struct {
	nodeStats
	l, r   node
	kind   joinKind
	on     *Expr // over left++right; nil for a cross join
	lw, rw int
	// hashL and hashR are equi-join keys of the ON clause over the left
	// and the right row: when set, the right rows are hashed on them and
	// ON is evaluated only on the candidates.
	hashL, hashR []*Expr
}

// joinKey evaluates equi-join keys; ok is false if one is NULL (NULL
// never equals anything).
func joinKey(ec *evalCtx, keys []*Expr, row []any) (string, bool, error) {
	vals := make([]any, len(keys))
	for i, k := range keys {
		v, err := k.eval(ec, row)
		if err != nil || v == nil {
			return "", false, err
		}
		vals[i] = v
	}
	return rowKey(vals, nil), true, nil
}

func (n *joinNode) open(ec *evalCtx) (iter, error) {
	right, held, err := materialize(n.r, ec)
	if err != nil {
		return nil, err
	}
	lit, err := openNode(n.l, ec)
	if err != nil {
		ec.release(held)
		return nil, err
	}
	matchedRight := make([]bool, len(right))
	var buckets map[string][]int
	if len(n.hashR) > 0 {
		buckets = map[string][]int{}
		for i, rr := range right {
			k, ok, err := joinKey(ec, n.hashR, rr)
			if err != nil {
				lit.close()
				ec.release(held)
				return nil, err
			}
			if ok {
				buckets[k] = append(buckets[k], i)
			}
		}
	}
	all := make([]int, len(right))
	for i := range all {
		all[i] = i
	}
	var pending [][]any
	leftDone := false
	rightTail := 0
	return &funcIter{nextf: func() ([]any, error) {
		for {
			if len(pending) > 0 {
				r := pending[0]
				pending = pending[1:]
				return r, nil
			}
			if leftDone {
				// Unmatched right rows of RIGHT and FULL joins.
				for rightTail < len(right) {
					i := rightTail
					rightTail++
					if !matchedRight[i] {
						row := make([]any, n.lw, n.lw+n.rw)
						return append(row, right[i]...), nil
					}
				}
				return nil, io.EOF
			}
			if err := canceled(ec); err != nil {
				return nil, err
			}
			lr, err := lit.next()
			if err == io.EOF {
				leftDone = true
				if n.kind != joinRight && n.kind != joinFull {
					return nil, io.EOF
				}
				continue
			}
			if err != nil {
				return nil, err
			}
			matched := false
			cands := all
			if buckets != nil {
				k, ok, err := joinKey(ec, n.hashL, lr)
				if err != nil {
					return nil, err
				}
				cands = nil
				if ok {
					cands = buckets[k]
				}
			}
			for _, i := range cands {
				rr := right[i]
				row := make([]any, 0, n.lw+n.rw)
				row = append(append(row, lr...), rr...)
				if n.on != nil {
					v, err := n.on.eval(ec, row)
					if err != nil {
						return nil, err
					}
					if v != true {
						continue
					}
				}
				matched = true
				matchedRight[i] = true
				pending = append(pending, row)
			}
			if !matched && (n.kind == joinLeft || n.kind == joinFull) {
				row := make([]any, 0, n.lw+n.rw)
				row = append(append(row, lr...), make([]any, n.rw)...)
				pending = append(pending, row)
			}
		}
	}, closef: func() { lit.close(); ec.release(held); held = 0 }}, nil
}

func (n *joinNode) explain() (string, []string, []node) {
	title := map[joinKind]string{joinInner: "Nested Loop", joinLeft: "Nested Loop Left Join", joinRight: "Nested Loop Right Join", joinFull: "Nested Loop Full Join"}[n.kind]
	if len(n.hashR) > 0 {
		title = map[joinKind]string{joinInner: "Hash Join", joinLeft: "Hash Left Join", joinRight: "Hash Right Join", joinFull: "Hash Full Join"}[n.kind]
		return title, []string{"Hash Cond: " + descs(n.hashL) + " = " + descs(n.hashR), "Join Filter: " + n.on.desc}, []node{n.l, n.r}
	}
	var props []string
	if n.on != nil {
		props = append(props, "Join Filter: "+n.on.desc)
	}
	return title, props, []node{n.l, n.r}
}

// lateralFuncNode joins each left row with the rows a set-returning
// function yields for it (FROM t, unnest(t.a); a function alone in FROM
// has a resultNode on the left).
type lateralFuncNode struct {
	nodeStats
	l          node
	fn         *Expr
	ordinality bool
	width      int
}

func (n *lateralFuncNode) open(ec *evalCtx) (iter, error) {
	lit, err := openNode(n.l, ec)
	if err != nil {
		return nil, err
	}
	var pending [][]any
	return &funcIter{nextf: func() ([]any, error) {
		for {
			if len(pending) > 0 {
				r := pending[0]
				pending = pending[1:]
				return r, nil
			}
			lr, err := lit.next()
			if err != nil {
				return nil, err
			}
			rows, err := n.fn.srf(ec, lr)
			if err != nil {
				return nil, err
			}
			for i, fr := range rows {
				row := append(append([]any{}, lr...), fr...)
				if n.ordinality {
					row = append(row, int64(i+1))
				}
				pending = append(pending, row)
			}
		}
	}, closef: lit.close}, nil
}

func (n *lateralFuncNode) explain() (string, []string, []node) {
	if _, ok := n.l.(*resultNode); ok {
		return "Function Scan on " + n.fn.name, nil, nil
	}
	return "Nested Loop", nil, []node{n.l, &explainOnly{title: "Function Scan on " + n.fn.name}}
}

// explainOnly is a node that exists only in EXPLAIN output.
type explainOnly struct {
	nodeStats
	title string
}

func (n *explainOnly) open(*evalCtx) (iter, error)         { return &sliceIter{}, nil }
func (n *explainOnly) explain() (string, []string, []node) { return n.title, nil, nil }

// projectNode computes the select list. Set-returning functions in it
// run first, and the row they extend is zipped as PostgreSQL 10+ does:
// as many rows as the longest function yields.
type projectNode struct {
	nodeStats
	in    node
	exprs []*Expr
	srfs  []*Expr
}

func (n *projectNode) open(ec *evalCtx) (iter, error) {
	it, err := openNode(n.in, ec)
	if err != nil {
		return nil, err
	}
	if len(n.srfs) == 0 {
		return &projectIter{n: n, ec: ec, in: it}, nil
	}
	var pending [][]any
	project := func(row []any) ([]any, error) {
		out := make([]any, len(n.exprs))
		for i, e := range n.exprs {
			v, err := e.eval(ec, row)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	return &funcIter{nextf: func() ([]any, error) {
		for {
			if len(pending) > 0 {
				r := pending[0]
				pending = pending[1:]
				return r, nil
			}
			row, err := it.next()
			if err != nil {
				return nil, err
			}
			if len(n.srfs) == 0 {
				return project(row)
			}
			sets := make([][][]any, len(n.srfs))
			longest := 0
			for i, f := range n.srfs {
				if sets[i], err = f.srf(ec, row); err != nil {
					return nil, err
				}
				longest = max(longest, len(sets[i]))
			}
			for k := 0; k < longest; k++ {
				ext := append([]any{}, row...)
				for i, f := range n.srfs {
					var v any
					if k < len(sets[i]) {
						if len(f.srfCols) == 1 {
							v = sets[i][k][0]
						} else {
							v = Record{Cols: f.srfCols, Vals: sets[i][k]}
						}
					}
					ext = append(ext, v)
				}
				out, err := project(ext)
				if err != nil {
					return nil, err
				}
				pending = append(pending, out)
			}
		}
	}, closef: it.close}, nil
}

// projectIter is a projection without set-returning functions.
type projectIter struct {
	n  *projectNode
	ec *evalCtx
	in iter
}

func (p *projectIter) next() ([]any, error) {
	row, err := p.in.next()
	if err != nil {
		return nil, err
	}
	out := make([]any, len(p.n.exprs))
	for i, e := range p.n.exprs {
		if out[i], err = e.eval(p.ec, row); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (p *projectIter) close() { p.in.close() }

func (n *projectNode) explain() (string, []string, []node) {
	if len(n.srfs) > 0 {
		return "ProjectSet", nil, []node{n.in}
	}
	return "", nil, []node{n.in}
}

// sortKey orders by column idx of the rows.
type sortKey struct {
	idx        int
	desc       bool
	nullsFirst bool
	text       string
}

func compareRows(a, b []any, keys []sortKey) int {
	for _, k := range keys {
		x, y := a[k.idx], b[k.idx]
		var c int
		switch {
		case x == nil && y == nil:
			c = 0
		case x == nil:
			c = 1
			if k.nullsFirst {
				c = -1
			}
			if k.desc {
				c = -c
			}
		case y == nil:
			c = -1
			if k.nullsFirst {
				c = 1
			}
			if k.desc {
				c = -c
			}
		default:
			c = compareValues(x, y)
		}
		if c != 0 {
			if k.desc {
				return -c
			}
			return c
		}
	}
	return 0
}

type sortNode struct {
	nodeStats
	in   node
	keys []sortKey
}

func (n *sortNode) open(ec *evalCtx) (iter, error) {
	rows, held, err := materialize(n.in, ec)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(rows, func(i, j int) bool { return compareRows(rows[i], rows[j], n.keys) < 0 })
	return &heldIter{iter: &sliceIter{rows: rows}, ec: ec, held: held}, nil
}

func (n *sortNode) explain() (string, []string, []node) {
	var d []string
	for _, k := range n.keys {
		s := k.text
		if k.desc {
			s += " DESC"
		}
		if k.nullsFirst != k.desc {
			if k.nullsFirst {
				s += " NULLS FIRST"
			} else {
				s += " NULLS LAST"
			}
		}
		d = append(d, s)
	}
	return "Sort", []string{"Sort Key: " + strings.Join(d, ", ")}, []node{n.in}
}

// rowKey encodes values for hashing (DISTINCT, GROUP BY, set
// operations). Equal values of one type encode alike.
func rowKey(vals []any, idx []int) string {
	var b strings.Builder
	enc := func(v any) {
		switch x := v.(type) {
		case nil:
			b.WriteString("N")
		case pgtypes.Numeric:
			s := string(x)
			if strings.Contains(s, ".") {
				s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
			}
			if s == "-0" {
				s = "0"
			}
			b.WriteString("n" + s)
		case int64:
			b.WriteString("n" + strconv.FormatInt(x, 10))
		case float64:
			b.WriteString("f" + strconv.FormatFloat(x, 'g', -1, 64))
		case string:
			b.WriteString("s" + strconv.Itoa(len(x)) + ":" + x)
		case Reg:
			b.WriteString("n" + strconv.FormatUint(uint64(x.OID), 10))
		case Array:
			// Element by element, so that equal elements of different
			// text ('{1 mon}', '{30 days}') hash alike, as array_eq finds.
			inner := rowKey(x.Vals, nil)
			b.WriteString("a" + strconv.Itoa(len(inner)) + ":" + inner)
		case pgtypes.Interval:
			// Equal spans group together, as interval_hash makes them.
			d, us := x.Span()
			b.WriteString("i" + strconv.FormatInt(d, 10) + ":" + strconv.FormatInt(us, 10))
		default:
			fmt.Fprintf(&b, "%T%v", v, v)
		}
		b.WriteByte(0)
	}
	if idx == nil {
		for _, v := range vals {
			enc(v)
		}
	} else {
		for _, i := range idx {
			enc(vals[i])
		}
	}
	return b.String()
}

// distinctNode keeps the first row of each key (DISTINCT, DISTINCT ON
// after a sort).
type distinctNode struct {
	nodeStats
	in  node
	idx []int
	on  bool
}

func (n *distinctNode) open(ec *evalCtx) (iter, error) {
	it, err := openNode(n.in, ec)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var held int64
	return &funcIter{nextf: func() ([]any, error) {
		for {
			r, err := it.next()
			if err != nil {
				return nil, err
			}
			k := rowKey(r, n.idx)
			if seen[k] {
				continue
			}
			if err := ec.chargeN(int64(len(k) + 32)); err != nil {
				return nil, err
			}
			held += int64(len(k) + 32)
			seen[k] = true
			return r, nil
		}
	}, closef: func() { it.close(); ec.release(held); held = 0 }}, nil
}

func (n *distinctNode) explain() (string, []string, []node) {
	if n.on {
		return "Unique", nil, []node{n.in}
	}
	return "HashAggregate (DISTINCT)", nil, []node{n.in}
}

// limitNode applies OFFSET and LIMIT.
type limitNode struct {
	nodeStats
	in            node
	limit, offset *Expr
}

func evalCount(ec *evalCtx, e *Expr, what string) (int64, bool, error) {
	if e == nil {
		return 0, false, nil
	}
	v, err := e.eval(ec, nil)
	if err != nil {
		return 0, false, err
	}
	if v == nil {
		return 0, false, nil
	}
	n := v.(int64)
	if n < 0 {
		if what == "LIMIT" {
			return 0, false, sqlstate.Errorf(codeInvalidRowCountLimit, "LIMIT must not be negative")
		}
		return 0, false, sqlstate.Errorf(codeInvalidRowCountOffset, "OFFSET must not be negative")
	}
	return n, true, nil
}

func (n *limitNode) open(ec *evalCtx) (iter, error) {
	limit, hasLimit, err := evalCount(ec, n.limit, "LIMIT")
	if err != nil {
		return nil, err
	}
	offset, _, err := evalCount(ec, n.offset, "OFFSET")
	if err != nil {
		return nil, err
	}
	if hasLimit && limit == 0 {
		return &sliceIter{}, nil
	}
	it, err := openNode(n.in, ec)
	if err != nil {
		return nil, err
	}
	var seen int64
	return &funcIter{nextf: func() ([]any, error) {
		for seen < offset {
			if _, err := it.next(); err != nil {
				return nil, err
			}
			seen++
		}
		if hasLimit && seen >= offset+limit {
			return nil, io.EOF
		}
		r, err := it.next()
		if err != nil {
			return nil, err
		}
		seen++
		return r, nil
	}, closef: it.close}, nil
}

func (n *limitNode) explain() (string, []string, []node) { return "Limit", nil, []node{n.in} }

// stripNode drops hidden trailing columns (sort keys not selected).
type stripNode struct {
	nodeStats
	in node
	n  int
}

func (n *stripNode) open(ec *evalCtx) (iter, error) {
	it, err := openNode(n.in, ec)
	if err != nil {
		return nil, err
	}
	return &funcIter{nextf: func() ([]any, error) {
		r, err := it.next()
		if err != nil {
			return nil, err
		}
		return r[:n.n], nil
	}, closef: it.close}, nil
}

func (n *stripNode) explain() (string, []string, []node) { return "", nil, []node{n.in} }

// setOpNode is UNION, INTERSECT or EXCEPT (ALL or not).
type setOpNode struct {
	nodeStats
	l, r node
	op   string
	all  bool
}

func (n *setOpNode) open(ec *evalCtx) (iter, error) {
	if n.op == "UNION" {
		lit, err := openNode(n.l, ec)
		if err != nil {
			return nil, err
		}
		var rit iter
		seen := map[string]bool{}
		var held int64
		return &funcIter{nextf: func() ([]any, error) {
			for {
				var r []any
				var err error
				if rit == nil {
					r, err = lit.next()
					if err == io.EOF {
						if rit, err = openNode(n.r, ec); err != nil {
							return nil, err
						}
						continue
					}
				} else {
					r, err = rit.next()
				}
				if err != nil {
					return nil, err
				}
				if !n.all {
					k := rowKey(r, nil)
					if seen[k] {
						continue
					}
					if err := ec.chargeN(int64(len(k) + 32)); err != nil {
						return nil, err
					}
					held += int64(len(k) + 32)
					seen[k] = true
				}
				return r, nil
			}
		}, closef: func() {
			lit.close()
			if rit != nil {
				rit.close()
			}
			ec.release(held)
			held = 0
		}}, nil
	}
	left, lheld, err := materialize(n.l, ec)
	if err != nil {
		return nil, err
	}
	right, rheld, err := materialize(n.r, ec)
	if err != nil {
		ec.release(lheld)
		return nil, err
	}
	ec.release(rheld)
	counts := map[string]int{}
	for _, r := range right {
		counts[rowKey(r, nil)]++
	}
	var out [][]any
	emitted := map[string]bool{}
	for _, r := range left {
		k := rowKey(r, nil)
		in := counts[k] > 0
		keep := in == (n.op == "INTERSECT")
		if n.all {
			if in {
				counts[k]--
			}
		} else if emitted[k] {
			continue
		}
		if keep {
			emitted[k] = true
			out = append(out, r)
		} else if !n.all {
			emitted[k] = true
		}
	}
	return &heldIter{iter: &sliceIter{rows: out}, ec: ec, held: lheld}, nil
}

func (n *setOpNode) explain() (string, []string, []node) {
	t := n.op
	if n.all {
		t += " ALL"
	}
	if n.op == "UNION" {
		if n.all {
			return "Append", nil, []node{n.l, n.r}
		}
		return "HashAggregate (UNION)", nil, []node{n.l, n.r}
	}
	return "SetOp " + t, nil, []node{n.l, n.r}
}

// cteDef is a WITH query; its rows are computed once per execution.
type cteDef struct {
	name string
	node node
	cols []pgtypes.Column
	// recursive CTEs: the working table's current rows.
	recursive bool
	initial   node
	step      node
}

type cteScanNode struct {
	nodeStats
	def *cteDef
}

func (n *cteScanNode) open(ec *evalCtx) (iter, error) {
	if rows, ok := ec.run.subs[n.def]; ok {
		return &sliceIter{rows: rows}, nil
	}
	var rows [][]any
	var err error
	if n.def.recursive {
		rows, err = runRecursive(n.def, ec)
	} else {
		rows, _, err = materialize(n.def.node, ec)
	}
	if err != nil {
		return nil, err
	}
	ec.run.setSub(n.def, rows)
	return &sliceIter{rows: rows}, nil
}

func (n *cteScanNode) explain() (string, []string, []node) {
	return "CTE Scan on " + n.def.name, nil, []node{n.def.node}
}

// workTableNode is the recursive reference inside a recursive CTE.
type workTableNode struct {
	nodeStats
	def *cteDef
}

type workKey struct{ def *cteDef }

func (n *workTableNode) open(ec *evalCtx) (iter, error) {
	return &sliceIter{rows: ec.run.subs[workKey{n.def}]}, nil
}
func (n *workTableNode) explain() (string, []string, []node) {
	return "WorkTable Scan on " + n.def.name, nil, nil
}

// runRecursive evaluates WITH RECURSIVE: the initial rows, then the
// recursive term over the previous round's rows until it yields none
// (UNION drops rows already seen).
func runRecursive(def *cteDef, ec *evalCtx) ([][]any, error) {
	rows, _, err := materialize(def.initial, ec)
	if err != nil {
		return nil, err
	}
	union := def.node.(*setOpNode)
	seen := map[string]bool{}
	var all [][]any
	add := func(rs [][]any) [][]any {
		var fresh [][]any
		for _, r := range rs {
			if !union.all {
				k := rowKey(r, nil)
				if seen[k] {
					continue
				}
				seen[k] = true
			}
			fresh = append(fresh, r)
		}
		all = append(all, fresh...)
		return fresh
	}
	work := add(rows)
	for len(work) > 0 {
		if err := canceled(ec); err != nil {
			return nil, err
		}
		ec.run.setSub(workKey{def}, work)
		next, _, err := materialize(def.step, ec)
		if err != nil {
			return nil, err
		}
		work = add(next)
	}
	return all, nil
}

// lateralNode runs a LATERAL subquery for each left row, with the left
// row as its outer row.
type lateralNode struct {
	nodeStats
	l, sub node
	lw, rw int
	on     *Expr
	left   bool // LEFT JOIN LATERAL: unmatched left rows with NULLs
}

func (n *lateralNode) open(ec *evalCtx) (iter, error) {
	lit, err := openNode(n.l, ec)
	if err != nil {
		return nil, err
	}
	var pending [][]any
	return &funcIter{nextf: func() ([]any, error) {
		for {
			if len(pending) > 0 {
				r := pending[0]
				pending = pending[1:]
				return r, nil
			}
			lr, err := lit.next()
			if err != nil {
				return nil, err
			}
			rows, held, err := materialize(n.sub, ec.withOuter(lr))
			if err != nil {
				return nil, err
			}
			ec.release(held)
			for _, rr := range rows {
				row := append(append(make([]any, 0, n.lw+n.rw), lr...), rr...)
				if n.on != nil {
					v, err := n.on.eval(ec, row)
					if err != nil {
						return nil, err
					}
					if v != true {
						continue
					}
				}
				pending = append(pending, row)
			}
			if len(pending) == 0 && n.left {
				pending = append(pending, append(append(make([]any, 0, n.lw+n.rw), lr...), make([]any, n.rw)...))
			}
		}
	}, closef: lit.close}, nil
}

func (n *lateralNode) explain() (string, []string, []node) {
	return "Nested Loop (LATERAL)", nil, []node{n.l, n.sub}
}
