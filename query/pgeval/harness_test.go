package pgeval

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// memRel is an in-memory relation for tests.
type memRel struct {
	cols     []pgtypes.Column
	rows     [][]any
	ordering []int
	// scans records the requests it was given.
	scans []ScanRequest
	// yielded counts rows handed out, to prove streaming.
	yielded int
}

func (r *memRel) Columns() []pgtypes.Column { return r.cols }

func (r *memRel) Scan(_ context.Context, req ScanRequest) (Rows, error) {
	r.scans = append(r.scans, req)
	rows := r.rows
	if req.Reverse {
		rows = make([][]any, len(r.rows))
		for i := range r.rows {
			rows[i] = r.rows[len(r.rows)-1-i]
		}
	}
	return &memRows{r: r, rows: rows}, nil
}

func (r *memRel) Explain(req ScanRequest) []string {
	return []string{"Memory Scan", fmt.Sprintf("  Rows: %d", len(r.rows))}
}

type memRows struct {
	r    *memRel
	rows [][]any
	i    int
}

func (m *memRows) Next(context.Context) ([]any, error) {
	if m.i >= len(m.rows) {
		return nil, io.EOF
	}
	m.i++
	m.r.yielded++
	return append([]any(nil), m.rows[m.i-1]...), nil
}
func (m *memRows) Close() {}

// orderedRel is a memRel that reports an ordering.
type orderedRel struct{ *memRel }

func (o orderedRel) Ordering() []int  { return o.ordering }
func (o orderedRel) CanReverse() bool { return true }

// memCatalog resolves relations the way the session's catalog does.
type memCatalog struct {
	rels map[string]Relation // "schema.name"
}

func (c *memCatalog) Relation(_ context.Context, schema, name string) (Relation, error) {
	if schema != "" {
		if r, ok := c.rels[schema+"."+name]; ok {
			return r, nil
		}
		return nil, sqlstate.Errorf(sqlstate.CodeUndefinedTable, "relation \"%s.%s\" does not exist", schema, name)
	}
	for _, s := range []string{"pg_catalog", "public"} {
		if r, ok := c.rels[s+"."+name]; ok {
			return r, nil
		}
	}
	return nil, sqlstate.Errorf(sqlstate.CodeUndefinedTable, "relation \"%s\" does not exist", name)
}

// loadFixture reads testdata/catalog.fixture: pg_catalog and
// information_schema relations dumped from PostgreSQL 15 (COPY text
// format) for a database holding hx_bi, hx_child and hx_view.
func loadFixture(t testing.TB, cat *memCatalog) {
	f, err := os.Open("testdata/catalog.fixture")
	if err != nil {
		t.Fatalf("catalog fixture: %v", err)
	}
	defer f.Close()
	var cur *memRel
	var raw [][]string
	flush := func() {
		if cur == nil {
			return
		}
		// A column whose values this package cannot parse as its type
		// is served as text.
		for j := range cur.cols {
			if cur.cols[j].OID == 1034 {
				cur.cols[j].OID = 1009 // aclitem[] served as text[]
			}
			oid := cur.cols[j].OID
			if oid == pgtypes.OIDUnknown || strings.HasPrefix(typeName(oid), "type ") || oid == OIDAclitem || oid == 1034 || oid == OIDPgNodeTree || oid == 2277 {
				cur.cols[j].OID = pgtypes.OIDText
			}
		}
		for j := range cur.cols {
			for _, r := range raw {
				if j < len(r) && r[j] != `\N` {
					if _, err := castText(unescapeCopy(r[j]), cur.cols[j].OID, nil); err != nil {
						cur.cols[j].OID = pgtypes.OIDText
						break
					}
				}
			}
		}
		for _, r := range raw {
			row := make([]any, len(cur.cols))
			for j := range cur.cols {
				if j >= len(r) || r[j] == `\N` {
					continue
				}
				v, err := castText(unescapeCopy(r[j]), cur.cols[j].OID, nil)
				if err != nil {
					t.Fatalf("fixture value %q: %v", r[j], err)
				}
				row[j] = v
			}
			cur.rows = append(cur.rows, row)
		}
		raw = nil
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "table "):
			flush()
			cur = &memRel{}
			cat.rels[strings.TrimPrefix(line, "table ")] = cur
		case strings.HasPrefix(line, "col "):
			p := strings.Fields(line)
			oid, _ := strconv.Atoi(p[2])
			cur.cols = append(cur.cols, pgtypes.Column{Name: p[1], OID: uint32(oid)})
		case strings.HasPrefix(line, "row\t"):
			raw = append(raw, strings.Split(strings.TrimPrefix(line, "row\t"), "\t"))
		}
	}
	flush()
}

