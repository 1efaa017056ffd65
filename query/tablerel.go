package query

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/query/catalog"
	"github.com/cellardb/cellar/query/pgeval"
	"github.com/cellardb/cellar/query/pgtypes"
)

// tableRel is a user table as the evaluator sees it: a relation whose
// scans go to the tablet servers. It turns the query's key predicates
// into row ranges and its LIMIT into the scan's, and overlays the
// session's buffered transaction writes.
type tableRel struct {
	s     *Session
	name  string
	codec *rowCodec
	// cat is the statement's catalog (its AS OF time).
	cat *stmtCatalog
	// params are the statement's parameter types, for the constant sides
	// of key predicates; set once the statement is prepared.
	params *[]uint32
	terms  map[*pg.Node]*pgeval.Expr
	// point is plan's analysis of a lone filter: term is the constant
	// side if node is an equality of the one key column, else nil.
	point struct{ node, term *pg.Node }
	// stats sums the reads' statistics under EXPLAIN ANALYZE.
	stats ReadStats
}

func (r *tableRel) Columns() []pgtypes.Column { return r.codec.columns() }

// Ordering: rows come in row-key order, which is the key columns' order:
// a single TEXT or BYTEA key is the row key itself, compared bytewise as
// the evaluator compares text (the C collation), and the encoding of
// other keys preserves order.
func (r *tableRel) Ordering() []int { return r.codec.keyIdx }

// CanReverse: the tablet servers scan backwards, so ORDER BY the key
// DESC needs no sort either.
func (r *tableRel) CanReverse() bool { return true }

func (r *tableRel) filter() ReadFilter {
	f := ReadFilter{MaxVersions: 1}
	if r.cat != nil && r.cat.asOf != 0 {
		f.TimeRange = model.TimeRange{End: r.cat.asOf + 1}
	}
	if r.cat != nil && r.cat.analyze {
		f.Stats = &r.stats
	}
	return f
}

// plan returns the row ranges for a scan request.
func (r *tableRel) plan(ctx context.Context, req pgeval.ScanRequest) (rangeSet, error) {
	var one [1]*pg.Node
	conj := one[:0]
	for _, f := range req.Filters {
		if n, ok := f.Node.(*pg.Node); ok {
			conj = append(conj, n)
		}
	}
	if len(conj) == 0 || len(r.codec.keyIdx) == 0 {
		return full(), nil
	}
	key := r.codec.cols[r.codec.keyIdx[0]]
	if len(conj) == 1 && len(r.codec.keyIdx) == 1 {
		// A prepared point lookup runs this at every execution: its one
		// equality is recognized once, and only its constant evaluated.
		if r.point.node != conj[0] {
			r.point.node, r.point.term = conj[0], keyEquality(conj[0], key.Name)
		}
		if t := r.point.term; t != nil {
			k, null, ok, err := r.keyTerm(ctx, req, key, t)
			switch {
			case err != nil:
				return nil, err
			case ok && null:
				return nil, nil
			case ok:
				return rangeSet{oneRow(k)}, nil
			}
		}
	}
	a := &keyAnalyzer{column: key.Name, raw: r.codec.raw, prefixOnly: len(r.codec.keyIdx) > 1,
		term: func(n *pg.Node) ([]byte, bool, bool, error) { return r.keyTerm(ctx, req, key, n) }}
	return a.ranges(conj)
}

// keyTerm is the keyAnalyzer's keyTerm for the first key column.
func (r *tableRel) keyTerm(ctx context.Context, req pgeval.ScanRequest, key catalog.Column, n *pg.Node) ([]byte, bool, bool, error) {
	if !isConstant(n) {
		return nil, false, false, nil
	}
	e, err := r.term(n, req.Env)
	if err != nil {
		return nil, false, false, nil // the filter itself reports it
	}
	if r.codec.raw {
		return constantKey(ctx, e, req.Env, req.Args, catalog.TypeOID(key.Type), rawKey)
	}
	return constantKey(ctx, e, req.Env, req.Args, catalog.TypeOID(key.Type), func(v any) ([]byte, bool) {
		k, err := model.AppendKeyValue(nil, key.Type, toModel(v))
		return k, err == nil
	})
}

// term compiles the constant side of a key predicate, once per
// statement: a prepared statement's executions reuse it.
func (r *tableRel) term(n *pg.Node, env *pgeval.Env) (*pgeval.Expr, error) {
	if e, ok := r.terms[n]; ok {
		return e, nil
	}
	var params []uint32
	if r.params != nil {
		params = *r.params
	}
	e, err := pgeval.CompileExpr(n, nil, env, params)
	if err != nil {
		return nil, err
	}
	if r.terms == nil {
		r.terms = map[*pg.Node]*pgeval.Expr{}
	}
	r.terms[n] = e
	return e, nil
}

