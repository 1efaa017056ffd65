package pgwire

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/cellardb/cellar/query/pgeval"
	"github.com/cellardb/cellar/query/pgtypes"
)

// TestPgxScansEvaluatorValues: pgx asks for binary results for the
// types it knows (arrays, oid, "char", interval, time, date) and text
// for the others (regclass); every one must arrive in a form it reads.
func TestPgxScansEvaluatorValues(t *testing.T) {
	addr := startServer(t, Options{})
	ctx := context.Background()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeDescribeExec, pgx.QueryExecModeSimpleProtocol} {
		t.Run(mode.String(), func(t *testing.T) {
			c := connect(t, fmt.Sprintf("postgres://cellar@%s/cellar?sslmode=disable&default_query_exec_mode=%s", addr, strings.ReplaceAll(mode.String(), " ", "_")))
			var (
				texts []string
				ints  []int32
				rel   string
				oid   uint32
				ch    byte
				iv    pgtype.Interval
				nulls []*int64
				d     time.Time
				tm    pgtype.Time
				f     float64
				js    string
			)
			err := c.QueryRow(ctx, `SELECT ARRAY['a','b'], '{1,2}'::int4[], 'pg_class'::regclass, 26::oid, 'x'::"char",
				'1 day 02:00:00.5'::interval, ARRAY[NULL, 3]::int8[], '2000-01-02'::date, '12:34:56.25'::time,
				123456789.125::float8, '{"b":1,"a":[1,  2]}'::jsonb`).Scan(
				&texts, &ints, &rel, &oid, &ch, &iv, &nulls, &d, &tm, &f, &js)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(texts, ",") != "a,b" || len(ints) != 2 || ints[0] != 1 || ints[1] != 2 {
				t.Errorf("arrays: %v %v", texts, ints)
			}
			if rel != "pg_class" || oid != 26 || ch != 'x' {
				t.Errorf("regclass %q, oid %d, char %q", rel, oid, ch)
			}
			if iv.Days != 1 || iv.Microseconds != 7200500000 || iv.Months != 0 {
				t.Errorf("interval %+v", iv)
			}
			if len(nulls) != 2 || nulls[0] != nil || nulls[1] == nil || *nulls[1] != 3 {
				t.Errorf("int8[] with NULL: %v", nulls)
			}
			if !d.Equal(time.Date(2000, 1, 2, 0, 0, 0, 0, time.UTC)) {
				t.Errorf("date %v", d)
			}
			if tm.Microseconds != (12*3600+34*60+56)*1e6+250000 {
				t.Errorf("time %+v", tm)
			}
			if f != 123456789.125 || js != `{"a": [1, 2], "b": 1}` {
				t.Errorf("float8 %v, jsonb %s", f, js)
			}
		})
	}
}