func unescapeCopy(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			default:
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func testEnv(cat Catalog) *Env {
	settings := map[string]string{"search_path": `"$user", public`, "timezone": "Etc/UTC", "server_version": "15.0", "datestyle": "ISO, MDY", "server_version_num": "150000", "bytea_output": "hex", "client_encoding": "UTF8", "standard_conforming_strings": "on", "integer_datetimes": "on", "transaction_isolation": "read committed", "max_identifier_length": "63", "is_superuser": "on"}
	return &Env{
		Catalog:    cat,
		Setting:    func(n string) (string, bool) { v, ok := settings[strings.ToLower(n)]; return v, ok },
		User:       "postgres",
		Database:   "pgeval_fixture",
		BackendPID: 4242,
		Now:        time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC),
		SortBudget: 1 << 20,
	}
}

// setSettings is the datadriven "set" command: each key=value argument
// becomes a session setting for the rest of the file (set
// timezone=America/New_York intervalstyle=sql_standard).
func setSettings(env *Env, d *datadriven.TestData) {
	over := map[string]string{}
	for _, a := range d.CmdArgs {
		over[strings.ToLower(a.Key)] = strings.Join(a.Vals, ",")
	}
	base := env.Setting
	env.Setting = func(n string) (string, bool) {
		if v, ok := over[strings.ToLower(n)]; ok {
			return v, true
		}
		return base(n)
	}
}

func parseOne(t testing.TB, sql string) *pg.Node {
	res, err := pg.Parse(sql)
	if err != nil {
		t.Fatalf("parse %q: %v", sql, err)
	}
	if len(res.Stmts) != 1 {
		t.Fatalf("want one statement in %q", sql)
	}
	return res.Stmts[0].Stmt
}

// runQuery prepares and runs sql, formatting the outcome as the
// datadriven files expect.
func runQuery(env *Env, sql string, args []string, explain int) string {
	res, err := pg.Parse(sql)
	if err != nil {
		return "parse error: " + err.Error() + "\n"
	}
	if len(res.Stmts) != 1 {
		return "want one statement\n"
	}
	ctx := context.Background()
	p, err := Prepare(ctx, res.Stmts[0].Stmt, env, nil)
	if err != nil {
		return fmtErr(err)
	}
	var b strings.Builder
	if len(p.Params()) > 0 {
		var ps []string
		for _, o := range p.Params() {
			ps = append(ps, typeShortName(o))
		}
		fmt.Fprintf(&b, "params: %s\n", strings.Join(ps, ", "))
	}
	var argv []any
	for i, a := range args {
		if a == "NULL" {
			argv = append(argv, nil)
			continue
		}
		oid := pgtypes.OIDText
		if i < len(p.Params()) {
			oid = p.Params()[i]
		}
		v, err := castText(a, oid, nil)
		if err != nil {
			return fmtErr(err)
		}
		argv = append(argv, v)
	}
	if explain == 1 {
		for _, l := range p.Explain(ExplainPlan) {
			b.WriteString(l + "\n")
		}
		return b.String()
	}
	var cols []string
	for _, c := range p.Columns() {
		cols = append(cols, c.Name+":"+typeShortName(c.OID))
	}
	b.WriteString(strings.Join(cols, " | ") + "\n")
	rows, err := p.RunAnalyzed(ctx, env, argv)
	if err != nil {
		return fmtErr(err)
	}
	defer rows.Close()
	for n := 0; ; n++ {
		r, err := rows.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			if n == 0 {
				// As psql shows it: an error before the first row
				// replaces the result.
				return fmtErr(err)
			}
			return b.String() + fmtErr(err)
		}
		var vals []string
		for i, v := range r {
			if v == nil {
				vals = append(vals, "NULL")
				continue
			}
			vals = append(vals, FormatTextStyle(p.Columns()[i].OID, v, pgtypes.StyleFrom(env.Setting)))
		}
		b.WriteString(strings.Join(vals, " | ") + "\n")
	}
	if explain == 2 {
		for _, l := range p.Explain(ExplainAnalyze) {
			// Times vary; keep rows and loops.
			if i := strings.Index(l, "(actual time="); i >= 0 {
				j := strings.Index(l[i:], " rows=")
				l = l[:i] + "(" + l[i+j+1:]
			}
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func fmtErr(err error) string {
	se, ok := err.(*sqlstate.Error)
	if !ok {
		return "non-sqlstate error: " + err.Error() + "\n"
	}
	s := "error " + se.Code + ": " + se.Message
	if se.Position > 0 {
		s += fmt.Sprintf(" (at %d)", se.Position)
	}
	return s + "\n"
}

func sortedKeys(m map[string]Relation) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