// Exact reports whether the row ranges apply a filter exactly — a key
// predicate with constant operands — so that a LIMIT still goes down to
// the scan.
func (r *tableRel) Exact(f pgeval.Filter) bool {
	n, ok := f.Node.(*pg.Node)
	if !ok {
		return false
	}
	if len(r.codec.keyIdx) > 0 && exactKeyPredicate(n, r.codec.cols[r.codec.keyIdx[0]].Name, r.codec.raw) {
		return true
	}
	return r.pushable(n, r.s.env(r.cat))
}

// exactKeyPredicate: n is a predicate the key analyzer turns into row
// ranges without loss.
func exactKeyPredicate(n *pg.Node, key string, raw bool) bool {
	a := &keyAnalyzer{column: key}
	switch {
	case n.GetBoolExpr() != nil:
		b := n.GetBoolExpr()
		if b.Boolop == pg.BoolExprType_NOT_EXPR {
			return false
		}
		for _, arg := range b.Args {
			if !exactKeyPredicate(arg, key, raw) {
				return false
			}
		}
		return true
	case n.GetAExpr() != nil:
		e := n.GetAExpr()
		op := ""
		if len(e.Name) == 1 {
			op = e.Name[0].GetString_().GetSval()
		}
		switch e.Kind {
		case pg.A_Expr_Kind_AEXPR_OP:
			switch op {
			case "=", "<", "<=", ">", ">=":
			default:
				return false
			}
			return a.isKey(e.Lexpr) && isConstant(e.Rexpr) || a.isKey(e.Rexpr) && isConstant(e.Lexpr)
		case pg.A_Expr_Kind_AEXPR_IN:
			if op != "=" || !a.isKey(e.Lexpr) {
				return false
			}
			for _, item := range e.Rexpr.GetList().GetItems() {
				if !isConstant(item) {
					return false
				}
			}
			return true
		case pg.A_Expr_Kind_AEXPR_BETWEEN:
			items := e.Rexpr.GetList().GetItems()
			return a.isKey(e.Lexpr) && len(items) == 2 && isConstant(items[0]) && isConstant(items[1])
		case pg.A_Expr_Kind_AEXPR_LIKE:
			c := e.Rexpr.GetAConst().GetSval()
			return raw && op == "~~" && a.isKey(e.Lexpr) && c != nil && likePrefix(c.Sval) != ""
		}
	}
	return false
}

// isConstant: n has no column and no subquery, so it evaluates once.
func isConstant(n *pg.Node) bool {
	switch {
	case n == nil:
		return false
	case n.GetAConst() != nil, n.GetParamRef() != nil:
		return true
	case n.GetTypeCast() != nil:
		return isConstant(n.GetTypeCast().Arg)
	case n.GetAExpr() != nil:
		e := n.GetAExpr()
		return e.Kind == pg.A_Expr_Kind_AEXPR_OP && (e.Lexpr == nil || isConstant(e.Lexpr)) && isConstant(e.Rexpr)
	case n.GetFuncCall() != nil:
		for _, a := range n.GetFuncCall().Args {
			if !isConstant(a) {
				return false
			}
		}
		return n.GetFuncCall().AggFilter == nil && n.GetFuncCall().Over == nil && !n.GetFuncCall().AggStar
	}
	return false
}

func (r *tableRel) Scan(ctx context.Context, req pgeval.ScanRequest) (pgeval.Rows, error) {
	ranges, err := r.plan(ctx, req)
	if err != nil {
		return nil, err
	}
	conds, none, err := r.conditions(ctx, req)
	if err != nil {
		return nil, err
	}
	limit := int64(0)
	if req.Limit >= 0 {
		limit = req.Limit
		if limit == 0 {
			none = true
		}
	}
	if none {
		ranges = nil
	}
	f := r.filter()
	f.Conditions = conds
	f.Families = r.families(conds, req.Needed)
	f.ReadableOnly, f.Require = true, r.required(conds, req.Needed)
	buf := r.s.txw.writes(r.name)
	if buf != nil {
		// Buffered writes change what the conditions see: the
		// evaluator checks them on the merged rows instead.
		f.Conditions, f.Families = nil, nil
	}
	if req.Reverse {
		ranges = slices.Clone(ranges)
		slices.Reverse(ranges)
	}
	rows := &tableRows{r: r, ranges: ranges, limit: limit, need: req.Needed, buf: buf, f: f, reverse: req.Reverse}
	if buf != nil {
		rows.recheck, rows.env, rows.args = req.Filters, req.Env, req.Args
	}
	return rows, nil
}

