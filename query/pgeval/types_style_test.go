package pgeval

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// styleCases run with session settings; want is the first row's first
// column (the queries cast to text, which follows the settings) or
// "error CODE: message". Each was checked on PostgreSQL 15;
// CELLAR_PGEVAL_AGAINST=host:port checks them again.
var styleCases = []struct {
	dateStyle, timeZone, intervalStyle string
	sql, want                          string
}{
	// Dates: input errors.
	{"", "", "", `SELECT '2023-02-29'::date::text`, `error 22008: date/time field value out of range: "2023-02-29"`},
	{"", "", "", `SELECT '2024-02-29'::date::text`, `2024-02-29`},
	{"", "", "", `SELECT '2023-13-01'::date::text`, `error 22008: date/time field value out of range: "2023-13-01"`},
	{"", "", "", `SELECT 'abc'::date::text`, `error 22007: invalid input syntax for type date: "abc"`},
	{"", "", "", `SELECT ''::timestamp::text`, `error 22007: invalid input syntax for type timestamp: ""`},
	{"", "", "", `SELECT '2023-01-01 25:00'::timestamp::text`, `error 22008: date/time field value out of range: "2023-01-01 25:00"`},
	{"", "", "", `SELECT '2003-01-02 04:05:06 XYZ'::timestamptz::text`, `error 22007: invalid input syntax for type timestamp with time zone: "2003-01-02 04:05:06 XYZ"`},
	// Dates: input forms.
	{"", "", "", `SELECT '2003-01-02T04:05:06Z'::timestamptz::text`, `2003-01-02 04:05:06+00`},
	{"", "", "", `SELECT '2003-01-02 04:05:06 PST'::timestamptz::text`, `2003-01-02 12:05:06+00`},
	{"", "", "", `SELECT '2003-01-02 04:05:06 America/New_York'::timestamptz::text`, `2003-01-02 09:05:06+00`},
	{"", "", "", `SELECT '2003-01-02 04:05:06+0530'::timestamptz::text`, `2003-01-01 22:35:06+00`},
	{"", "", "", `SELECT 'Wed Dec 17 07:37:16 1997 PST'::timestamptz::text`, `1997-12-17 15:37:16+00`},
	{"", "", "", `SELECT '12/17/1997 07:37:16.00 PST'::timestamptz::text`, `1997-12-17 15:37:16+00`},
	{"", "", "", `SELECT 'epoch'::timestamptz::text`, `1970-01-01 00:00:00+00`},
	{"", "", "", `SELECT 'infinity'::timestamp::text`, `infinity`},
	{"", "", "", `SELECT '-infinity'::date::text`, `-infinity`},
	{"", "", "", `SELECT '2003-01-02 04:05:06 PST'::timestamp::text`, `2003-01-02 04:05:06`},
	{"", "", "", `SELECT '1997-12-17 07:37 pm'::timestamp::text`, `1997-12-17 19:37:00`},
	{"", "", "", `SELECT 'J2451187'::date::text`, `1999-01-08`},
	{"", "", "", `SELECT 'December 17, 1997'::date::text`, `1997-12-17`},
	{"", "", "", `SELECT '17-Dec-1997'::date::text`, `1997-12-17`},
	{"", "", "", `SELECT '03-01-02'::date::text`, `2002-03-01`},
	{"", "", "", `SELECT '2003-01-02 04:05:06.1234567'::timestamp::text`, `2003-01-02 04:05:06.123457`},
	{"", "", "", `SELECT '0001-01-01 BC'::date::text`, `0001-01-01 BC`},
	{"Postgres, DMY", "", "", `SELECT '1/2/2003'::date::text`, `01-02-2003`},
	{"Postgres, DMY", "", "", `SELECT '13/12/2003'::date::text`, `13-12-2003`},
	{"ISO, MDY", "", "", `SELECT '13/12/2003'::date::text`, `error 22008: date/time field value out of range: "13/12/2003"`},
	{"ISO, YMD", "", "", `SELECT '03/01/02'::date::text`, `2003-01-02`},
	// DateStyle and TimeZone output.
	{"Postgres, MDY", "PST8PDT", "", `SELECT '1997-12-17 07:37:16'::timestamptz::text`, `Wed Dec 17 07:37:16 1997 PST`},
	{"Postgres, MDY", "PST8PDT", "", `SELECT '2000-07-01 12:00:00.123456+02'::timestamptz::text`, `Sat Jul 01 03:00:00.123456 2000 PDT`},
	{"Postgres, MDY", "PST8PDT", "", `SELECT '1997-12-17 07:37:16.5'::timestamp::text`, `Wed Dec 17 07:37:16.5 1997`},
	{"Postgres, MDY", "PST8PDT", "", `SELECT '1997-12-17'::date::text`, `12-17-1997`},
	{"Postgres, DMY", "PST8PDT", "", `SELECT '1997-12-17 07:37:16'::timestamptz::text`, `Wed 17 Dec 07:37:16 1997 PST`},
	{"SQL, MDY", "PST8PDT", "", `SELECT '1997-12-17 07:37:16'::timestamptz::text`, `12/17/1997 07:37:16 PST`},
	{"SQL, DMY", "", "", `SELECT '1997-12-17 07:37:16.5'::timestamp::text`, `17/12/1997 07:37:16.5`},
	{"German, DMY", "PST8PDT", "", `SELECT '1997-12-17 07:37:16'::timestamptz::text`, `17.12.1997 07:37:16 PST`},
	{"German, DMY", "", "", `SELECT '1997-12-17'::date::text`, `17.12.1997`},
	{"ISO, MDY", "PST8PDT", "", `SELECT '2000-01-01 00:00:00+00'::timestamptz::text`, `1999-12-31 16:00:00-08`},
	{"ISO, MDY", "Asia/Kolkata", "", `SELECT '1900-01-01 00:00:00+00'::timestamptz::text`, `1900-01-01 05:21:10+05:21:10`},
	{"ISO, MDY", "America/St_Johns", "", `SELECT '2000-01-01 00:00:00+00'::timestamptz::text`, `1999-12-31 20:30:00-03:30`},
	{"Postgres, MDY", "Asia/Kathmandu", "", `SELECT '2000-01-01 00:00:00+00'::timestamptz::text`, `Sat Jan 01 05:45:00 2000 +0545`},
	// Conversions use the session zone.
	{"ISO, MDY", "PST8PDT", "", `SELECT '2003-07-02 04:05'::timestamptz::date::text`, `2003-07-02`},
	{"ISO, MDY", "PST8PDT", "", `SELECT '2003-07-02 04:05'::timestamp::timestamptz::text`, `2003-07-02 04:05:00-07`},
	{"ISO, MDY", "PST8PDT", "", `SELECT '2003-07-02 04:05+00'::timestamptz::timestamp::text`, `2003-07-01 21:05:00`},
	{"ISO, MDY", "PST8PDT", "", `SELECT '2003-07-02'::date::timestamptz::text`, `2003-07-02 00:00:00-07`},
	// Fields of a timestamptz are in the session zone.
	{"", "PST8PDT", "", `SELECT extract(hour from '2003-07-02 04:05+00'::timestamptz)::text`, `21`},
	{"", "PST8PDT", "", `SELECT date_part('epoch', '2003-07-02 04:05'::timestamp)::text`, `1057118700`},
	{"", "PST8PDT", "", `SELECT date_part('epoch', '2003-07-02 04:05+00'::timestamptz)::text`, `1057118700`},
	{"", "PST8PDT", "", `SELECT date_trunc('day', '2003-07-02 04:05+00'::timestamptz)::text`, `2003-07-01 00:00:00-07`},
	{"", "PST8PDT", "", `SELECT date_trunc('hour', '2003-07-02 04:35'::timestamp)::text`, `2003-07-02 04:00:00`},
	{"", "PST8PDT", "", `SELECT extract(timezone from '2003-07-02 04:05+00'::timestamptz)::text`, `-25200`},
	{"", "PST8PDT", "", `SELECT to_char('2003-07-02 04:05+00'::timestamptz, 'YYYY-MM-DD HH24:MI TZ')`, `2003-07-01 21:05 PDT`},
	{"", "PST8PDT", "", `SELECT extract(day from '2003-07-02'::date)::text`, `2`},
	// IntervalStyle.
	{"", "", "postgres", `SELECT '2 days 03:04:05.5'::interval::text`, `2 days 03:04:05.5`},
	{"", "", "postgres", `SELECT '-1 day'::interval::text`, `-1 days`},
	{"", "", "postgres_verbose", `SELECT '2 days 03:04:05.5'::interval::text`, `@ 2 days 3 hours 4 mins 5.5 secs`},
	{"", "", "postgres_verbose", `SELECT '-1 second'::interval::text`, `@ 1 sec ago`},
	{"", "", "postgres_verbose", `SELECT '0'::interval::text`, `@ 0`},
	{"", "", "sql_standard", `SELECT '2 days 03:04:05.5'::interval::text`, `2 3:04:05.5`},
	{"", "", "sql_standard", `SELECT '-00:00:01'::interval::text`, `-0:00:01`},
	{"", "", "sql_standard", `SELECT '0'::interval::text`, `0`},
	{"", "", "iso_8601", `SELECT '2 days 03:04:05.5'::interval::text`, `P2DT3H4M5.5S`},
	{"", "", "iso_8601", `SELECT '-1 second'::interval::text`, `PT-1S`},
	{"", "", "iso_8601", `SELECT '0'::interval::text`, `PT0S`},
	// Interval input in every style's output form.
	{"", "", "", `SELECT '@ 2 days 3 hours 4 mins 5.5 secs ago'::interval::text`, `-2 days -03:04:05.5`},
	{"", "", "", `SELECT '@ 1 minute'::interval::text`, `00:01:00`},
	{"", "", "", `SELECT '1 2:03:04'::interval::text`, `1 day 02:03:04`},
	{"", "", "", `SELECT 'P2DT3H4M5.5S'::interval::text`, `2 days 03:04:05.5`},
	{"", "", "", `SELECT 'PT-1S'::interval::text`, `-00:00:01`},
	{"", "", "", `SELECT '10min'::interval::text`, `00:10:00`},
	{"", "", "", `SELECT '1.5 hours'::interval::text`, `01:30:00`},
	{"", "", "", `SELECT '-1 day'::interval::text`, `-1 days`},
	{"", "", "", `SELECT 'nonsense'::interval::text`, `error 22007: invalid input syntax for type interval: "nonsense"`},
	// Text from other types follows the styles.
	{"Postgres, MDY", "PST8PDT", "", `SELECT 'at ' || '2003-07-02 04:05+00'::timestamptz`, `at Tue Jul 01 21:05:00 2003 PDT`},
	{"SQL, DMY", "", "", `SELECT concat('d=', '2003-07-02'::date)`, `d=02/07/2003`},
	{"SQL, DMY", "", "", `SELECT format('%s %L', '2003-07-02'::date, '2003-07-02'::date)`, `02/07/2003 '02/07/2003'`},
	{"", "", "postgres_verbose", `SELECT array_to_string(ARRAY['1 hour'::interval], ',')`, `@ 1 hour`},
	// JSON from dates, times and intervals.
	{"SQL, DMY", "Asia/Kolkata", "iso_8601", `SELECT to_json('2003-07-02 04:05+00'::timestamptz)::text`, `"2003-07-02T09:35:00+05:30"`},
	{"SQL, DMY", "Asia/Kolkata", "iso_8601", `SELECT to_json('2003-07-02 04:05:06.5'::timestamp)::text`, `"2003-07-02T04:05:06.5"`},
	{"SQL, DMY", "Asia/Kolkata", "iso_8601", `SELECT to_json('2003-07-02'::date)::text`, `"2003-07-02"`},
	{"SQL, DMY", "Asia/Kolkata", "iso_8601", `SELECT to_json('1 day'::interval)::text`, `"P1D"`},
	{"SQL, DMY", "Asia/Kolkata", "iso_8601", `SELECT to_jsonb(ARRAY['2003-07-02 04:05+00'::timestamptz])::text`, `["2003-07-02T09:35:00+05:30"]`},
	{"", "", "", `SELECT to_json('2003-07-02 04:05+00'::timestamptz)::text`, `"2003-07-02T04:05:00+00:00"`},
	{"", "", "", `SELECT to_json('infinity'::timestamptz)::text`, `"infinity"`},
	{"", "", "", `SELECT jsonb_build_object('t', '2003-07-02 04:05'::timestamp, 'f', 0.1::float8)::text`, `{"f": 0.1, "t": "2003-07-02T04:05:00"}`},
	// Floats.
	{"", "", "", `SELECT 123456789.125::float8::text`, `123456789.125`},
	{"", "", "", `SELECT 1e20::float8::text`, `1e+20`},
	{"", "", "", `SELECT 0.1::float4::text`, `0.1`},
	{"", "", "", `SELECT 1.5e-7::float8::text`, `1.5e-07`},
	{"", "", "", `SELECT 1234567::float4::text`, `1.234567e+06`},
	{"", "", "", `SELECT 100000000000000::float8::text`, `100000000000000`},
	{"", "", "", `SELECT 1e15::float8::text`, `1e+15`},
	{"", "", "", `SELECT '-0'::float8::text`, `-0`},
	// jsonb is canonical; json keeps its text.
	{"", "", "", `SELECT '{"b": [1,  2], "a": 1, "b": 3}'::jsonb::text`, `{"a": 1, "b": 3}`},
	{"", "", "", `SELECT '{"b":1,"aa":{"y":1.50,"x":1e2}, "a":-0}'::jsonb::text`, `{"a": 0, "b": 1, "aa": {"x": 100, "y": 1.50}}`},
	{"", "", "", `SELECT '{"b":1,"aa":{"y":1.50,"x":1e2}}'::jsonb -> 'aa'`, `{"x": 100, "y": 1.50}`},
	{"", "", "", `SELECT '{"a": [1,  2]}'::json -> 'a'`, `[1,  2]`},
	{"", "", "", `SELECT '{"a":1, "a" : [1,  2]}'::json ->> 'a'`, `[1,  2]`},
	{"", "", "", `SELECT '[1, {"x": 2.50}]'::json -> 1`, `{"x": 2.50}`},
	{"", "", "", `SELECT '{"a":"x\u00e9"}'::jsonb ->> 'a'`, `xé`},
	{"", "", "", `SELECT '{"a":"x\u00e9"}'::jsonb::text`, `{"a": "xé"}`},
	{"", "", "", `SELECT ' {"a" : 1 } '::json::text`, ` {"a" : 1 } `},
	{"", "", "", `SELECT '{bad'::jsonb`, `error 22P02: invalid input syntax for type json`},
	{"", "", "", `SELECT '{bad'::json`, `error 22P02: invalid input syntax for type json`},
	{"", "", "", `SELECT '[1,]'::jsonb`, `error 22P02: invalid input syntax for type json`},
	{"", "", "", `SELECT '"\u0000"'::jsonb`, `error 22P05: unsupported Unicode escape sequence`},
	{"", "", "", `SELECT jsonb_build_object('b', 1, 'a', 2)::text`, `{"a": 2, "b": 1}`},
	{"", "", "", `SELECT to_jsonb(ARRAY[1,2])::text`, `[1, 2]`},
	{"", "", "", `SELECT ('{"a":1}'::jsonb || '{"a":2,"c":3}')::text`, `{"a": 2, "c": 3}`},
	{"", "", "", `SELECT ('[1]'::jsonb || '2')::text`, `[1, 2]`},
	// Arrays and records follow the styles too.
	{"SQL, DMY", "", "", `SELECT ARRAY['1997-12-17'::date, NULL]::text`, `{17/12/1997,NULL}`},
	{"Postgres, MDY", "", "", `SELECT ARRAY['1997-12-17 07:37:16'::timestamp]::text`, `{"Wed Dec 17 07:37:16 1997"}`},
}

