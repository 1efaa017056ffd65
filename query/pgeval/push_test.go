package pgeval

import (
	"context"
	"fmt"
	"io"
	"math/big"
	"strings"
	"testing"

	"github.com/cellardb/cellar/query/pgtypes"
)

// exactRel is a memRel that says it applies every filter exactly.
type exactRel struct{ *memRel }

func (r exactRel) Exact(Filter) bool { return true }

// aggRel is an exactRel that aggregates its rows itself (Aggregator),
// or declines at run time when handled is false.
type aggRel struct {
	*memRel
	handled bool
	reqs    *[]AggregateRequest
}

func (r aggRel) Exact(Filter) bool { return true }

func (r aggRel) CanAggregate(AggregateRequest) bool { return true }

func (r aggRel) Aggregate(ctx context.Context, req AggregateRequest) (Rows, bool, error) {
	*r.reqs = append(*r.reqs, req)
	if !r.handled {
		return nil, false, nil
	}
	type group struct {
		keys []any
		rows [][]any
	}
	groups := map[string]*group{}
	var order []*group
rows:
	for _, row := range r.rows {
		for _, f := range req.Filters {
			v, err := f.Expr.Eval(ctx, req.Env, row, req.Args)
			if err != nil {
				return nil, true, err
			}
			if v != true {
				continue rows
			}
		}
		var keys []any
		for _, g := range req.GroupBy {
			keys = append(keys, row[g])
		}
		k := fmt.Sprint(keys...)
		if len(keys) == 0 {
			k = ""
		}
		if groups[k] == nil {
			groups[k] = &group{keys: keys}
			order = append(order, groups[k])
		}
		groups[k].rows = append(groups[k].rows, row)
	}
	if len(req.GroupBy) == 0 && len(order) == 0 {
		order = append(order, &group{})
	}
	var out [][]any
	for _, g := range order {
		res := append([]any{}, g.keys...)
		for _, a := range req.Aggs {
			res = append(res, r.agg(a, g.rows))
		}
		out = append(out, res)
	}
	return &memRows{r: r.memRel, rows: out}, true, nil
}

// agg computes one aggregate with the result types of the contract.
func (r aggRel) agg(a AggCall, rows [][]any) any {
	var vals []any
	for _, row := range rows {
		if a.Arg < 0 {
			vals = append(vals, true)
		} else if row[a.Arg] != nil {
			vals = append(vals, row[a.Arg])
		}
	}
	if a.Func == "count" {
		return int64(len(vals))
	}
	if len(vals) == 0 {
		return nil
	}
	oid := r.cols[a.Arg].OID
	switch a.Func {
	case "min", "max":
		best := vals[0]
		for _, v := range vals[1:] {
			if c := compareValues(v, best); (a.Func == "min" && c < 0) || (a.Func == "max" && c > 0) {
				best = v
			}
		}
		return best
	}
	switch oid {
	case pgtypes.OIDInt2, pgtypes.OIDInt4:
		var s int64
		for _, v := range vals {
			s += v.(int64)
		}
		return s
	case pgtypes.OIDFloat4, pgtypes.OIDFloat8:
		var s float64
		for _, v := range vals {
			s += v.(float64)
		}
		if oid == pgtypes.OIDFloat4 {
			return float64(float32(s))
		}
		return s
	}
	s, scale := new(big.Rat), 0
	for _, v := range vals {
		switch x := v.(type) {
		case int64:
			s.Add(s, new(big.Rat).SetInt64(x))
		case pgtypes.Numeric:
			s.Add(s, toRat(x))
			scale = max(scale, numScale(x))
		}
	}
	return pgtypes.Numeric(s.FloatString(scale))
}