func (r *tableRel) Explain(req pgeval.ScanRequest) []string {
	out := []string{fmt.Sprintf("Scan %s", r.name)}
	ranges, err := r.plan(context.Background(), req)
	switch {
	case err != nil:
		out = append(out, "  Row ranges: decided at execution")
	case len(ranges) == 1 && len(ranges[0].Start) == 0 && len(ranges[0].End) == 0:
		out = append(out, "  Row ranges: the whole table")
	default:
		var rs []string
		for _, rg := range ranges {
			rs = append(rs, rg.String())
		}
		out = append(out, "  Row ranges: "+strings.Join(rs, ", "))
	}
	if err == nil {
		out = append(out, r.explainTablets(ranges)...)
	}
	for _, f := range req.Filters {
		if n, ok := f.Node.(*pg.Node); ok && r.pushable(n, req.Env) && f.Expr != nil {
			out = append(out, "  Tablet-server filter: "+f.Expr.String())
		}
	}
	if req.Reverse {
		out = append(out, "  Order: descending key (a reverse scan)")
	}
	if req.Limit >= 0 {
		out = append(out, fmt.Sprintf("  Scan limit: %d rows", req.Limit))
	}
	if r.cat != nil && r.cat.asOf != 0 {
		out = append(out, fmt.Sprintf("  As of: %d µs", r.cat.asOf))
	}
	if r.cat != nil && r.cat.analyze {
		st := r.stats
		out = append(out, fmt.Sprintf("  Tablet servers read: %d rows, %d cells; %d blocks from files, %d from the block cache; bloom filters checked %d, ruled out %d",
			st.Rows, st.Cells, st.Blocks, st.CacheHits, st.BloomChecks, st.BloomUseful))
	}
	return out
}

// tableRows streams the rows of the ranges, merged with the session's
// buffered writes to the table.
type tableRows struct {
	r      *tableRel
	ranges rangeSet
	limit  int64
	need   []bool
	buf    *tableWrites
	f      ReadFilter
	// reverse: ranges (already reversed) and their rows go in descending
	// key order.
	reverse bool
	// recheck: filters the rows must pass here, because buffered writes
	// were merged after the tablet servers' conditions.
	recheck []pgeval.Filter
	env     *pgeval.Env
	args    []any

	it      RowIterator
	pending []string // buffered keys of the current range not yet merged
	next    *model.Row
	sent    int64
}

func (t *tableRows) Next(ctx context.Context) ([]any, error) {
	for {
		if t.limit > 0 && t.sent >= t.limit {
			return nil, io.EOF
		}
		row, ok, err := t.nextRow(ctx)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, io.EOF
		}
		if len(row.Cells) == 0 {
			continue // deleted by a buffered write
		}
		vals, err := t.r.codec.decode(row, t.recheckNeed())
		if err != nil {
			return nil, err
		}
		pass := true
		for _, f := range t.recheck {
			v, err := f.Expr.Eval(ctx, t.env, vals, t.args)
			if err != nil {
				return nil, err
			}
			if v != true {
				pass = false
				break
			}
		}
		if !pass {
			continue
		}
		t.sent++
		return vals, nil
	}
}

// nextRow merges the tablet servers' rows with buffered ones, by key.
func (t *tableRows) nextRow(ctx context.Context) (model.Row, bool, error) {
	for {
		if t.it == nil {
			if len(t.ranges) == 0 {
				return model.Row{}, false, nil
			}
			rng := t.ranges[0]
			t.ranges = t.ranges[1:]
			lim := int64(0)
			if t.limit > 0 && t.buf == nil {
				lim = t.limit - t.sent
			}
			if key, ok := pointRange(rng); ok {
				t.it = &pointRead{ctx: ctx, kv: t.r.s.kv(), table: t.r.name, key: key, f: t.f}
			} else if t.reverse {
				t.it = t.r.s.kv().ScanReversed(ctx, t.r.name, rng, t.f, lim)
			} else {
				t.it = t.r.s.kv().Scan(ctx, t.r.name, rng, t.f, lim)
			}
			t.pending = t.buf.keysIn(rng)
			if t.reverse {
				slices.Reverse(t.pending)
			}
			t.next = nil
		}
		if t.next == nil {
			if t.it.Next() {
				row := t.it.Row()
				t.next = &row
			} else if err := t.it.Err(); err != nil {
				return model.Row{}, false, kvError(err, false)
			}
		}
		switch {
		case len(t.pending) > 0 && (t.next == nil || t.before(t.pending[0], t.next.Key)):
			k := t.pending[0]
			t.pending = t.pending[1:]
			return t.buf.overlay(model.Row{Key: []byte(k)}), true, nil
		case t.next != nil:
			row := *t.next
			t.next = nil
			if len(t.pending) > 0 && bytes.Equal([]byte(t.pending[0]), row.Key) {
				t.pending = t.pending[1:]
			}
			return t.buf.overlay(row), true, nil
		default:
			t.Close()
			t.it = nil
		}
	}
}