// TestBinaryResults asks for every column in binary format, as a client
// may, and checks PostgreSQL's send formats byte for byte.
func TestBinaryResults(t *testing.T) {
	addr := startServer(t, Options{})
	ctx := context.Background()
	c := connect(t, fmt.Sprintf("postgres://cellar@%s/cellar?sslmode=disable", addr))
	sql := `SELECT 'pg_class'::regclass, 'int4'::regtype, 26::oid, 'x'::"char", '1 2'::int2vector, ARRAY['a', NULL]::text[], '{}'::int4[], 'ab'::bpchar, 'infinity'::timestamp`
	res := c.PgConn().ExecParams(ctx, sql, nil, nil, nil, []int16{1}).Read()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	row := res.Rows[0]
	u32 := func(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	want := [][]byte{
		u32(1259),
		u32(23),
		u32(26),
		{'x'},
		// ndim 1, no nulls, int2, 2 elements from 0, then 1 and 2.
		cat(u32(1), u32(0), u32(21), u32(2), u32(0), u32(2), []byte{0, 1}, u32(2), []byte{0, 2}),
		cat(u32(1), u32(1), u32(25), u32(2), u32(1), u32(1), []byte("a"), u32(0xffffffff)),
		cat(u32(0), u32(0), u32(23)),
		[]byte("ab"),
		{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
	}
	for i, w := range want {
		if string(row[i]) != string(w) {
			t.Errorf("column %d (%s): got %x, want %x", i, res.FieldDescriptions[i].Name, row[i], w)
		}
	}
}

func TestEncodeBinaryNeverRefuses(t *testing.T) {
	for _, c := range []struct {
		oid uint32
		v   any
	}{
		{pgeval.OIDAclitem, "postgres=arwdDxt/postgres"},
		{pgeval.OIDRecord, pgeval.Record{Cols: []pgtypes.Column{{Name: "a", OID: pgtypes.OIDInt4}}, Vals: []any{int64(7)}}},
		{pgeval.OIDRegproc, pgeval.Reg{OID: 1242, Name: "boolin"}},
		{pgeval.OIDXid, int64(5)},
		{pgeval.OIDInterval, pgtypes.Interval{Months: -1, Days: 2, Micros: -90061000001}},
		{pgtypes.OIDTimestamptz, time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{pgtypes.OIDDate, time.Date(-100, 1, 1, 0, 0, 0, 0, time.UTC)},
		{pgtypes.OIDNumeric, int64(12)},
		{12345, struct{}{}},
	} {
		if _, err := encodeBinary(c.oid, c.v); err != nil {
			t.Errorf("%d %T: %v", c.oid, c.v, err)
		}
	}
	b, _ := encodeBinary(pgeval.OIDRecord, pgeval.Record{Cols: []pgtypes.Column{{Name: "a", OID: pgtypes.OIDInt4}}, Vals: []any{int64(7)}})
	if want := "00000001" + "00000017" + "00000004" + "00000007"; fmt.Sprintf("%x", b) != want {
		t.Errorf("record: %x, want %s", b, want)
	}
	// 0001-01-01 is 730119 days before 2000-01-01.
	b, _ = encodeBinary(pgtypes.OIDTimestamp, time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC))
	if got := int64(binary.BigEndian.Uint64(b)); got != -730119*86400e6 {
		t.Errorf("0001-01-01: %d", got)
	}
	b, _ = encodeBinary(pgeval.OIDInterval, pgtypes.Interval{Months: -1, Days: 2, Micros: -90061000001})
	if fmt.Sprintf("%x", b) != "ffffffeb07f232bf"+"00000002"+"ffffffff" {
		t.Errorf("interval: %x", b)
	}
	// interval_recv reads what interval_send writes.
	for _, iv := range []pgtypes.Interval{{}, {Months: 14, Days: -3, Micros: 4*3600e6 + 1}, {Months: math.MinInt32, Days: math.MaxInt32, Micros: math.MinInt64}} {
		b, _ := encodeBinary(pgeval.OIDInterval, iv)
		if back, err := decodeBinary(pgeval.OIDInterval, b); err != nil || back != iv {
			t.Errorf("interval %+v: %x read back as %+v, %v", iv, b, back, err)
		}
	}
	if _, err := decodeBinary(pgeval.OIDInterval, make([]byte, 12)); err == nil {
		t.Errorf("a 12-byte interval was accepted")
	}
}

// TestSessionStyles: the settings pg_regress starts with, and SET, change
// how dates, times and intervals are written; SHOW and ParameterStatus
// report them as PostgreSQL does.
func TestSessionStyles(t *testing.T) {
	addr := startServer(t, Options{})
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://cellar@%s/cellar?sslmode=disable&default_query_exec_mode=simple_protocol", addr))
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["datestyle"] = "Postgres, MDY"
	cfg.RuntimeParams["timezone"] = "PST8PDT"
	cfg.RuntimeParams["options"] = "-c intervalstyle=postgres_verbose" // as pg_regress's PGOPTIONS
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	text := func(sql string) string {
		t.Helper()
		rows, err := c.Query(ctx, sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		defer rows.Close()
		var out string
		for rows.Next() {
			out = string(rows.RawValues()[0])
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return out
	}
	for _, c := range []struct{ sql, want string }{
		{`SHOW DateStyle`, "Postgres, MDY"},
		{`SHOW TimeZone`, "PST8PDT"},
		{`SHOW IntervalStyle`, "postgres_verbose"},
		{`SELECT '1997-12-17 07:37:16-08'::timestamptz`, "Wed Dec 17 07:37:16 1997 PST"},
		{`SELECT '1997-07-01 07:37:16'::timestamptz`, "Tue Jul 01 07:37:16 1997 PDT"},
		{`SELECT '1997-12-17'::date`, "12-17-1997"},
		{`SELECT '2 days 03:04:05.5'::interval`, "@ 2 days 3 hours 4 mins 5.5 secs"},
		{`SELECT '1/2/2003'::date`, "01-02-2003"},
		{`SET DateStyle = 'DMY'`, ""},
		{`SHOW DateStyle`, "Postgres, DMY"},
		{`SELECT '1/2/2003'::date`, "01-02-2003"},
		{`SELECT '1/2/2003'::date::text`, "01-02-2003"},
		{`SELECT '1997-12-17 07:37:16'::timestamp`, "Wed 17 Dec 07:37:16 1997"},
		{`SET DateStyle = 'SQL'`, ""},
		{`SHOW DateStyle`, "SQL, DMY"},
		{`SET DateStyle = 'German'`, ""},
		{`SHOW DateStyle`, "German, DMY"},
		{`SET DateStyle = ISO, MDY`, ""},
		{`SHOW DateStyle`, "ISO, MDY"},
		{`SET TimeZone = 'america/new_york'`, ""},
		{`SHOW TimeZone`, "America/New_York"},
		{`SELECT '2000-01-01 00:00:00+00'::timestamptz`, "1999-12-31 19:00:00-05"},
		{`SET TIME ZONE -7`, ""},
		{`SHOW TimeZone`, "<-07>+07"},
		{`SELECT '2000-01-01 00:00:00+00'::timestamptz`, "1999-12-31 17:00:00-07"},
		{`SET IntervalStyle = 'SQL_STANDARD'`, ""},
		{`SELECT '-2 days -03:04:05'::interval`, "-2 3:04:05"},
		{`SET IntervalStyle = iso_8601`, ""},
		{`SELECT ARRAY['2 days'::interval]`, "{P2D}"},
		{`SELECT 0.1::float8 + 0.2::float8`, "0.30000000000000004"},
		{`SET extra_float_digits = 0`, ""},
		{`SELECT 0.1::float8 + 0.2::float8`, "0.3"},
	} {
		if got := text(c.sql); got != c.want {
			t.Errorf("%s: got %q, want %q", c.sql, got, c.want)
		}
	}
	if v := c.PgConn().ParameterStatus("DateStyle"); v != "ISO, MDY" {
		t.Errorf("ParameterStatus DateStyle %q", v)
	}
	if _, err := c.Exec(ctx, `SET DateStyle = 'Nonsense'`); sqlCode(err) != "22023" {
		t.Errorf("bad DateStyle: %v", err)
	}
	if _, err := c.Exec(ctx, `SET IntervalStyle = 'nonsense'`); sqlCode(err) != "22023" {
		t.Errorf("bad IntervalStyle: %v", err)
	}
	if _, err := c.Exec(ctx, `SET TimeZone = 'Nowhere/Zone'`); sqlCode(err) != "22023" {
		t.Errorf("bad TimeZone: %v", err)
	}
}

// TestBinaryResultsAgainstPostgres compares binary results byte for byte
// with a PostgreSQL 15 when CELLAR_PGEVAL_AGAINST names one (host:port).
func TestBinaryResultsAgainstPostgres(t *testing.T) {
	against := os.Getenv("CELLAR_PGEVAL_AGAINST")
	if against == "" {
		t.Log("set CELLAR_PGEVAL_AGAINST=host:port to compare with a live PostgreSQL 15")
		return
	}
	ctx := context.Background()
	addr := startServer(t, Options{})
	ours := connect(t, fmt.Sprintf("postgres://cellar@%s/cellar?sslmode=disable", addr))
	pg := connect(t, "postgres://postgres@"+against+"/postgres?sslmode=disable")
	sql := `SELECT 'pg_class'::regclass, 'int4'::regtype, 26::oid, 'x'::"char", '1 2'::int2vector, ARRAY['a', NULL]::text[], '{}'::int4[], 'ab'::bpchar, 'infinity'::timestamp, '1 day 02:00:00.5'::interval, '-1 year -2 mons +3 days -04:05:06.5'::interval, '12:34:56.25'::time, '-infinity'::date, '0001-01-01 00:00:00'::timestamp, '1 2'::oidvector, ARRAY[1.5, NULL]::numeric[], ARRAY['{"a":1}'::jsonb], '1997-12-17'::date, '{"b":1}'::json, ''::"char"`
	a := ours.PgConn().ExecParams(ctx, sql, nil, nil, nil, []int16{1}).Read()
	b := pg.PgConn().ExecParams(ctx, sql, nil, nil, nil, []int16{1}).Read()
	if a.Err != nil || b.Err != nil {
		t.Fatal(a.Err, b.Err)
	}
	for i := range b.Rows[0] {
		if string(a.Rows[0][i]) != string(b.Rows[0][i]) {
			t.Errorf("col %d: ours %x pg %x", i, a.Rows[0][i], b.Rows[0][i])
		}
		if a.FieldDescriptions[i].DataTypeOID != b.FieldDescriptions[i].DataTypeOID {
			t.Errorf("col %d: oid ours %d pg %d", i, a.FieldDescriptions[i].DataTypeOID, b.FieldDescriptions[i].DataTypeOID)
		}
	}
}

// TestIntervalWire: intervals keep their months, days and microseconds
// through pgx in every query mode, as results (binary: interval_send's
// microseconds, days, months) and as Bind parameters (binary and text).
func TestIntervalWire(t *testing.T) {
	addr := startServer(t, Options{})
	ctx := context.Background()
	want := []pgtype.Interval{
		{Months: 14, Days: 3, Microseconds: 4*3600e6 + 5*60e6 + 6500000, Valid: true},
		{Months: -14, Days: 3, Microseconds: -1, Valid: true},
		{Months: math.MinInt32, Days: math.MaxInt32, Microseconds: math.MinInt64 + 1, Valid: true},
		{Valid: true},
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeDescribeExec, pgx.QueryExecModeSimpleProtocol} {
		t.Run(mode.String(), func(t *testing.T) {
			c := connect(t, fmt.Sprintf("postgres://cellar@%s/cellar?sslmode=disable&default_query_exec_mode=%s", addr, strings.ReplaceAll(mode.String(), " ", "_")))
			for _, w := range want {
				var got, lit pgtype.Interval
				if err := c.QueryRow(ctx, `SELECT $1::interval, interval '1 year 2 mons 3 days 04:05:06.5'`, w).Scan(&got, &lit); err != nil {
					t.Fatalf("%+v: %v", w, err)
				}
				if got != w {
					t.Errorf("parameter %+v came back as %+v", w, got)
				}
				if lit != want[0] {
					t.Errorf("literal: %+v", lit)
				}
			}
		})
	}
	c := connect(t, fmt.Sprintf("postgres://cellar@%s/cellar?sslmode=disable", addr))
	res := c.PgConn().ExecParams(ctx, `SELECT interval '-1 mon 2 days -00:00:01'`, nil, nil, nil, []int16{1}).Read()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := fmt.Sprintf("%x", res.Rows[0][0]); got != "fffffffffff0bdc0"+"00000002"+"ffffffff" {
		t.Errorf("binary interval: %s", got)
	}
}
