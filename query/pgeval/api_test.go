package pgeval

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

func bigTable(n int) *memRel {
	r := &memRel{cols: []pgtypes.Column{{Name: "k", OID: pgtypes.OIDInt8}, {Name: "v", OID: pgtypes.OIDText}, {Name: "w", OID: pgtypes.OIDText}}}
	for i := 0; i < n; i++ {
		r.rows = append(r.rows, []any{int64(i), "v", nil})
	}
	return r
}

func prepare(t *testing.T, env *Env, sql string, params ...uint32) *Plan {
	t.Helper()
	p, err := Prepare(context.Background(), parseOne(t, sql), env, params)
	if err != nil {
		t.Fatalf("prepare %q: %v", sql, err)
	}
	return p
}

func drain(t *testing.T, p *Plan, env *Env, args ...any) [][]any {
	t.Helper()
	rows, err := p.Run(context.Background(), env, args)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	defer rows.Close()
	var out [][]any
	for {
		r, err := rows.Next(context.Background())
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		out = append(out, r)
	}
}

// A scan, filter, projection and limit stream: the relation hands out
// only the rows the LIMIT needs, and hears of the limit, the filter and
// the columns used.
func TestStreamingAndPushdown(t *testing.T) {
	rel := bigTable(100000)
	env := testEnv(&memCatalog{rels: map[string]Relation{"public.big": rel}})
	p := prepare(t, env, "SELECT k FROM big WHERE v = 'v' LIMIT 3")
	if got := drain(t, p, env); len(got) != 3 {
		t.Fatalf("got %d rows", len(got))
	}
	if rel.yielded > 3 {
		t.Fatalf("the scan yielded %d rows for LIMIT 3", rel.yielded)
	}
	req := rel.scans[0]
	if len(req.Filters) != 1 || req.Filters[0].Expr.String() != "(v = 'v'::text)" {
		t.Fatalf("filters %v", req.Filters)
	}
	if !req.Needed[0] || !req.Needed[1] || req.Needed[2] {
		t.Fatalf("needed %v", req.Needed)
	}
	if req.Limit != -1 {
		t.Fatalf("a non-exact filter must keep the limit from the scan, got %d", req.Limit)
	}
	rel.scans, rel.yielded = nil, 0
	p = prepare(t, env, "SELECT k FROM big LIMIT $1 OFFSET 2", pgtypes.OIDInt8)
	if got := drain(t, p, env, int64(5)); len(got) != 5 || got[0][0] != int64(2) {
		t.Fatalf("got %v", got)
	}
	if rel.scans[0].Limit != 7 {
		t.Fatalf("pushed limit %d, want 7", rel.scans[0].Limit)
	}
	// A sort needs every row and stays within the budget.
	env.SortBudget = 1 << 16
	p = prepare(t, env, "SELECT k FROM big ORDER BY v, k DESC")
	if _, err := p.Run(context.Background(), env, nil); err == nil || sqlstate.AsError(err).Code != "53200" {
		t.Fatalf("want 53200, got %v", err)
	}
}

// An ORDER BY on an Ordered relation's order needs no sort.
func TestOrderedRelation(t *testing.T) {
	rel := bigTable(10)
	env := testEnv(&memCatalog{rels: map[string]Relation{"public.big": orderedRel{rel}}})
	rel.ordering = []int{0}
	p := prepare(t, env, "SELECT k FROM big ORDER BY k DESC LIMIT 2")
	if strings.Contains(strings.Join(p.Explain(ExplainPlan), "\n"), "Sort") {
		t.Fatalf("unexpected sort:\n%s", strings.Join(p.Explain(ExplainPlan), "\n"))
	}
	got := drain(t, p, env)
	if len(got) != 2 || got[0][0] != int64(9) || !rel.scans[0].Reverse || rel.scans[0].Limit != 2 {
		t.Fatalf("got %v, request %+v", got, rel.scans[0])
	}
}

func TestParamsInferred(t *testing.T) {
	env := testEnv(&memCatalog{rels: map[string]Relation{"public.big": bigTable(3)}})
	p := prepare(t, env, "SELECT $1, k FROM big WHERE k = $2 AND v LIKE $3")
	want := []uint32{pgtypes.OIDText, pgtypes.OIDInt8, pgtypes.OIDText}
	for i, o := range p.Params() {
		if o != want[i] {
			t.Fatalf("params %v, want %v", p.Params(), want)
		}
	}
	got := drain(t, p, env, "x", int64(1), "v%")
	if len(got) != 1 || got[0][0] != "x" || got[0][1] != int64(1) {
		t.Fatalf("got %v", got)
	}
	// A declared parameter type wins.
	p = prepare(t, env, "SELECT $1 + 1", pgtypes.OIDInt8)
	if p.Columns()[0].OID != pgtypes.OIDInt8 {
		t.Fatalf("columns %v", p.Columns())
	}
}