func styleEnv(dateStyle, timeZone, intervalStyle string) *Env {
	env := testEnv(&memCatalog{rels: map[string]Relation{}})
	base := env.Setting
	over := map[string]string{"datestyle": dateStyle, "timezone": timeZone, "intervalstyle": intervalStyle}
	env.Setting = func(n string) (string, bool) {
		if v := over[strings.ToLower(n)]; v != "" {
			return v, true
		}
		if strings.EqualFold(n, "timezone") {
			return "UTC", true
		}
		return base(n)
	}
	return env
}

// firstValue is the first row's first column of runQuery's output, or
// its error line.
func firstValue(out string) string {
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if strings.HasPrefix(lines[0], "error ") {
		if i := strings.Index(lines[0], " (at "); i >= 0 {
			return lines[0][:i]
		}
		return lines[0]
	}
	if len(lines) < 2 {
		return "(no rows)"
	}
	return strings.Split(lines[1], " | ")[0]
}

func TestTypeStyles(t *testing.T) {
	for _, c := range styleCases {
		got := firstValue(runQuery(styleEnv(c.dateStyle, c.timeZone, c.intervalStyle), c.sql, nil, 0))
		if got != c.want {
			t.Errorf("%s [%s; %s; %s]:\n got %s\nwant %s", c.sql, c.dateStyle, c.timeZone, c.intervalStyle, got, c.want)
		}
	}
}

