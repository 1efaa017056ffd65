package pgeval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/query/pgtypes"
)

// TestAgainstPostgres runs the datadriven queries (those without
// parameters, EXPLAIN or a memory budget) on a real PostgreSQL 15 and
// compares column names and types, rows, and error codes. It runs only
// when CELLAR_PGEVAL_AGAINST names the server (host:port, user
// postgres, trust auth), e.g. CELLAR_PGEVAL_AGAINST=127.0.0.1:5432;
// the fixture catalog's queries need the pgeval_fixture database that
// testdata/catalog.fixture was dumped from, and are compared only when
// CELLAR_PGEVAL_DB names it.
func TestAgainstPostgres(t *testing.T) {
	addr := os.Getenv("CELLAR_PGEVAL_AGAINST")
	if addr == "" {
		t.Log("CELLAR_PGEVAL_AGAINST is not set: nothing to compare against")
		return
	}
	db := os.Getenv("CELLAR_PGEVAL_DB")
	if db == "" {
		db = "postgres"
	}
	ctx := context.Background()
	files, _ := ddFiles()
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", addr, db))
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer conn.Close(ctx)
			cat := &memCatalog{rels: map[string]Relation{}}
			loadFixture(t, cat)
			env := testEnv(cat)
			env.SortBudget = 0
			budget := false
			var diffs []string
			defer func() {
				for _, d := range diffs {
					t.Error(d)
				}
			}()
			datadriven.RunTest(t, file, func(t *testing.T, d *datadriven.TestData) string {
				switch d.Cmd {
				case "table":
					defineTable(t, cat, d)
					mirrorTable(t, conn, d)
				case "set":
					setSettings(env, d)
					for _, a := range d.CmdArgs {
						if _, err := conn.Exec(ctx, fmt.Sprintf("SET %s = '%s'", a.Key, strings.Join(a.Vals, ","))); err != nil {
							t.Fatalf("set %s: %v", a.Key, err)
						}
					}
				case "budget":
					var n int
					d.ScanArgs(t, "bytes", &n)
					budget = n != 0
				case "query":
					if len(d.CmdArgs) > 0 || budget || strings.Contains(d.Input, "pg_backend_pid") ||
						strings.Contains(d.Input, "now()") || strings.Contains(d.Input, "current_database") {
						break
					}
					if db == "postgres" && (strings.Contains(d.Input, "hx_") || strings.Contains(d.Input, "pg_get_keywords")) {
						break
					}
					ours := runQuery(env, d.Input, nil, 0)
					theirs := pgQuery(ctx, conn, d.Input)
					if headerless(ours) != headerless(theirs) {
						diffs = append(diffs, fmt.Sprintf("%s\n--- cellar:\n%s--- postgres:\n%s", d.Input, ours, theirs))
					}
				}
				return d.Expected
			})
		})
	}
}

func mirrorTable(t *testing.T, conn *pgx.Conn, d *datadriven.TestData) {
	ctx := context.Background()
	var name string
	d.ScanArgs(t, "name", &name)
	lines := strings.Split(d.Input, "\n")
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE TEMP TABLE %s (%s)", name, lines[0])); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	for _, l := range lines[1:] {
		if l == "" {
			continue
		}
		var vals []string
		for _, v := range strings.Split(l, "\t") {
			if v == `\N` {
				vals = append(vals, "NULL")
			} else {
				vals = append(vals, quoteLiteral(v))
			}
		}
		if _, err := conn.Exec(ctx, fmt.Sprintf("INSERT INTO %s VALUES (%s)", name, strings.Join(vals, ", "))); err != nil {
			t.Fatalf("insert into %s: %v", name, err)
		}
	}
}

// pgQuery formats PostgreSQL's answer as runQuery formats cellar's.
func pgQuery(ctx context.Context, conn *pgx.Conn, sql string) string {
	rows, err := conn.Query(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return pgErr(err)
	}
	defer rows.Close()
	var b strings.Builder
	var cols []string
	for _, f := range rows.FieldDescriptions() {
		cols = append(cols, f.Name+":"+typeShortName(f.DataTypeOID))
	}
	header := strings.Join(cols, " | ") + "\n"
	for rows.Next() {
		var vals []string
		for _, v := range rows.RawValues() {
			if v == nil {
				vals = append(vals, "NULL")
			} else {
				vals = append(vals, string(v))
			}
		}
		b.WriteString(strings.Join(vals, " | ") + "\n")
	}
	if err := rows.Err(); err != nil {
		return header + b.String() + pgErr(err)
	}
	return header + b.String()
}

func pgErr(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		s := "error " + pe.Code + ": " + pe.Message
		if pe.Position > 0 {
			s += fmt.Sprintf(" (at %d)", pe.Position)
		}
		return s + "\n"
	}
	return "client error: " + err.Error() + "\n"
}

