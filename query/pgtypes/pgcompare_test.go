package pgtypes

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cellardb/cellar/query/sqlstate"
)

// The tests here compare with a PostgreSQL 15 (user postgres, trust)
// when CELLAR_PGEVAL_AGAINST names it (host:port): floats, dates and
// timestamps in every DateStyle and several zones, their input, date
// and time input forms with their errors, intervals in every
// IntervalStyle, and jsonb's canonical form.
func pgConn(t *testing.T) *pgx.Conn {
	addr := os.Getenv("CELLAR_PGEVAL_AGAINST")
	if addr == "" {
		t.Log("set CELLAR_PGEVAL_AGAINST=host:port to compare with a live PostgreSQL 15")
		return nil
	}
	c, err := pgx.Connect(context.Background(), "postgres://postgres@"+addr+"/postgres?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func pgText(t *testing.T, c *pgx.Conn, q string) (string, string) {
	parts := strings.Split(q, "; ")
	for _, p := range parts[:len(parts)-1] {
		if _, err := c.Exec(context.Background(), p); err != nil {
			return "", err.Error()
		}
	}
	q = parts[len(parts)-1]
	rows, err := c.Query(context.Background(), q, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return "", err.Error()
	}
	defer rows.Close()
	var s string
	for rows.Next() {
		v := rows.RawValues()
		s = string(v[0])
	}
	if rows.Err() != nil {
		return "", rows.Err().Error()
	}
	return s, ""
}

func TestAgainstPostgresFloats(t *testing.T) {
	c := pgConn(t)
	if c == nil {
		return
	}
	r := rand.New(rand.NewSource(1))
	vals := []float64{123456789.125, 1e20, 0.1, 1.5e-7, 1e15, 1e14, 999999999999999, 1e-4, 1e-5, 123.456, -0.000123, 5e-324, math.MaxFloat64, 1.0 / 3}
	for i := 0; i < 300; i++ {
		vals = append(vals, math.Float64frombits(r.Uint64()))
		vals = append(vals, r.NormFloat64()*math.Pow(10, float64(r.Intn(40)-20)))
	}
	bad := 0
	for _, f := range vals {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		for _, single := range []bool{false, true} {
			ty := "float8"
			g := f
			if single {
				ty = "float4"
				g = float64(float32(f))
				if math.IsInf(g, 0) || g == 0 && f != 0 {
					continue
				}
			}
			want, e := pgText(t, c, fmt.Sprintf("select '%s'::%s", strconv.FormatFloat(g, 'g', -1, 64), ty))
			if e != "" {
				continue
			}
			if got := formatFloat(g, single); got != want && bad < 20 {
				bad++
				t.Errorf("%s %v: got %s want %s", ty, g, got, want)
			}
		}
	}
}

func TestAgainstPostgresDates(t *testing.T) {
	c := pgConn(t)
	if c == nil {
		return
	}
	r := rand.New(rand.NewSource(2))
	var ts []time.Time
	for i := 0; i < 60; i++ {
		ts = append(ts, time.Date(1800+r.Intn(400), time.Month(1+r.Intn(12)), 1+r.Intn(28), r.Intn(24), r.Intn(60), r.Intn(60), r.Intn(3)*r.Intn(1000000)*1000, time.UTC))
	}
	bad := 0
	for _, ds := range []string{"ISO, MDY", "Postgres, MDY", "Postgres, DMY", "SQL, MDY", "SQL, DMY", "German, DMY", "ISO, YMD"} {
		for _, tz := range []string{"UTC", "PST8PDT", "Asia/Kolkata", "America/St_Johns", "Europe/Moscow", "Australia/Lord_Howe"} {
			st := Style{DateStyle: ds, TimeZone: tz, IntervalStyle: "postgres"}
			for _, x := range ts {
				for _, ty := range []uint32{OIDDate, OIDTimestamp, OIDTimestamptz} {
					lit := x.Format("2006-01-02 15:04:05.999999") + "+00"
					q := fmt.Sprintf("set datestyle='%s'; set timezone='%s'; select '%s'::%s", ds, tz, lit, map[uint32]string{OIDDate: "date", OIDTimestamp: "timestamp", OIDTimestamptz: "timestamptz"}[ty])
					want, e := pgText(t, c, q)
					if e != "" {
						t.Fatal(e)
					}
					v := x
					if ty == OIDDate {
						v = time.Date(x.Year(), x.Month(), x.Day(), 0, 0, 0, 0, time.UTC)
					}
					got := FormatTextStyle(ty, v, st)
					if got != want && bad < 30 {
						bad++
						t.Errorf("%s %s %d %s: got %q want %q", ds, tz, ty, lit, got, want)
					}
					// Input of the output, compared with PostgreSQL's.
					tyn := map[uint32]string{OIDDate: "date", OIDTimestamp: "timestamp", OIDTimestamptz: "timestamptz"}[ty]
					pgEpoch, pe := pgText(t, c, fmt.Sprintf("set datestyle='%s'; set timezone='%s'; select extract(epoch from '%s'::%s)", ds, tz, want, tyn))
					back, err := ParseDateTime(ty, want, st, time.Time{})
					if (err != nil) != (pe != "") && bad < 30 {
						bad++
						t.Errorf("parse %q (%s %s): we %v, pg %v", want, ds, tz, err, pe)
					} else if err == nil && pe == "" {
						sec := fmt.Sprintf("%.6f", float64(back.UnixMicro())/1e6)
						pf, _ := strconv.ParseFloat(pgEpoch, 64)
						if sec != fmt.Sprintf("%.6f", pf) && bad < 30 {
							bad++
							t.Errorf("parse %q (%s %s): we %s, pg %s", want, ds, tz, sec, pgEpoch)
						}
					}
				}
			}
		}
	}
}

// randomIntervals are (months, days, microseconds) triples of every
// size and every mix of signs, with the extremes.
func randomIntervals(r *rand.Rand, n int) []Interval {
	vals := []Interval{{}, {Micros: 1}, {Micros: -1}, {Days: 1}, {Days: -1}, {Months: 1}, {Months: -1}, {Months: 12}, {Months: -13},
		{Micros: math.MaxInt64}, {Micros: math.MinInt64}, {Days: math.MaxInt32}, {Days: math.MinInt32},
		{Months: math.MaxInt32}, {Months: math.MinInt32}, {math.MinInt32, math.MinInt32, math.MinInt64},
		{math.MaxInt32, math.MaxInt32, math.MaxInt64}, {14, -3, 4*3600e6 + 5*60e6 + 6e6}, {-14, 3, -1}, {0, 3, -1}, {0, -3, 1},
		{Micros: 1e6}, {Micros: -1e6}, {Micros: 1500000}, {Micros: -500000}, {Months: 1, Micros: -1}}
	pick := func(lim int64) int64 {
		switch r.Intn(4) {
		case 0:
			return 0
		case 1:
			return r.Int63n(20) - 10
		}
		v := r.Int63n(lim)
		if r.Intn(2) == 0 {
			v = -v
		}
		return v
	}
	for i := 0; i < n; i++ {
		iv := Interval{Months: int32(pick(1 << 31)), Days: int32(pick(1 << 31)), Micros: pick(math.MaxInt64)}
		switch r.Intn(4) {
		case 0:
			iv.Micros = iv.Micros / 1e6 * 1e6
		case 1:
			iv.Micros = iv.Micros % (86400e6 * 3)
		}
		vals = append(vals, iv)
	}
	return vals
}

// pgIntervalLiteral writes iv in a form PostgreSQL reads exactly in
// every IntervalStyle (explicit signs keep sql_standard from applying a
// leading minus to every field).
func pgIntervalLiteral(iv Interval) string {
	return fmt.Sprintf("%+d mons %+d days %+d usecs", iv.Months, iv.Days, iv.Micros)
}

// pgTexts runs one query over a text[] parameter per batch and returns
// the first column of each row.
func pgTexts(t *testing.T, c *pgx.Conn, q string, args []string) []string {
	var out []string
	for i := 0; i < len(args); i += 500 {
		batch := args[i:min(i+500, len(args))]
		rows, err := c.Query(context.Background(), q, batch)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			out = append(out, string(rows.RawValues()[0]))
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
	}
	return out
}

func TestAgainstPostgresIntervals(t *testing.T) {
	c := pgConn(t)
	if c == nil {
		return
	}
	vals := randomIntervals(rand.New(rand.NewSource(3)), 2000)
	lits := make([]string, len(vals))
	for i, v := range vals {
		lits[i] = pgIntervalLiteral(v)
	}
	bad, compared := 0, 0
	for _, is := range []string{"postgres", "postgres_verbose", "sql_standard", "iso_8601"} {
		if _, err := c.Exec(context.Background(), "set intervalstyle = "+is); err != nil {
			t.Fatal(err)
		}
		want := pgTexts(t, c, "select x::interval::text from unnest($1::text[]) with ordinality u(x, n) order by n", lits)
		for i, v := range vals {
			compared++
			if got := FormatInterval(v, is); got != want[i] && bad < 30 {
				bad++
				t.Errorf("%s %+v: got %q want %q", is, v, got, want[i])
			}
		}
		// Each style's output reads back as the same value, here and in
		// PostgreSQL (sql_standard's mixed signs aside, which PostgreSQL
		// documents as ambiguous).
		st := Style{IntervalStyle: is}
		for _, w := range want {
			compared++
			back, pe := pgText(t, c, fmt.Sprintf("set intervalstyle = %s; select %s::interval::text", is, quoteLit(w)))
			got, err := ParseInterval(w, st, -1)
			if (err != nil) != (pe != "") {
				if bad < 30 {
					bad++
					t.Errorf("%s: reading %q: we %v, PostgreSQL %s", is, w, err, pe)
				}
				continue
			}
			if err != nil {
				continue
			}
			if g := FormatInterval(got, is); g != back && bad < 30 {
				bad++
				t.Errorf("%s: %q read back as %q, PostgreSQL %q", is, w, g, back)
			}
		}
	}
	t.Logf("compared %d interval outputs and read-backs with PostgreSQL's", compared)
}

// intervalInputs are interval input forms, good and bad.
var intervalInputs = []string{
	"1 year 2 months 3 days 04:05:06", "1 year 2 mons -3 days 04:05:06.5", "@ 1 hour ago", "1.5 months", "1.5 days", "1.5 years",
	"-1.5 years", "0.1 mon", "1-2", "3 4:05:06", "-1-2 +3 -4:05:06", "-1 1:00:00", "P1Y2M3DT4H5M6.5S", "P0001-02-03T04:05:06",
	"PT-1H", "P1W2D", "P10000101", "PT040506", "P1.5Y", "P1Y-2M", "P1T2H", "P1", "PT5", "PT1:2", "PT1:2:3.5", "P1-2-3",
	"P1-2", "P1-2T3", "P-1.5D", "P0.5M", "PT0.5H", "P1e3D", "P-infD", "P-nanD", "P0x10D", "P.5D", "P1Y1Y", "P", "PT", "T1H", "p1d",
	" P1D", "P1D ", "P1.2.3D", "P2147483648D", "P1e16D", "PT1e15H", "1 day ago 2 hours", "1 day day", "1 day 2 days",
	"infinity", "-infinity", "invalid", "undefined", "now", "epoch", "1 day -", "+1 day", "- 1 day", "1.", ".5", ".", "1.5",
	"10", "1:2", "1:2.5", "1:2:3", "1:2:3.4.5", "25:61:00", "1:60", "1:59:61", "1:59:60.5", "-00:30", "-1:2:3", "+1:2:3",
	"00:30 0.5 days", "0.5 days 00:30", "1 hour 00:30", "1 2", "1 +02:03", "1e3 days", "1 yr 2 mons 3 days", "1 week 1.5 weeks",
	"12 dec", "1 decs", "7 mil", "1 c", "1 cent", "2 qtr", "2 quarter", "1 day quarter", "1 timezone", "5 microsecon",
	"5 microseconds", "5 millisecondss", "5 usecond", "5 msecond", "1 millenniums", "1 millenniumsx", "3 ms 4 us",
	"99999999999 hours", "2147483647 days 1 day", "178956970 years 8 months", "178956971 years", "2147483648 days",
	"-2147483648 days", "-2147483649 days", "9223372036854775807 usecs", "9223372036854775808 usecs",
	"-9223372036854775808 usecs", "2562047788 hours", "2562047789 hours", "153722867280 minutes", "1.5 centuries",
	"0.001 millennium", "1 week ago", "@ 1 day 2 hours 3 mins 4.5 secs ago", "@ 0", "0", "-0", "1d2h", "1h30m", "1y2m",
	"1mon2d", "1hr2min", "10min", "1d", "1 d 2 h 3 m 4 s", "1 h 2 m 3 s", "1:2:3 4", "4 1:2:3", "4 5 1:2:3", "1 day 1:2:3 ago",
	"1-2 3", "1-12", "1--2", "1-+2", "-1-2", "+1-2", "1-2-3", "1/2", "1-2 3 4:05:06", "1 + 2", "1 2:03", "1 -2:03",
	"1 day -1:00", "1 mon -1 day", "  1 day  ", "1\tday", "1,day", "@1 day", "1 day @", "1#day", "1 day 1 day",
	"1:00 2:00", "1.5.6", "1.5 1", "12345678901234567890 days", "1.00000000000000000001 seconds", "0.0000005 sec",
	"0.0000015 sec", "-0.0000005 sec", "2.5 usec", "1.5 weeks", "1.5 mons 1.5 days", "0.5 decades", "0.99 years",
	"1 1 1", "-1 -1", "x", "1 x", "ago", "1 ago", "ago 1 day", "1 day ago ago", "1 day +", "1 day -1 hour",
	"5.5 hours ago", "-5.5 hours ago", "1:2:3.999999", "1:2:3.9999995", "0:0:59.9999999", "1 day 24:00:00",
}

func TestAgainstPostgresIntervalInput(t *testing.T) {
	c := pgConn(t)
	if c == nil {
		return
	}
	inputs := append([]string(nil), intervalInputs...)
	// Long inputs: more than 25 fields, more than interval_in's buffer.
	inputs = append(inputs, strings.Repeat("1 day ", 13), strings.Repeat("1 ", 26), strings.Repeat("9", 300)+" days",
		strings.Repeat("1 d ", 12))
	r := rand.New(rand.NewSource(4))
	units := []string{"year", "mon", "month", "week", "day", "hour", "min", "sec", "ms", "us", "decade", "century", "y", "h", "m", "s", "d", "w", "c", "mil", "years", "days", "hours"}
	for i := 0; i < 300; i++ {
		var parts []string
		for j := 0; j < 1+r.Intn(4); j++ {
			n := fmt.Sprintf("%d", r.Intn(200)-50)
			if r.Intn(3) == 0 {
				n = fmt.Sprintf("%.*f", 1+r.Intn(7), r.Float64()*100-20)
			}
			parts = append(parts, n+" "+units[r.Intn(len(units))])
		}
		if r.Intn(4) == 0 {
			parts = append(parts, fmt.Sprintf("%d:%02d:%02d.%d", r.Intn(30), r.Intn(60), r.Intn(60), r.Intn(1000)))
		}
		if r.Intn(5) == 0 {
			parts = append(parts, "ago")
		}
		inputs = append(inputs, strings.Join(parts, " "))
	}
	for i := 0; i < 100; i++ {
		inputs = append(inputs, fmt.Sprintf("P%dY%dM%dDT%dH%dM%.3fS", r.Intn(100)-20, r.Intn(30), r.Intn(60)-10, r.Intn(50), r.Intn(100), r.Float64()*100))
	}
	// Random text over interval input's characters.
	const alpha = "0123456789 .:-+PTYMWDHSe@agodyhrsmn,/x"
	for i := 0; i < 1000; i++ {
		b := make([]byte, 1+r.Intn(14))
		for k := range b {
			b[k] = alpha[r.Intn(len(alpha))]
		}
		inputs = append(inputs, string(b))
	}
	bad, compared := 0, 0
	typmods := map[string]int32{"": -1}
	for _, tm := range []string{"year", "month", "day", "hour", "minute", "second", "year to month", "day to hour", "day to minute",
		"day to second", "hour to minute", "hour to second", "minute to second", "second(2)", "day to second(0)", "(3)"} {
		typmods[tm] = typmodOf(t, c, tm)
	}
	for _, is := range []string{"postgres", "sql_standard"} {
		for _, in := range inputs {
			for tm, typmod := range typmods {
				if tm != "" && r.Intn(8) != 0 {
					continue
				}
				compared++
				q := fmt.Sprintf("set intervalstyle = %s; select cast(%s as interval %s)::text", is, quoteLit(in), tm)
				want, pe := pgText(t, c, q)
				got, err := ParseInterval(in, Style{IntervalStyle: is}, typmod)
				if pe != "" || err != nil {
					wcode, gcode := sqlCode(pe), ""
					if err != nil {
						gcode = err.(*sqlstate.Error).Code
						if msg := err.(*sqlstate.Error).Message; !strings.Contains(pe, msg) && bad < 40 {
							bad++
							t.Errorf("%q %s [%s]: pg %s, we %v", in, tm, is, pe, err)
						}
					}
					if wcode != gcode && bad < 40 {
						bad++
						t.Errorf("%q %s [%s]: pg %s, we %v", in, tm, is, pe, err)
					}
					continue
				}
				if g := FormatInterval(got, is); g != want && bad < 40 {
					bad++
					t.Errorf("%q %s [%s]: got %q want %q", in, tm, is, g, want)
				}
			}
		}
	}
	t.Logf("compared %d interval inputs with PostgreSQL's", compared)
}

// typmodOf asks PostgreSQL for the typmod of "interval <tm>".
func typmodOf(t *testing.T, c *pgx.Conn, tm string) int32 {
	var v int32
	c.Exec(context.Background(), "drop table if exists iv_typmods")
	if _, err := c.Exec(context.Background(), "create temp table iv_typmods (c interval "+tm+")"); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(context.Background(), "select atttypmod from pg_attribute where attrelid = 'iv_typmods'::regclass and attname = 'c'").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func sqlCode(msg string) string {
	if i := strings.Index(msg, "SQLSTATE "); i >= 0 {
		return msg[i+9 : i+14]
	}
	return ""
}

func TestAgainstPostgresJSON(t *testing.T) {
	c := pgConn(t)
	if c == nil {
		return
	}
	docs := []string{`{"b":1,"a":2}`, `{"aa":1,"b":2,"a":3,"a":4}`, ` [1, 2.50 , 1e2, -0, 1E-2, 0.1e1, -1.5e+3, 12345678901234567890123]`, `"x\u00e9\n\t\"\\\/\u0001"`, `{"a":{"z":[],"y":{}}, "":null}`, `true`, ` null `, `"\ud83d\ude00"`, `{"a" : "b" , "c":[true,false,null]}`, `1e400`, `0.000000000001e-5`}
	for _, d := range docs {
		want, e := pgText(t, c, fmt.Sprintf("select %s::jsonb", quoteLit(d)))
		got, err := NormalizeJSONB(d)
		if e != "" || err != nil {
			t.Errorf("%s: pg %v, we %v", d, e, err)
			continue
		}
		if got != want {
			t.Errorf("%s: got %s want %s", d, got, want)
		}
	}
	for _, d := range []string{`{`, `{"a"}`, `[1,]`, `01`, `1.`, `.5`, `tru`, `"\x"`, `"a` + "\x01" + `"`, `{"a":1}x`, ``, `-`, `1e`, `"\ude00"`, `"\u0000"`, `nul`, `[1 2]`, `{"a":1,}`, `{1:2}`} {
		_, e := pgText(t, c, fmt.Sprintf("select %s::jsonb", quoteLit(d)))
		_, err := NormalizeJSONB(d)
		if e == "" || err == nil {
			t.Errorf("%q: pg %v, we %v", d, e, err)
			continue
		}
		t.Logf("%q: pg %s | we %v %s", d, e, err, err.(interface{ Error() string }).Error())
	}
}

func quoteLit(s string) string {
	out := "'"
	for _, r := range s {
		if r == '\'' {
			out += "''"
		} else {
			out += string(r)
		}
	}
	return out + "'"
}

func TestAgainstPostgresInputs(t *testing.T) {
	c := pgConn(t)
	if c == nil {
		return
	}
	inputs := []string{"2023-02-29", "2024-02-29", "2023-13-01", "13/25/2023", "abc", "2023-01-01 25:00", "2023-01-01 24:00", "2023-01-01 23:59:60",
		"1/2/2003", "Jan 2 2003", "2 Jan 2003", "20030102", "03-01-02", "1997.12.17", "17.12.1997", "December 17, 1997", "2003-01-02 04:05",
		"99-01-08", "01/02/03", "1997-12-17 07:37:16-08", "Wed Dec 17 1997", "12-17-1997", "17-Dec-1997", "Dec-17-1997", "1997-Dec-17",
		"2003-01-02T04:05:06Z", "2003-01-02 04:05:06 PST", "2003-01-02 04:05:06 America/New_York", "2003-01-02 04:05:06+0530", "2003-01-02 04:05:06+05:30",
		"Wed Dec 17 07:37:16 1997 PST", "epoch", "infinity", "-infinity", "12/17/1997 07:37:16.00 PST", "1997-12-17 07:37 pm", "1997-12-17 12:00 am",
		"J2451187", "2003-01-02 04:05:06 XYZ", "", "  2003-01-02  ", "2003-01-02 04:05:06.1234567", "2003-01-02 04:05:06.9999999", "2000-01-01 00:00:00-15",
		"0001-01-01", "9999-12-31 23:59:59", "1970-01-01 00:00:00 UTC", "2023-06-01 12:00 Europe/Berlin", "2023-06-01 12:00:00 CEST", "2023-06-01T12:00:00.5+02",
		"2023-06-01 13:00 pm", "2023-06-31", "2023-00-10", "2023-01-00", "20230132", "2023-1-5", "5/1/2023", "2023/01/05", "Jan 5, 2023 10:00", "Tuesday, Dec 17 1997",
		"1997-12-17 07:37:16-08:00", "2023-06-01 12:00 MSK", "12:00", "2023-06-01 12:00:61", "2023-06-01 12:60", "18.12.1997 12:00 CET", "2003-1-2 4:5:6"}
	bad := 0
	for _, ds := range []string{"ISO, MDY", "Postgres, DMY", "SQL, YMD"} {
		for _, tz := range []string{"UTC", "PST8PDT"} {
			st := Style{DateStyle: ds, TimeZone: tz}
			for _, in := range inputs {
				for _, ty := range []uint32{OIDDate, OIDTimestamp, OIDTimestamptz} {
					tyn := map[uint32]string{OIDDate: "date", OIDTimestamp: "timestamp", OIDTimestamptz: "timestamptz"}[ty]
					pgv, pe := pgText(t, c, fmt.Sprintf("set datestyle='%s'; set timezone='%s'; select extract(epoch from %s::%s)", ds, tz, quoteLit(in), tyn))
					got, err := ParseDateTime(ty, in, st, time.Time{})
					if pe != "" || err != nil {
						code := ""
						if i := strings.Index(pe, "SQLSTATE "); i >= 0 {
							code = pe[i+9 : i+14]
						}
						wcode := ""
						if err != nil {
							wcode = err.(interface{ Error() string }).Error()
							if i := strings.Index(wcode, "SQLSTATE "); i >= 0 {
								wcode = wcode[i+9 : i+14]
							}
						}
						if code != wcode && bad < 40 {
							bad++
							t.Errorf("%q::%s (%s %s): pg %s, we %v", in, tyn, ds, tz, pe, err)
						}
						continue
					}
					if pgv == "Infinity" || pgv == "-Infinity" {
						if IsInfinite(got) == 0 && bad < 40 {
							bad++
							t.Errorf("%q::%s: want infinity", in, tyn)
						}
						continue
					}
					sec := fmt.Sprintf("%.6f", float64(got.UnixMicro())/1e6)
					pf, _ := strconv.ParseFloat(pgv, 64)
					if sec != fmt.Sprintf("%.6f", pf) && bad < 40 {
						bad++
						t.Errorf("%q::%s (%s %s): we %s (%v), pg %s", in, tyn, ds, tz, sec, got, pgv)
					}
				}
			}
		}
	}
}

// TestAgainstPostgresNumericInput reads numeric text, the special values
// in every spelling, case and sign with white space around, and random
// strings over their characters, comparing values and errors with
// numeric_in's.
func TestAgainstPostgresNumericInput(t *testing.T) {
	c := pgConn(t)
	if c == nil {
		return
	}
	inputs := []string{"Infinity", "-Infinity", "+Infinity", "inf", "+inf", "-inf", "INF", "iNfInItY", "NaN", "nan", "-NaN", "+nan",
		" inf", "inf ", "\tinf\n", " \v-Infinity\f\r", "infinit", "infx", "Infinityy", "- inf", "+-inf", "in f", "1.50", " -0.000 ", "1e3", "1E-3",
		".5", "5.", "+.5e+2", "", " ", "e5", "1e", "--1", "0x10", "1_000", "\u00a0inf", "inf\u00a0"}
	r := rand.New(rand.NewSource(5))
	alphabet := []string{"i", "I", "n", "N", "f", "F", "t", "y", "a", "-", "+", " ", "\t", ".", "1", "0", "e"}
	for i := 0; i < 2000; i++ {
		var b strings.Builder
		if r.Intn(2) == 0 {
			b.WriteString([]string{" ", "", "-", "+", "\t"}[r.Intn(5)])
			b.WriteString([]string{"inf", "Infinity", "nan", "INFINITY", "1.5"}[r.Intn(5)])
		}
		for n := r.Intn(4); n > 0; n-- {
			b.WriteString(alphabet[r.Intn(len(alphabet))])
		}
		inputs = append(inputs, b.String())
	}
	bad, compared := 0, 0
	for _, in := range inputs {
		pgv, pe := pgText(t, c, "select "+quoteLit(in)+"::numeric")
		got, err := ParseText(OIDNumeric, in)
		compared++
		switch {
		case pe != "" || err != nil:
			if sqlCode(pe) != sqlCode(fmt.Sprint(err)) && bad < 40 {
				bad++
				t.Errorf("%q: pg %s, we %v", in, pe, err)
			}
		case string(got.(Numeric)) != pgv && bad < 40:
			bad++
			t.Errorf("%q: we %s, pg %s", in, got, pgv)
		}
	}
	t.Logf("compared %d numeric inputs with PostgreSQL's", compared)
}