func aggTable() *memRel {
	r := &memRel{cols: []pgtypes.Column{
		{Name: "k", OID: pgtypes.OIDInt8}, {Name: "g", OID: pgtypes.OIDText}, {Name: "a", OID: pgtypes.OIDInt4},
		{Name: "b", OID: pgtypes.OIDInt8}, {Name: "n", OID: pgtypes.OIDNumeric}, {Name: "f", OID: pgtypes.OIDFloat8},
		{Name: "r", OID: pgtypes.OIDFloat4},
	}}
	add := func(vals ...any) { r.rows = append(r.rows, vals) }
	add(int64(1), "x", int64(1), int64(10), pgtypes.Numeric("1.5"), 0.5, 0.25)
	add(int64(2), "x", int64(2), int64(20), pgtypes.Numeric("2.25"), 1.5, 0.5)
	add(int64(3), "y", int64(7), int64(9223372036854775807), pgtypes.Numeric("-3"), 2.0, nil)
	add(int64(4), "y", nil, int64(5), nil, nil, 1.0)
	add(int64(5), nil, int64(4), nil, pgtypes.Numeric("10.125"), 3.25, 2.5)
	add(int64(6), nil, int64(5), int64(-1), pgtypes.Numeric("0"), -1.0, nil)
	add(int64(7), "z", nil, nil, nil, nil, nil)
	return r
}

func runText(t *testing.T, env *Env, sql string, args ...any) string {
	t.Helper()
	p, err := Prepare(context.Background(), parseOne(t, sql), env, nil)
	if err != nil {
		return fmtErr(err)
	}
	var b strings.Builder
	for _, c := range p.Columns() {
		b.WriteString(c.Name + ":" + typeShortName(c.OID) + " ")
	}
	b.WriteString("\n")
	rows, err := p.Run(context.Background(), env, args)
	if err != nil {
		return b.String() + fmtErr(err)
	}
	defer rows.Close()
	for {
		r, err := rows.Next(context.Background())
		if err == io.EOF {
			return b.String()
		}
		if err != nil {
			return b.String() + fmtErr(err)
		}
		for i, v := range r {
			if v == nil {
				b.WriteString("NULL | ")
			} else {
				b.WriteString(FormatText(p.Columns()[i].OID, v) + " | ")
			}
		}
		b.WriteString("\n")
	}
}

func explainText(t *testing.T, env *Env, sql string) string {
	t.Helper()
	return strings.Join(prepare(t, env, sql).Explain(ExplainPlan), "\n")
}