// headerless drops the column line of an answer that is only an error:
// PostgreSQL reports errors of constant expressions at planning, before
// describing columns, and cellar at execution.
func headerless(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) == 2 && strings.HasPrefix(lines[1], "error ") {
		return lines[1] + "\n"
	}
	return s
}

// TestBIAgainstPostgres compares the whole answers of the BI queries
// that are about hx_bi (not catalog-wide) with PostgreSQL's, in the
// database the fixture was dumped from (CELLAR_PGEVAL_DB).
func TestBIAgainstPostgres(t *testing.T) {
	addr, db := os.Getenv("CELLAR_PGEVAL_AGAINST"), os.Getenv("CELLAR_PGEVAL_DB")
	if addr == "" || db == "" {
		t.Log("CELLAR_PGEVAL_AGAINST and CELLAR_PGEVAL_DB are not set: nothing to compare against")
		return
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", addr, db))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	cat := &memCatalog{rels: map[string]Relation{}}
	loadFixture(t, cat)
	env := testEnv(cat)
	env.SortBudget = 0
	// Answers that differ by design: version() names cellar (17, 34,
	// 49); the fixture holds only 25 pg_opclass rows (33); relation
	// sizes are 0 in cellar (45); pg_stat_database is live (59).
	differ := map[int]bool{17: true, 33: true, 34: true, 45: true, 49: true, 59: true}
	// The fixture serves pg_node_tree, aclitem[] and anyarray columns as
	// text and text[].
	types := strings.NewReplacer(":pg_node_tree", ":text", ":_aclitem", ":_text", ":anyarray", ":text")
	compared := 0
	for i, b := range biBlocks(t) {
		if strings.Contains(b, "catalog-wide") || differ[i+1] {
			continue
		}
		res, err := pg.Parse(b)
		if err != nil || len(res.Stmts) != 1 || res.Stmts[0].Stmt.GetSelectStmt() == nil {
			continue
		}
		compared++
		ours := sortedLines(headerless(runQuery(env, b, nil, 0)))
		theirs := sortedLines(types.Replace(headerless(pgQuery(ctx, conn, b))))
		if ours != theirs {
			t.Errorf("block %d %s\n--- cellar:\n%s--- postgres:\n%s", i+1, firstLine(b), ours, theirs)
		}
	}
	t.Logf("compared %d BI answers with PostgreSQL's", compared)
}

// sortedLines sorts an answer's rows (after its column line): queries
// without ORDER BY may list rows in any order.
func sortedLines(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) > 2 {
		sort.Strings(lines[1:])
	}
	return strings.Join(lines, "\n") + "\n"
}

// pgFirst runs sql on PostgreSQL after setting the time zone and
// IntervalStyle and returns its first row's first column as text, or
// "error CODE: message".
func pgFirst(ctx context.Context, conn *pgx.Conn, tz, is, sql string) string {
	if _, err := conn.Exec(ctx, fmt.Sprintf("SET TimeZone = '%s'; SET IntervalStyle = '%s'", tz, is)); err != nil {
		return "client error: " + err.Error()
	}
	rows, err := conn.Query(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return strings.TrimSuffix(pgErr(err), "\n")
	}
	defer rows.Close()
	got := "(no rows)"
	first := true
	for rows.Next() {
		if first {
			var vals []string
			for _, v := range rows.RawValues() {
				if v == nil {
					vals = append(vals, "NULL")
				} else {
					vals = append(vals, string(v))
				}
			}
			got = strings.Join(vals, " | ")
			first = false
		}
	}
	if err := rows.Err(); err != nil {
		return strings.TrimSuffix(pgErr(err), "\n")
	}
	return got
}

// firstRowStyled runs sql and writes its first row as PostgreSQL would
// send it in text under the Env's settings: columns joined with " | ",
// or "error CODE: message".
func firstRowStyled(env *Env, sql string) string {
	ctx := context.Background()
	res, err := pg.Parse(sql)
	if err != nil {
		return "parse error: " + err.Error()
	}
	p, err := Prepare(ctx, res.Stmts[0].Stmt, env, nil)
	if err != nil {
		return strings.TrimSuffix(fmtErr(err), "\n")
	}
	rows, err := p.Run(ctx, env, nil)
	if err != nil {
		return strings.TrimSuffix(fmtErr(err), "\n")
	}
	defer rows.Close()
	r, err := rows.Next(ctx)
	if err == io.EOF {
		return "(no rows)"
	}
	if err != nil {
		return strings.TrimSuffix(fmtErr(err), "\n")
	}
	st := pgtypes.StyleFrom(env.Setting)
	var vals []string
	for i, v := range r {
		if v == nil {
			vals = append(vals, "NULL")
			continue
		}
		vals = append(vals, FormatTextStyle(p.Columns()[i].OID, v, st))
	}
	return strings.Join(vals, " | ")
}