// TestTypeStylesAgainstPostgres checks styleCases on PostgreSQL 15 when
// CELLAR_PGEVAL_AGAINST names one.
func TestTypeStylesAgainstPostgres(t *testing.T) {
	addr := os.Getenv("CELLAR_PGEVAL_AGAINST")
	if addr == "" {
		t.Log("set CELLAR_PGEVAL_AGAINST=host:port to compare with a live PostgreSQL 15")
		return
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", addr))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, c := range styleCases {
		set := func(name, v, def string) {
			if v == "" {
				v = def
			}
			if _, err := conn.Exec(ctx, fmt.Sprintf("SET %s = '%s'", name, v)); err != nil {
				t.Fatal(err)
			}
		}
		set("DateStyle", c.dateStyle, "ISO, MDY")
		set("TimeZone", c.timeZone, "UTC")
		set("IntervalStyle", c.intervalStyle, "postgres")
		var got string
		rows, err := conn.Query(ctx, c.sql, pgx.QueryExecModeSimpleProtocol)
		if err == nil {
			for rows.Next() {
				if got == "" {
					got = string(rows.RawValues()[0])
				}
			}
			err = rows.Err()
		}
		if err != nil {
			if pe, ok := err.(*pgconn.PgError); ok {
				got = "error " + pe.Code + ": " + pe.Message
			} else {
				got = err.Error()
			}
		}
		if got != c.want {
			t.Errorf("%s [%s; %s; %s]: PostgreSQL says %s, the case %s", c.sql, c.dateStyle, c.timeZone, c.intervalStyle, got, c.want)
		}
	}
}