func TestCompileExpr(t *testing.T) {
	env := testEnv(nil)
	scope := []pgtypes.Column{{Name: "a", OID: pgtypes.OIDInt4}, {Name: "info:rank", OID: pgtypes.OIDInt8}}
	n := parseOne(t, `SELECT "info:rank" + a * $1`).GetSelectStmt().TargetList[0].GetResTarget().Val
	e, err := CompileExpr(n, scope, env, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.OID() != pgtypes.OIDInt8 || len(e.Params()) != 1 || e.Params()[0] != pgtypes.OIDInt4 {
		t.Fatalf("oid %d params %v", e.OID(), e.Params())
	}
	v, err := e.Eval(context.Background(), env, []any{int64(2), int64(10)}, []any{int64(3)})
	if err != nil || v != int64(16) {
		t.Fatalf("got %v, %v", v, err)
	}
	n = parseOne(t, `SELECT nope`).GetSelectStmt().TargetList[0].GetResTarget().Val
	if _, err := CompileExpr(n, scope, env, nil); err == nil || sqlstate.AsError(err).Code != "42703" || sqlstate.AsError(err).Position != 8 {
		t.Fatalf("want 42703 at 8, got %v", err)
	}
}

func TestCast(t *testing.T) {
	cases := []struct {
		v        any
		from, to uint32
		want     any
		code     string
	}{
		{"12", pgtypes.OIDText, pgtypes.OIDInt4, int64(12), ""},
		{"x", pgtypes.OIDText, pgtypes.OIDInt4, nil, "22P02"},
		{int64(70000), pgtypes.OIDInt8, pgtypes.OIDInt2, nil, "22003"},
		{2.5, pgtypes.OIDFloat8, pgtypes.OIDInt8, int64(2), ""},
		{pgtypes.Numeric("2.5"), pgtypes.OIDNumeric, pgtypes.OIDInt8, int64(3), ""},
		{true, pgtypes.OIDBool, pgtypes.OIDText, "true", ""},
		{"{1,NULL}", pgtypes.OIDText, 1007, Array{Elem: pgtypes.OIDInt4, Vals: []any{int64(1), nil}}, ""},
		{int64(1), pgtypes.OIDInt4, pgtypes.OIDDate, nil, "42846"},
	}
	for _, c := range cases {
		got, err := Cast(c.v, c.from, c.to)
		if c.code != "" {
			if err == nil || sqlstate.AsError(err).Code != c.code {
				t.Errorf("Cast(%v): want %s, got %v", c.v, c.code, err)
			}
			continue
		}
		if err != nil || FormatText(c.to, got) != FormatText(c.to, c.want) {
			t.Errorf("Cast(%v) = %v, %v; want %v", c.v, got, err, c.want)
		}
	}
}

// No input may panic the engine: the expressions the drivers sent are
// compiled and run, and every failure is a SQLSTATE error that is not
// internal.
func TestNoPanicsOnDriverExpressions(t *testing.T) {
	cat := &memCatalog{rels: map[string]Relation{}}
	loadFixture(t, cat)
	env := testEnv(cat)
	for _, sql := range []string{
		"SELECT $1::int + $2", "SELECT ARRAY[ARRAY[1]]", "SELECT (1).x", "SELECT generate_series(1, 3) FROM pg_class WHERE generate_series(1,2) > 1",
		"SELECT * FROM (SELECT 1) s(a, b)", "SELECT 1 UNION SELECT 'a'", "SELECT 1 UNION SELECT 1, 2", "SELECT count(*) OVER ()",
		"SELECT max(count(*)) FROM pg_class", "SELECT ''::int", "SELECT 1 ORDER BY 2", "SELECT DISTINCT a FROM (SELECT 1 a) s ORDER BY a + 1",
		"SELECT (SELECT 1, 2)", "SELECT 1 WHERE 1", "SELECT 'x' ~ '('", "SELECT repeat('x', -1)", "SELECT substr('abc', 1, -1)",
		"SELECT '{1,2'::int[]", "SELECT 1 LIMIT -1", "SELECT * FROM pg_class LIMIT 'x'", "SELECT pg_sleep(0)", "WITH RECURSIVE r AS (SELECT 1 UNION SELECT 1 FROM r) SELECT * FROM r",
	} {
		res, err := Prepare(context.Background(), parseOne(t, sql), env, nil)
		if err == nil {
			var rows Rows
			rows, err = res.Run(context.Background(), env, make([]any, len(res.Params())))
			for err == nil {
				_, err = rows.Next(context.Background())
			}
			if err == io.EOF {
				continue
			}
		}
		if se := sqlstate.AsError(err); se.Code == sqlstate.CodeInternal {
			t.Errorf("%s: internal error %v", sql, err)
		}
	}
}

// Columns read only by a function in FROM, by an ON clause or inside an
// aggregate are still requested from the scan.
func TestNeededColumns(t *testing.T) {
	arr := &memRel{cols: []pgtypes.Column{{Name: "id", OID: pgtypes.OIDInt4}, {Name: "arr", OID: 1007}, {Name: "x", OID: pgtypes.OIDText}}}
	arr.rows = [][]any{{int64(1), Array{Elem: pgtypes.OIDInt4, Vals: []any{int64(7), int64(8)}}, "a"}}
	other := &memRel{cols: []pgtypes.Column{{Name: "k", OID: pgtypes.OIDInt4}, {Name: "y", OID: pgtypes.OIDText}}}
	other.rows = [][]any{{int64(1), "b"}}
	env := testEnv(&memCatalog{rels: map[string]Relation{"public.a": arr, "public.o": other}})
	p := prepare(t, env, "SELECT u FROM a, unnest(a.arr) u")
	if got := drain(t, p, env); len(got) != 2 || got[1][0] != int64(8) {
		t.Fatalf("got %v", got)
	}
	if n := arr.scans[0].Needed; n[0] || !n[1] || n[2] {
		t.Fatalf("needed %v", n)
	}
	arr.scans = nil
	p = prepare(t, env, "SELECT sum(o.k) FROM a JOIN o ON a.id = o.k")
	if got := drain(t, p, env); len(got) != 1 || got[0][0] != int64(1) {
		t.Fatalf("got %v", got)
	}
	if n := arr.scans[0].Needed; !n[0] || n[1] || n[2] {
		t.Fatalf("needed %v", n)
	}
	if n := other.scans[0].Needed; !n[0] || n[1] {
		t.Fatalf("needed %v", n)
	}
	if e := strings.Join(p.Explain(ExplainPlan), "\n"); !strings.Contains(e, "Hash Join") {
		t.Fatalf("explain:\n%s", e)
	}
}