// intervalLit writes a random interval as a literal both read the same
// way.
func intervalLit(r *rand.Rand) string {
	pick := func(n int) int {
		if r.Intn(3) == 0 {
			return 0
		}
		return r.Intn(2*n+1) - n
	}
	us := int64(pick(100000)) * int64(r.Intn(3)*r.Intn(90000)+1) * 1000
	if r.Intn(4) == 0 {
		us += int64(r.Intn(1000000))
	}
	return fmt.Sprintf("interval '%+d mons %+d days %+d usecs'", pick(40), pick(400), us)
}

// bigIntervalLit is a random interval near the limits of its fields.
func bigIntervalLit(r *rand.Rand) string {
	big := func(lim int64) int64 {
		switch r.Intn(4) {
		case 0:
			return 0
		case 1:
			return lim - r.Int63n(100)
		case 2:
			return -lim + r.Int63n(100)
		}
		return r.Int63n(2*(lim/4)) - lim/4
	}
	return fmt.Sprintf("interval '%+d mons %+d days %+d usecs'", big(1<<31-1), big(1<<31-1), big(1<<63-1))
}

// tsLit is a random timestamp, often near a daylight-saving change of
// 2024 (March and October/November) or at the end of a month.
func tsLit(r *rand.Rand) string {
	var t time.Time
	switch r.Intn(4) {
	case 0:
		t = time.Date(1900+r.Intn(250), time.Month(1+r.Intn(12)), 1+r.Intn(31), r.Intn(24), r.Intn(60), r.Intn(60), r.Intn(2)*r.Intn(1000000)*1000, time.UTC)
	case 1:
		t = time.Date(2024, time.Month(1+r.Intn(12)), 28+r.Intn(4), r.Intn(24), 0, 0, 0, time.UTC)
	default:
		days := []time.Time{time.Date(2024, 3, 10, 0, 0, 0, 0, time.UTC), time.Date(2024, 11, 3, 0, 0, 0, 0, time.UTC),
			time.Date(2024, 3, 31, 0, 0, 0, 0, time.UTC), time.Date(2024, 10, 27, 0, 0, 0, 0, time.UTC)}
		t = days[r.Intn(len(days))].Add(time.Duration(r.Intn(72)-36) * 30 * time.Minute)
	}
	return t.Format("2006-01-02 15:04:05.999999")
}