// before reports whether a buffered key comes before a scanned one in
// the scan's order.
func (t *tableRows) before(buffered string, scanned []byte) bool {
	if t.reverse {
		return buffered > string(scanned)
	}
	return buffered < string(scanned)
}

// recheckNeed: filters checked here may read any column.
func (t *tableRows) recheckNeed() []bool {
	if len(t.recheck) > 0 {
		return nil
	}
	return t.need
}

// Close lets an iterator stopped early report what it read.
func (t *tableRows) Close() {
	if c, ok := t.it.(interface{ Close() }); ok {
		c.Close()
	}
}

// families is the projection pushed to the scan: with a condition that
// needs a cell of its column, every row read has one in that column's
// family, so reading only the families the query needs (and the marker's)
// loses no row. Without one, a row may have cells only in families the
// query does not name, and every family is read so that it still shows.
func (r *tableRel) families(conds []model.Condition, need []bool) []string {
	anchored := false
	for _, c := range conds {
		anchored = anchored || c.Op != model.CondIsNull
	}
	if !anchored || need == nil {
		return nil
	}
	set := map[string]bool{catalog.MarkerFamily: true}
	for _, c := range conds {
		set[c.Family] = true
	}
	for i, col := range r.codec.cols {
		if need[i] && !col.Key {
			set[col.Family] = true
		}
	}
	out := make([]string, 0, len(set))
	for f := range set {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// required are the families whose columns a read uses (nil need: all),
// which the session's user must be allowed to read.
func (r *tableRel) required(conds []model.Condition, need []bool) []string {
	// A few families at most: a slice beats a map here, and this runs on
	// every execution of a point query.
	var out []string
	add := func(f string) {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	for _, c := range conds {
		add(c.Family)
	}
	for i, col := range r.codec.cols {
		if (need == nil || need[i]) && !col.Key && col.Family != "" {
			add(col.Family)
		}
	}
	switch len(out) {
	case 0:
		return []string{}
	case 1:
		return out
	}
	slices.Sort(out)
	return out
}

// explainTablets lists the tablets the row ranges fall in (at most 10,
// then how many more), and with EXPLAIN (VERBOSE) their servers.
func (r *tableRel) explainTablets(ranges rangeSet) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var names []string
	seen := map[string]bool{}
	for _, rg := range ranges {
		ts, err := r.s.kv().Tablets(ctx, r.name, rg)
		if err != nil {
			return []string{"  Tablets: unknown (" + err.Error() + ")"}
		}
		for _, t := range ts {
			name := model.RowRange{Start: t.Start, End: t.End}.String()
			if r.cat != nil && r.cat.verbose {
				name += " on " + t.Server
			}
			if !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
	}
	more := ""
	if len(names) > 10 {
		more = fmt.Sprintf(" and %d more", len(names)-10)
		names = names[:10]
	}
	return []string{fmt.Sprintf("  Tablets: %d: %s%s", len(seen), strings.Join(names, ", "), more)}
}

// pointRange reports whether rng holds exactly one row key.
func pointRange(rng model.RowRange) ([]byte, bool) {
	n := len(rng.Start)
	if len(rng.End) != n+1 || rng.End[n] != 0 || !bytes.Equal(rng.Start, rng.End[:n]) {
		return nil, false
	}
	return rng.Start, true
}

// pointRead is a one-row scan done with ReadRow, a unary RPC: a point
// lookup costs one round trip to one tablet server.
type pointRead struct {
	ctx   context.Context
	kv    KV
	table string
	key   []byte
	f     ReadFilter
	row   model.Row
	done  bool
	err   error
}

func (p *pointRead) Next() bool {
	if p.done {
		return false
	}
	p.done = true
	row, found, err := p.kv.ReadRow(p.ctx, p.table, p.key, p.f)
	if err != nil {
		p.err = err
		return false
	}
	p.row = row
	return found
}

func (p *pointRead) Row() model.Row { return p.row }
func (p *pointRead) Err() error     { return p.err }

// StarColumns: * expands to the columns the table shows, not to the
// undeclared qualifiers a statement named, which follow them.
func (r *tableRel) StarColumns() int { return r.codec.visible }