// Aggregates pushed into an Aggregator give exactly what the engine's
// own aggregation gives over the same rows; a relation that declines at
// run time gets its rows aggregated here.
func TestAggregatePushdown(t *testing.T) {
	data := aggTable()
	var reqs []AggregateRequest
	plain := testEnv(&memCatalog{rels: map[string]Relation{"public.t": data}})
	pushed := testEnv(&memCatalog{rels: map[string]Relation{"public.t": aggRel{memRel: data, handled: true, reqs: &reqs}}})
	declined := testEnv(&memCatalog{rels: map[string]Relation{"public.t": aggRel{memRel: data, handled: false, reqs: &reqs}}})
	for _, c := range []struct {
		sql  string
		push bool
	}{
		{"SELECT count(*), count(a), sum(a), avg(a), min(a), max(a) FROM t", true},
		{"SELECT g, count(*), sum(b), avg(b), avg(n), sum(n), min(g), max(f), avg(f), sum(f), sum(r), min(r) FROM t GROUP BY g ORDER BY g", true},
		{"SELECT g, avg(a) FROM t GROUP BY g HAVING count(*) > 1 ORDER BY avg(a) DESC NULLS LAST, g", true},
		{"SELECT g, max(a) - min(a) AS spread FROM t GROUP BY g ORDER BY spread DESC NULLS LAST, g LIMIT 2 OFFSET 1", true},
		{"SELECT g FROM t GROUP BY g ORDER BY 1 NULLS FIRST", true},
		{"SELECT g, a, count(*) FROM t GROUP BY g, a ORDER BY count(*) DESC, g, a", true},
		{"SELECT DISTINCT count(*) FROM t GROUP BY g ORDER BY 1", true},
		{"SELECT count(*), count(a), sum(a), avg(a), min(g), avg(f) FROM t WHERE k > 1000", true},
		{"SELECT g, count(*) FROM t WHERE k > 1000 GROUP BY g", true},
		{"SELECT count(*) FROM t WHERE k > 1000 HAVING count(*) > 0", true},
		{"SELECT avg(a), avg(b)::text, sum(b) FROM t WHERE k IN (1, 2)", true},
		{"SELECT sum(b) FROM t", true},
		{"SELECT g, (SELECT count(*) FROM t u WHERE u.g = t.g) FROM t GROUP BY g ORDER BY g", true},
		// Not pushed: the engine aggregates.
		{"SELECT count(DISTINCT a) FROM t", false},
		{"SELECT sum(a) FILTER (WHERE k > 2) FROM t", false},
		{"SELECT avg(r) FROM t", false},
		{"SELECT sum(a + 1), count(1) FROM t", false},
		{"SELECT string_agg(g, ',' ORDER BY g) FROM t", false},
		{"SELECT lower(g), count(*) FROM t GROUP BY lower(g) ORDER BY 1", false},
		{"SELECT g, count(*), row_number() OVER (ORDER BY g) FROM t GROUP BY g", false},
		{"SELECT count(*), generate_series(1, 2) FROM t", false},
		{"SELECT count(*) FROM t WHERE k IN (SELECT k FROM t)", false},
		{"SELECT count(*) FROM t, t u", false},
	} {
		want := runText(t, plain, c.sql)
		if strings.HasPrefix(strings.SplitN(want, "\n", 2)[1], "error") {
			t.Errorf("%s: %s", c.sql, want)
			continue
		}
		reqs = nil
		if got := runText(t, pushed, c.sql); got != want {
			t.Errorf("%s pushed:\n%s\nwant:\n%s", c.sql, got, want)
		}
		if (len(reqs) > 0) != c.push {
			t.Errorf("%s: pushed %v, want %v", c.sql, len(reqs) > 0, c.push)
		}
		if got := runText(t, declined, c.sql); got != want {
			t.Errorf("%s declined:\n%s\nwant:\n%s", c.sql, got, want)
		}
		if e := explainText(t, pushed, c.sql); strings.Contains(e, "partial aggregates") != c.push {
			t.Errorf("%s: explain\n%s", c.sql, e)
		}
	}
	// avg of ints is numeric with PostgreSQL's scale.
	if got := runText(t, pushed, "SELECT avg(a) FROM t WHERE k <= 2"); !strings.Contains(got, "1.5000000000000000 |") {
		t.Errorf("avg: %s", got)
	}
	// avg is asked for as sum and count; shared requests are made once.
	reqs = nil
	runText(t, pushed, "SELECT g, avg(a), sum(a), count(a), max(k) FROM t WHERE k > $1 GROUP BY g", int64(0))
	r := reqs[0]
	if fmt.Sprint(r.GroupBy) != "[1]" || fmt.Sprint(r.Aggs) != "[{sum 2} {count 2} {max 0}]" || len(r.Filters) != 1 || len(r.Args) != 1 {
		t.Errorf("request %+v", r)
	}
	e := explainText(t, pushed, "SELECT g, count(*) FROM t WHERE k > 1 GROUP BY g")
	want := "Aggregate (partial aggregates on the relation)\n  Group Key: g\n  ->  Memory Scan\n        Rows: 7"
	if e != want {
		t.Errorf("explain:\n%s\nwant:\n%s", e, want)
	}
	// EXPLAIN ANALYZE: the scan under a pushed aggregate never runs.
	p := prepare(t, pushed, "SELECT g, count(*) FROM t GROUP BY g")
	rows, err := p.RunAnalyzed(context.Background(), pushed, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := rows.Next(context.Background()); err == nil; _, err = rows.Next(context.Background()) {
	}
	rows.Close()
	if e := strings.Join(p.Explain(ExplainAnalyze), "\n"); !strings.Contains(e, "rows=4 loops=1)") || !strings.Contains(e, "->  Memory Scan (never executed)") {
		t.Errorf("explain analyze:\n%s", e)
	}
}

// Columns past StarColumns() are reached by name only.
type starRel struct {
	*memRel
	star int
}

func (r starRel) StarColumns() int { return r.star }

func TestStarColumns(t *testing.T) {
	s := &memRel{cols: []pgtypes.Column{{Name: "k", OID: pgtypes.OIDText}, {Name: "v", OID: pgtypes.OIDInt4}, {Name: "anchor:x", OID: pgtypes.OIDText}}}
	s.rows = [][]any{{"a", int64(1), "ax"}, {"b", int64(2), nil}}
	o := &memRel{cols: []pgtypes.Column{{Name: "k", OID: pgtypes.OIDText}, {Name: "anchor:x", OID: pgtypes.OIDText}}}
	o.rows = [][]any{{"a", "zz"}, {"b", nil}}
	env := testEnv(&memCatalog{rels: map[string]Relation{"public.s": starRel{s, 2}, "public.o": o}})
	for _, c := range []struct{ sql, want string }{
		{`SELECT *, "anchor:x" FROM s ORDER BY k`, "k:text v:int4 anchor:x:text \na | 1 | ax | \nb | 2 | NULL | \n"},
		{`SELECT s.* FROM s ORDER BY k`, "k:text v:int4 \na | 1 | \nb | 2 | \n"},
		{`SELECT row_to_json(s) FROM s ORDER BY k`, "row_to_json:json \n{\"k\":\"a\",\"v\":1} | \n{\"k\":\"b\",\"v\":2} | \n"},
		{`SELECT * FROM s NATURAL JOIN o ORDER BY k`, "k:text v:int4 anchor:x:text \na | 1 | zz | \nb | 2 | NULL | \n"},
		{`SELECT * FROM s JOIN o USING ("anchor:x")`, "k:text v:int4 k:text anchor:x:text \nerror 42703: column \"anchor:x\" specified in USING clause does not exist in left table\n"},
		{`SELECT x.a, x."anchor:x" FROM s AS x(a, b) WHERE x."anchor:x" IS NOT NULL`, "a:text anchor:x:text \na | ax | \n"},
		{`SELECT * FROM s AS x(a, b, c)`, "error 42P10: table \"x\" has 2 columns available but 3 columns specified\n"},
		{`SELECT count("anchor:x") FROM s`, "count:int8 \n1 | \n"},
	} {
		got := runText(t, env, c.sql)
		if strings.HasPrefix(c.want, "error") {
			got = strings.SplitN(got, "\n", 2)[0] + "\n"
		}
		if strings.Contains(c.want, "USING") {
			c.want = strings.SplitN(c.want, "\n", 2)[1]
			got = runText(t, env, c.sql)
		}
		if got != c.want {
			t.Errorf("%s:\n%s\nwant:\n%s", c.sql, got, c.want)
		}
	}
}

// explainRel describes its scans and applies filters on k exactly.
type explainRel struct{ *memRel }

func (r explainRel) Exact(f Filter) bool { return strings.HasPrefix(f.Expr.String(), "(k ") }

func (r explainRel) Explain(req ScanRequest) []string {
	out := []string{"Scan webtable", "  Row ranges: the whole table"}
	for _, f := range req.Filters {
		if r.Exact(f) {
			out = append(out, "  Tablet-server filter: "+f.Expr.String())
		}
	}
	if req.Limit >= 0 {
		out = append(out, fmt.Sprintf("  Scan limit: %d rows", req.Limit))
	}
	return out
}

func TestExplainRelation(t *testing.T) {
	w := &memRel{cols: []pgtypes.Column{{Name: "k", OID: pgtypes.OIDText}, {Name: "c:n", OID: pgtypes.OIDInt8}, {Name: "User", OID: pgtypes.OIDText}, {Name: "order", OID: pgtypes.OIDInt4}}}
	env := testEnv(&memCatalog{rels: map[string]Relation{"public.webtable": explainRel{w}, "public.plain": w}})
	for _, c := range []struct{ sql, want string }{
		{`SELECT k FROM webtable WHERE k >= 'a' AND "c:n" > 1 LIMIT 5`,
			"Limit\n  ->  Scan webtable\n        Row ranges: the whole table\n        Tablet-server filter: (k >= 'a'::text)\n        Filter: (\"c:n\" > 1)"},
		{`SELECT k FROM webtable WHERE k >= 'a' LIMIT 5`,
			"Limit\n  ->  Scan webtable\n        Row ranges: the whole table\n        Tablet-server filter: (k >= 'a'::text)\n        Scan limit: 5 rows"},
		{`SELECT w."User", "order" FROM webtable w WHERE "User" = 'x' ORDER BY "order"`,
			"Sort\n  Sort Key: \"order\"\n  ->  Scan webtable w\n        Row ranges: the whole table\n        Filter: (\"User\" = 'x'::text)"},
		{`SELECT * FROM webtable WHERE k >= 'a' ORDER BY "c:n" DESC, 1`,
			"Sort\n  Sort Key: \"c:n\" DESC, k\n  ->  Scan webtable\n        Row ranges: the whole table\n        Tablet-server filter: (k >= 'a'::text)"},
		{`SELECT k FROM plain WHERE k >= 'a' AND "c:n" > 1`,
			"Memory Scan\n  Rows: 0\n  Filter: (k >= 'a'::text) AND (\"c:n\" > 1)"},
	} {
		if got := explainText(t, env, c.sql); got != c.want {
			t.Errorf("%s:\n%s\nwant:\n%s", c.sql, got, c.want)
		}
	}
}

// orderedExactRel is sorted by its first column, can scan backwards and
// applies every filter exactly.
type orderedExactRel struct{ *memRel }

func (r orderedExactRel) Ordering() []int   { return []int{0} }
func (r orderedExactRel) CanReverse() bool  { return true }
func (r orderedExactRel) Exact(Filter) bool { return true }

// A LIMIT under an ORDER BY on an Ordered relation's order reaches the
// scan, and nothing sorts.
func TestLimitOnOrder(t *testing.T) {
	rel := bigTable(1000)
	env := testEnv(&memCatalog{rels: map[string]Relation{"public.t": orderedExactRel{rel}, "public.u": exactRel{rel}}})
	for _, c := range []struct {
		sql     string
		args    []any
		limit   int64
		reverse bool
		first   int64
		n       int
	}{
		{"SELECT * FROM t WHERE k >= $1 ORDER BY k LIMIT 100", []any{int64(10)}, 100, false, 10, 100},
		{"SELECT * FROM t WHERE k >= $1 ORDER BY k LIMIT 100 OFFSET 5", []any{int64(10)}, 105, false, 15, 100},
		{"SELECT k, v FROM t WHERE k >= $1 ORDER BY k DESC LIMIT 3", []any{int64(10)}, 3, true, 999, 3},
		{"SELECT k FROM t WHERE k >= $1 ORDER BY 1 DESC LIMIT $2 OFFSET $3", []any{int64(10), int64(3), int64(2)}, 5, true, 997, 3},
		{"SELECT * FROM t WHERE k >= $1 ORDER BY k LIMIT 100 OFFSET 985", []any{int64(10)}, 1085, false, 995, 5},
	} {
		rel.scans, rel.yielded = nil, 0
		p, err := Prepare(context.Background(), parseOne(t, c.sql), env, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		if e := strings.Join(p.Explain(ExplainPlan), "\n"); strings.Contains(e, "Sort") {
			t.Errorf("%s: unexpected sort\n%s", c.sql, e)
		}
		got := drain(t, p, env, c.args...)
		req := rel.scans[0]
		if len(got) == 0 {
			t.Errorf("%s: no rows, request %+v", c.sql, req)
			continue
		}
		if req.Limit != c.limit || req.Reverse != c.reverse || len(got) != c.n || got[0][0] != c.first {
			t.Errorf("%s: limit %d reverse %v, %d rows from %v", c.sql, req.Limit, req.Reverse, len(got), got[0][0])
		}
		if int64(rel.yielded) > c.limit+10 { // the scan's first 10 rows fail k >= 10
			t.Errorf("%s: the scan yielded %d rows", c.sql, rel.yielded)
		}
	}
	// Not on the order: a sort, and the scan reads everything.
	rel.scans = nil
	p := prepare(t, env, "SELECT * FROM u WHERE k >= 10 ORDER BY k LIMIT 100")
	if e := strings.Join(p.Explain(ExplainPlan), "\n"); !strings.Contains(e, "Sort") {
		t.Errorf("want a sort:\n%s", e)
	}
	if got := drain(t, p, env); len(got) != 100 || got[0][0] != int64(10) || rel.scans[0].Limit != -1 {
		t.Errorf("got %d rows, limit %d", len(got), rel.scans[0].Limit)
	}
}

// A pg_node_tree argument fits a text parameter (pg_get_expr(adbin,
// adrelid)).
func TestNodeTreeToText(t *testing.T) {
	rel := &memRel{cols: []pgtypes.Column{{Name: "adbin", OID: OIDPgNodeTree}, {Name: "adrelid", OID: OIDOid}}}
	rel.rows = [][]any{{"{CONST :consttype 23}", int64(1)}}
	env := testEnv(&memCatalog{rels: map[string]Relation{"public.d": rel}})
	got := runText(t, env, "SELECT length(adbin), pg_get_expr(adbin, adrelid) IS NOT NULL FROM d")
	if got != "length:int4 ?column?:bool \n21 | t | \n" {
		t.Fatalf("got %q", got)
	}
}