// randomAgainstPostgres is what the randomized comparisons share: a
// connection to the PostgreSQL CELLAR_PGEVAL_AGAINST names (nil if none,
// and the test has nothing to compare against) and a source seeded by
// CELLAR_PGEVAL_SEED, or by seed.
func randomAgainstPostgres(t *testing.T, seed int64) (*pgx.Conn, *rand.Rand) {
	addr := os.Getenv("CELLAR_PGEVAL_AGAINST")
	if addr == "" {
		t.Log("CELLAR_PGEVAL_AGAINST is not set: nothing to compare against")
		return nil, nil
	}
	conn, err := pgx.Connect(context.Background(), fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if s, err := strconv.ParseInt(os.Getenv("CELLAR_PGEVAL_SEED"), 10, 64); err == nil {
		seed = s
	}
	return conn, rand.New(rand.NewSource(seed))
}

// compareMany runs n statements that next makes, each in the time zone
// and IntervalStyle it gives, in the evaluator and in PostgreSQL, and
// reports up to 40 whose answers differ (unless forgive, if set, lets
// the difference pass).
func compareMany(t *testing.T, conn *pgx.Conn, n int, what string, next func() (sql, tz, is string), forgive func(ours, theirs string) bool) {
	bad := 0
	for i := 0; i < n; i++ {
		sql, tz, is := next()
		ours, theirs := bothAnswers(conn, tz, is, sql)
		if ours != theirs && (forgive == nil || !forgive(ours, theirs)) && bad < 40 {
			bad++
			t.Errorf("%s [%s, %s]:\n cellar:   %s\n postgres: %s", sql, tz, is, ours, theirs)
		}
	}
	t.Logf("compared %d random %s with PostgreSQL's", n, what)
}

// bothAnswers is sql's first row from the evaluator and from PostgreSQL
// in time zone tz and IntervalStyle is, an error's position left out.
func bothAnswers(conn *pgx.Conn, tz, is, sql string) (ours, theirs string) {
	ours = firstRowStyled(styleEnv("", tz, is), sql)
	theirs = pgFirst(context.Background(), conn, tz, is, sql)
	for _, s := range []*string{&ours, &theirs} {
		if i := strings.Index(*s, " (at "); i >= 0 && strings.HasPrefix(*s, "error ") {
			*s = (*s)[:i]
		}
	}
	return ours, theirs
}

// TestAgainstPostgresIntervalArith compares interval arithmetic and the
// interval functions with PostgreSQL 15 on random inputs, in time zones
// with daylight saving (CELLAR_PGEVAL_AGAINST).
func TestAgainstPostgresIntervalArith(t *testing.T) {
	conn, r := randomAgainstPostgres(t, 7)
	if conn == nil {
		return
	}
	zones := []string{"America/New_York", "Europe/Berlin", "UTC", "Australia/Lord_Howe", "Asia/Kolkata", "America/Sao_Paulo"}
	styles := []string{"postgres", "postgres_verbose", "sql_standard", "iso_8601"}
	f8 := func() string {
		switch r.Intn(5) {
		case 0:
			return fmt.Sprint(r.Intn(7) - 3)
		case 1:
			return fmt.Sprintf("%.3f", r.Float64()*4-2)
		case 2:
			return fmt.Sprintf("%g", r.NormFloat64()*1000)
		case 3:
			return fmt.Sprintf("%.1f", r.Float64()*10)
		}
		return fmt.Sprintf("%g", r.Float64()/1000)
	}
	fields := []string{"epoch", "millennium", "century", "decade", "year", "quarter", "month", "day", "hour", "minute", "second",
		"milliseconds", "microseconds", "week", "dow", "mm", "foo", "Hours", "mins"}
	truncs := []string{"millennium", "century", "decade", "year", "quarter", "month", "day", "hour", "minute", "second",
		"milliseconds", "microseconds", "week", "timezone", "mm", "foo", "HOUR"}
	gens := []func() string{
		func() string { return fmt.Sprintf("SELECT timestamptz '%s+00' + %s", tsLit(r), intervalLit(r)) },
		func() string { return fmt.Sprintf("SELECT timestamptz '%s+00' - %s", tsLit(r), intervalLit(r)) },
		func() string { return fmt.Sprintf("SELECT %s + timestamptz '%s'", intervalLit(r), tsLit(r)) },
		func() string { return fmt.Sprintf("SELECT timestamp '%s' + %s", tsLit(r), intervalLit(r)) },
		func() string { return fmt.Sprintf("SELECT timestamp '%s' - %s", tsLit(r), intervalLit(r)) },
		func() string { return fmt.Sprintf("SELECT date '%s' + %s", tsLit(r)[:10], intervalLit(r)) },
		func() string { return fmt.Sprintf("SELECT date '%s' - %s", tsLit(r)[:10], intervalLit(r)) },
		func() string { return fmt.Sprintf("SELECT timestamptz '%s' - timestamptz '%s'", tsLit(r), tsLit(r)) },
		func() string { return fmt.Sprintf("SELECT timestamp '%s' - timestamp '%s'", tsLit(r), tsLit(r)) },
		func() string { return fmt.Sprintf("SELECT timestamp '%s' - timestamptz '%s'", tsLit(r), tsLit(r)) },
		func() string { return fmt.Sprintf("SELECT date '%s' - timestamp '%s'", tsLit(r)[:10], tsLit(r)) },
		func() string {
			return fmt.Sprintf("SELECT age(timestamptz '%s', timestamptz '%s')", tsLit(r), tsLit(r))
		},
		func() string { return fmt.Sprintf("SELECT age(timestamp '%s', timestamp '%s')", tsLit(r), tsLit(r)) },
		func() string { return fmt.Sprintf("SELECT %s * %s", intervalLit(r), f8()) },
		func() string { return fmt.Sprintf("SELECT %s * %s", f8(), intervalLit(r)) },
		func() string { return fmt.Sprintf("SELECT %s / %s", intervalLit(r), f8()) },
		func() string { return fmt.Sprintf("SELECT %s + %s", intervalLit(r), intervalLit(r)) },
		func() string { return fmt.Sprintf("SELECT %s - %s", intervalLit(r), intervalLit(r)) },
		func() string { return fmt.Sprintf("SELECT - %s", intervalLit(r)) },
		func() string {
			a := intervalLit(r)
			return fmt.Sprintf("SELECT %s < %s, %s = %s", a, intervalLit(r), a, []string{a, "justify_interval(" + a + ")", "justify_days(" + a + ")", intervalLit(r)}[r.Intn(4)])
		},
		func() string { return fmt.Sprintf("SELECT justify_hours(%s)", intervalLit(r)) },
		func() string { return fmt.Sprintf("SELECT justify_days(%s)", intervalLit(r)) },
		func() string { return fmt.Sprintf("SELECT justify_interval(%s)", intervalLit(r)) },
		func() string {
			return fmt.Sprintf("SELECT extract(%s from %s)", fields[r.Intn(len(fields))], intervalLit(r))
		},
		func() string {
			return fmt.Sprintf("SELECT date_part('%s', %s)", fields[r.Intn(len(fields))], intervalLit(r))
		},
		func() string {
			return fmt.Sprintf("SELECT date_trunc('%s', %s)", truncs[r.Intn(len(truncs))], intervalLit(r))
		},
		func() string {
			f := []string{"second", "milliseconds", "microseconds", "epoch", "year", "month", "day", "hour", "minute", "dow", "doy", "quarter"}[r.Intn(12)]
			ty := []string{"timestamp", "timestamptz", "date"}[r.Intn(3)]
			return fmt.Sprintf("SELECT extract(%s from %s '%s'), date_part('%s', %s '%s')", f, ty, tsLit(r), f, ty, tsLit(r))
		},
		func() string {
			return fmt.Sprintf("SELECT time '%02d:%02d:%02d' %s %s", r.Intn(24), r.Intn(60), r.Intn(60), []string{"+", "-"}[r.Intn(2)], intervalLit(r))
		},
		func() string {
			return fmt.Sprintf("SELECT time '%02d:%02d' - time '%02d:%02d'", r.Intn(24), r.Intn(60), r.Intn(24), r.Intn(60))
		},
		func() string {
			return fmt.Sprintf("SELECT make_interval(%d, %d, %d, %d, %d, %d, %s)", r.Intn(20)-10, r.Intn(30)-15, r.Intn(10)-5, r.Intn(60)-30, r.Intn(50)-25, r.Intn(200)-100, f8())
		},
		func() string {
			names := []string{"years", "months", "weeks", "days", "hours", "mins", "secs"}
			var parts []string
			for _, i := range r.Perm(7)[:1+r.Intn(4)] {
				v := fmt.Sprint(r.Intn(100) - 50)
				if i == 6 {
					v = f8()
				}
				parts = append(parts, names[i]+" => "+v)
			}
			return "SELECT make_interval(" + strings.Join(parts, ", ") + ")"
		},
		func() string {
			from := tsLit(r)
			return fmt.Sprintf("SELECT string_agg(g::text, ',') FROM generate_series(timestamptz '%s', timestamptz '%s' + interval '%d days', %s) g", from, from, r.Intn(200)-100,
				[]string{"interval '1 day'", "interval '1 month'", "interval '12 hours'", "interval '-1 day'", "interval '1 mon -1 day'", "interval '7 days 1 hour'"}[r.Intn(6)])
		},
		func() string {
			from := tsLit(r)
			return fmt.Sprintf("SELECT string_agg(g::text, ',') FROM generate_series(timestamp '%s', timestamp '%s' + interval '%d days', interval '%d days %d hours') g", from, from, r.Intn(200)-100, r.Intn(10)-3, r.Intn(48))
		},
		func() string {
			return fmt.Sprintf("SELECT sum(x), avg(x), min(x), max(x), count(DISTINCT x) FROM (VALUES (%s), (%s), (%s), (interval '1 month'), (interval '30 days')) v(x)", intervalLit(r), intervalLit(r), intervalLit(r))
		},
		func() string {
			return fmt.Sprintf("SELECT to_char(%s, '%s')", intervalLit(r), []string{"HH24:MI:SS", "HH12:MI:SS.MS AM", "YYYY-MM-DD HH24", "FMHH24 \"h\" FMMI", "YY MM DD US", "hh24 mi ss pm", "Mon", "Day"}[r.Intn(8)])
		},
		func() string {
			ops := []string{"%s + %s", "%s - %s", "%s * 0.5", "%s / 3", "%s * -1", "justify_hours(%s)", "justify_days(%s)", "justify_interval(%s)",
				"extract(epoch from %s)", "date_part('epoch', %s)", "date_trunc('year', %s)", "extract(hour from %s)", "- %s", "%s < %s", "%s * 2.5", "%s / 0.25"}
			op := ops[r.Intn(len(ops))]
			if strings.Count(op, "%s") == 2 {
				return "SELECT " + fmt.Sprintf(op, bigIntervalLit(r), bigIntervalLit(r))
			}
			return "SELECT " + fmt.Sprintf(op, bigIntervalLit(r))
		},
		func() string {
			ts := []string{"294276-12-31 23:00:00", "4713-11-24 00:00:00 BC", "4713-11-25 BC", "infinity", "-infinity", "294276-11-30", "0001-01-01", "2000-02-29"}
			ty := []string{"timestamp", "timestamptz", "date"}[r.Intn(3)]
			t := ts[r.Intn(len(ts))]
			if ty == "date" && strings.Contains(t, "294276-12-31") {
				t = "294276-12-31"
			}
			switch r.Intn(4) {
			case 0:
				return fmt.Sprintf("SELECT %s '%s' - %s '%s'", ty, t, ty, ts[r.Intn(len(ts))])
			case 1:
				return fmt.Sprintf("SELECT age(%s '%s', %s '%s')", ty, t, ty, ts[r.Intn(len(ts))])
			}
			return fmt.Sprintf("SELECT %s '%s' %s %s", ty, t, []string{"+", "-"}[r.Intn(2)], []string{intervalLit(r), bigIntervalLit(r), "interval '1 day'", "interval '1 month'", "interval '1 usec'"}[r.Intn(5)])
		},
		func() string {
			return fmt.Sprintf("SELECT make_timestamptz(%d, %d, %d, %d, %d, %s)", 1990+r.Intn(40), 1+r.Intn(12), 1+r.Intn(31), r.Intn(25), r.Intn(60), f8())
		},
		func() string {
			return fmt.Sprintf("SELECT make_timestamptz(year => %d, month => %d, mday => %d, hour => %d, min => %d, sec => %d, timezone => '%s')", 1990+r.Intn(40), 1+r.Intn(12), 1+r.Intn(28), r.Intn(24), r.Intn(60), r.Intn(60),
				[]string{"+05", "-03:30", "Europe/Berlin", "EST", "America/New_York", "foo", "5", "+16"}[r.Intn(8)])
		},
		func() string {
			return fmt.Sprintf("SELECT make_timestamp(%d, %d, %d, %d, %d, %s), make_date(%d, %d, %d)", r.Intn(3000)-5, r.Intn(14), r.Intn(33), r.Intn(26), r.Intn(61), f8(), r.Intn(4000)-2000, r.Intn(14), r.Intn(33))
		},
	}
	compareMany(t, conn, 6000, "interval expressions", func() (string, string, string) {
		tz, is := zones[r.Intn(len(zones))], styles[r.Intn(len(styles))]
		if r.Intn(2) == 0 {
			is = "postgres"
		}
		return gens[r.Intn(len(gens))](), tz, is
	}, nil)
}

// TestAgainstPostgresNumericInfinity compares numeric arithmetic,
// comparison, functions, casts and aggregates over values that include
// Infinity, -Infinity and NaN with PostgreSQL 15's on random inputs
// (CELLAR_PGEVAL_AGAINST).
func TestAgainstPostgresNumericInfinity(t *testing.T) {
	conn, r := randomAgainstPostgres(t, 11)
	if conn == nil {
		return
	}
	num := func() string {
		switch r.Intn(9) {
		case 0:
			return "'Infinity'::numeric"
		case 1:
			return "'-Infinity'::numeric"
		case 2:
			return []string{"'NaN'::numeric", "'inf'::numeric", "'-inf'::numeric"}[r.Intn(3)]
		case 3:
			return []string{"0", "0.0", "0.000", "1", "-1"}[r.Intn(5)] + "::numeric"
		case 4:
			return fmt.Sprint(r.Intn(200) - 100)
		case 5:
			return fmt.Sprintf("%d.%0*d", r.Intn(2000)-1000, 1+r.Intn(4), r.Intn(1000))
		case 6:
			return fmt.Sprintf("%de%d", r.Intn(19)-9, r.Intn(40)-20)
		}
		return fmt.Sprintf("%.*f", r.Intn(5), r.NormFloat64()*100)
	}
	list := func() string {
		var vs []string
		for n := 1 + r.Intn(5); n > 0; n-- {
			v := num()
			if r.Intn(6) == 0 {
				v = "NULL::numeric"
			}
			vs = append(vs, "("+v+"::numeric)")
		}
		return strings.Join(vs, ", ")
	}
	ops := []string{"+", "-", "*", "/", "%", "<", "<=", "=", "<>", ">", ">="}
	gens := []func() string{
		func() string { return fmt.Sprintf("SELECT %s::numeric %s %s", num(), ops[r.Intn(len(ops))], num()) },
		func() string {
			return fmt.Sprintf("SELECT (%s::numeric %s %s) %s %s", num(), ops[r.Intn(5)], num(), ops[r.Intn(5)], num())
		},
		func() string {
			f := []string{"abs", "sign", "ceil", "floor", "round", "trunc", "-", "@"}[r.Intn(8)]
			return fmt.Sprintf("SELECT %s(%s::numeric)", f, num())
		},
		func() string {
			return fmt.Sprintf("SELECT %s(%s::numeric, %d)", []string{"round", "trunc"}[r.Intn(2)], num(), r.Intn(7)-3)
		},
		func() string { return fmt.Sprintf("SELECT mod(%s::numeric, %s::numeric)", num(), num()) },
		func() string {
			return fmt.Sprintf("SELECT %s(%s::numeric, %s, %s)", []string{"greatest", "least"}[r.Intn(2)], num(), num(), num())
		},
		func() string {
			return fmt.Sprintf("SELECT (%s::numeric)::%s", num(), []string{"float8", "float4", "int4", "int8", "int2", "numeric(6,2)", "numeric(10)", "text"}[r.Intn(8)])
		},
		func() string {
			return fmt.Sprintf("SELECT (%s)::numeric", []string{"'Infinity'::float8", "'-inf'::float4", "'nan'::float8", fmt.Sprint(r.NormFloat64() * 1e6)}[r.Intn(4)])
		},
		func() string {
			return fmt.Sprintf("SELECT %s::numeric %s %s::%s", num(), ops[5+r.Intn(6)], num(), []string{"float8", "int8", "numeric"}[r.Intn(3)])
		},
		func() string {
			return fmt.Sprintf("SELECT sum(x), avg(x), min(x), max(x), count(x) FROM (VALUES %s) v(x)", list())
		},
		func() string {
			return fmt.Sprintf("SELECT string_agg(x::text, ',' ORDER BY x %s) FROM (VALUES %s) v(x)", []string{"", "DESC", "NULLS FIRST"}[r.Intn(3)], list())
		},
		func() string {
			return fmt.Sprintf("SELECT count(DISTINCT x), string_agg(DISTINCT x::text, ',') FROM (VALUES %s, %s) v(x)", list(), list())
		},
		func() string { return fmt.Sprintf("SELECT to_jsonb(%s::numeric), to_json(%s::numeric)", num(), num()) },
	}
	compareMany(t, conn, 4000, "numeric expressions", func() (string, string, string) {
		return gens[r.Intn(len(gens))](), "UTC", "postgres"
	}, nil)
}

// TestAgainstPostgresOrderedSet compares percentile_cont, percentile_disc
// (with one fraction and with an array of them), mode and the
// hypothetical-set aggregates with PostgreSQL 15's over random groups of
// values, NULLs, duplicates and numeric and float infinities included
// (CELLAR_PGEVAL_AGAINST).
func TestAgainstPostgresOrderedSet(t *testing.T) {
	conn, r := randomAgainstPostgres(t, 13)
	if conn == nil {
		return
	}
	kinds := []struct {
		typ string
		val func() string
	}{
		{"float8", func() string {
			return []string{fmt.Sprintf("%g", r.NormFloat64()*100), fmt.Sprint(r.Intn(5)), "'Infinity'", "'-Infinity'", fmt.Sprintf("%.2f", r.Float64())}[r.Intn(5)]
		}},
		{"int4", func() string { return fmt.Sprint(r.Intn(20) - 5) }},
		{"numeric", func() string {
			return []string{fmt.Sprintf("%.*f", r.Intn(4), r.NormFloat64()*50), "'Infinity'", "'-inf'", "'NaN'", fmt.Sprint(r.Intn(4))}[r.Intn(5)]
		}},
		{"interval", func() string {
			return fmt.Sprintf("'%d mons %d days %d hours'", r.Intn(5)-2, r.Intn(60)-30, r.Intn(48)-24)
		}},
		{"text", func() string { return fmt.Sprintf("'%c%c'", 'a'+r.Intn(3), 'a'+r.Intn(2)) }},
	}
	frac := func() string {
		return []string{"0", "1", "0.5", fmt.Sprintf("%.3f", r.Float64()), fmt.Sprintf("%g", r.Float64()), "NULL", "1.5", "-0.1"}[r.Intn(8)]
	}
	compareMany(t, conn, 3000, "ordered-set and hypothetical-set aggregates", func() (string, string, string) {
		k := kinds[r.Intn(len(kinds))]
		var vals []string
		for n := r.Intn(9); n >= 0; n-- {
			v := k.val() + "::" + k.typ
			if r.Intn(7) == 0 {
				v = "NULL::" + k.typ
			}
			vals = append(vals, "("+v+")")
		}
		dir := []string{"", " DESC", " NULLS FIRST", " DESC NULLS LAST"}[r.Intn(4)]
		var aggs []string
		switch r.Intn(4) {
		case 0:
			if k.typ != "text" {
				aggs = append(aggs, fmt.Sprintf("percentile_cont(%s) WITHIN GROUP (ORDER BY x%s)", frac(), dir))
			}
			aggs = append(aggs, fmt.Sprintf("percentile_disc(%s) WITHIN GROUP (ORDER BY x%s)", frac(), dir))
		case 1:
			arr := fmt.Sprintf("ARRAY[%s, %s, %s]::float8[]", frac(), frac(), frac())
			if k.typ != "text" {
				aggs = append(aggs, fmt.Sprintf("percentile_cont(%s) WITHIN GROUP (ORDER BY x%s)", arr, dir))
			}
			aggs = append(aggs, fmt.Sprintf("percentile_disc(%s) WITHIN GROUP (ORDER BY x%s)", arr, dir))
		case 2:
			aggs = append(aggs, fmt.Sprintf("mode() WITHIN GROUP (ORDER BY x%s)", dir), "count(x)")
		default:
			h := k.val() + "::" + k.typ
			if r.Intn(6) == 0 {
				h = "NULL"
			}
			for _, f := range []string{"rank", "dense_rank", "percent_rank", "cume_dist"} {
				aggs = append(aggs, fmt.Sprintf("%s(%s) WITHIN GROUP (ORDER BY x%s)", f, h, dir))
			}
		}
		sql := fmt.Sprintf("SELECT %s FROM (VALUES %s) v(x)", strings.Join(aggs, ", "), strings.Join(vals, ", "))
		if r.Intn(4) == 0 {
			sql += " WHERE x IS NULL"
		}
		return sql, "UTC", "postgres"
	}, nil)
}

// TestAgainstPostgresNumericMath compares numeric's sqrt, exp, ln, log,
// power (and ^), div and float8's power and exp with PostgreSQL 15's on
// random arguments of every size and scale, infinities and NaN among
// them: the result scales, the digits and the errors
// (CELLAR_PGEVAL_AGAINST).
func TestAgainstPostgresNumericMath(t *testing.T) {
	conn, r := randomAgainstPostgres(t, 17)
	if conn == nil {
		return
	}
	num := func() string {
		switch r.Intn(12) {
		case 0:
			return []string{"'Infinity'", "'-Infinity'", "'NaN'", "0", "1", "-1", "0.0", "1.000"}[r.Intn(8)]
		case 1:
			return fmt.Sprintf("%de%d", 1+r.Intn(99), r.Intn(80)-40)
		case 2:
			return fmt.Sprintf("1.%0*d", 1+r.Intn(25), 1+r.Intn(9))
		case 3:
			return fmt.Sprintf("0.99%0*d", r.Intn(10), r.Intn(100))
		case 4:
			return fmt.Sprintf("-%d.%d", r.Intn(50), r.Intn(1000))
		case 5:
			return fmt.Sprint(r.Intn(40) - 20)
		}
		return fmt.Sprintf("%.*f", r.Intn(12), math.Abs(r.NormFloat64())*math.Pow(10, float64(r.Intn(12)-4)))
	}
	small := func() string {
		return []string{fmt.Sprint(r.Intn(30) - 10), fmt.Sprintf("%.*f", r.Intn(4), r.NormFloat64()*5), "0.5", "-0.5", "'Infinity'", "'-Infinity'", "'NaN'", "2", "3"}[r.Intn(9)]
	}
	gens := []func() string{
		func() string { return fmt.Sprintf("SELECT sqrt(%s::numeric)", num()) },
		func() string {
			return fmt.Sprintf("SELECT exp(%s::numeric)", []string{num(), small(), fmt.Sprint(r.Intn(12000) - 6000)}[r.Intn(3)])
		},
		func() string { return fmt.Sprintf("SELECT ln(%s::numeric)", num()) },
		func() string { return fmt.Sprintf("SELECT log(%s::numeric)", num()) },
		func() string { return fmt.Sprintf("SELECT log(%s::numeric, %s::numeric)", num(), num()) },
		func() string { return fmt.Sprintf("SELECT %s::numeric ^ %s::numeric", num(), small()) },
		func() string { return fmt.Sprintf("SELECT power(%s::numeric, %s)", small(), num()) },
		func() string { return fmt.Sprintf("SELECT %s::numeric ^ %d", num(), r.Intn(200)-100) },
		func() string { return fmt.Sprintf("SELECT div(%s::numeric, %s::numeric)", num(), small()) },
		func() string { return fmt.Sprintf("SELECT %s::float8 ^ %s::float8", small(), small()) },
		func() string { return fmt.Sprintf("SELECT exp(%s::float8), pg_typeof(sqrt(%d))", small(), r.Intn(9)) },
	}
	compareMany(t, conn, 3000, "numeric function calls", func() (string, string, string) {
		return gens[r.Intn(len(gens))](), "UTC", "postgres"
	}, withinULP)
}

// withinULP reports whether two float8 answers are neighbours: glibc's
// pow may be half an ulp off where cellar's is correctly rounded.
func withinULP(a, b string) bool {
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	return err1 == nil && err2 == nil && (math.Nextafter(x, y) == y || x == y)
}
