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

func TestAgainstPostgresIntervals(t *testing.T) {
	c := pgConn(t)
	if c == nil {
		return
	}
	r := rand.New(rand.NewSource(3))
	vals := []int64{0, 1, -1, 86400e6, -86400e6, 3600e6, 60e6, 1e6, 1500000, 2*86400e6 + 3*3600e6 + 4*60e6 + 5500000}
	for i := 0; i < 100; i++ {
		v := r.Int63n(1e12) - 5e11
		if i%3 == 0 {
			v = v / 1e6 * 1e6
		}
		vals = append(vals, v)
	}
	bad := 0
	for _, is := range []string{"postgres", "postgres_verbose", "sql_standard", "iso_8601"} {
		for _, v := range vals {
			days := v / 86400e6
			rest := v - days*86400e6
			want, e := pgText(t, c, fmt.Sprintf("set intervalstyle=%s; select make_interval(days=>%d, secs=>%d/1e6)", is, days, rest))
			if e != "" {
				t.Fatal(e)
			}
			if got := FormatInterval(v, is); got != want && bad < 30 {
				bad++
				t.Errorf("%s %d: got %q want %q", is, v, got, want)
			}
		}
	}
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
