package pgtypes

import (
	"testing"
	"time"

	"github.com/cellardb/cellar/query/sqlstate"
)

// The expected texts here are PostgreSQL 15's (pgcompare_test.go checks
// many more values against a live server).

func TestFormatFloat(t *testing.T) {
	for _, c := range []struct {
		f      float64
		single bool
		want   string
	}{
		{123456789.125, false, "123456789.125"},
		{1e20, false, "1e+20"},
		{1.5e-7, false, "1.5e-07"},
		{0.1, false, "0.1"},
		{float64(float32(0.1)), true, "0.1"},
		{1234567, true, "1.234567e+06"},
		{123456, true, "123456"},
		{1e15, false, "1e+15"},
		{1e14, false, "100000000000000"},
		{0.0001, false, "0.0001"},
		{0.00001, false, "1e-05"},
		{1e-300, false, "1e-300"},
		{float64(float32(3.4e38)), true, "3.4e+38"},
		{100, false, "100"},
		{-0.0 * -1 * -1, false, "0"},
		{1.0 / 3, false, "0.3333333333333333"},
	} {
		if got := formatFloat(c.f, c.single); got != c.want {
			t.Errorf("%v (single %v): got %s, want %s", c.f, c.single, got, c.want)
		}
	}
}

func TestFormatDateTimeStyles(t *testing.T) {
	ts := time.Date(1997, 12, 17, 15, 37, 16, 0, time.UTC)
	summer := time.Date(2000, 7, 1, 10, 0, 0, 123456000, time.UTC)
	wall := time.Date(1997, 12, 17, 7, 37, 16, 500000000, time.UTC)
	for _, c := range []struct {
		style Style
		oid   uint32
		v     time.Time
		want  string
	}{
		{Style{DateStyle: "ISO, MDY", TimeZone: "PST8PDT"}, OIDTimestamptz, ts, "1997-12-17 07:37:16-08"},
		{Style{DateStyle: "ISO, MDY", TimeZone: "PST8PDT"}, OIDTimestamptz, summer, "2000-07-01 03:00:00.123456-07"},
		{Style{DateStyle: "ISO, DMY"}, OIDDate, ts, "1997-12-17"},
		{Style{DateStyle: "Postgres, MDY", TimeZone: "PST8PDT"}, OIDTimestamptz, ts, "Wed Dec 17 07:37:16 1997 PST"},
		{Style{DateStyle: "Postgres, MDY", TimeZone: "PST8PDT"}, OIDTimestamptz, summer, "Sat Jul 01 03:00:00.123456 2000 PDT"},
		{Style{DateStyle: "Postgres, MDY"}, OIDTimestamp, wall, "Wed Dec 17 07:37:16.5 1997"},
		{Style{DateStyle: "Postgres, MDY"}, OIDDate, ts, "12-17-1997"},
		{Style{DateStyle: "Postgres, DMY", TimeZone: "PST8PDT"}, OIDTimestamptz, ts, "Wed 17 Dec 07:37:16 1997 PST"},
		{Style{DateStyle: "Postgres, DMY"}, OIDDate, ts, "17-12-1997"},
		{Style{DateStyle: "Postgres, YMD"}, OIDDate, ts, "12-17-1997"},
		{Style{DateStyle: "SQL, MDY", TimeZone: "PST8PDT"}, OIDTimestamptz, ts, "12/17/1997 07:37:16 PST"},
		{Style{DateStyle: "SQL, DMY"}, OIDTimestamp, wall, "17/12/1997 07:37:16.5"},
		{Style{DateStyle: "SQL, YMD"}, OIDDate, ts, "12/17/1997"},
		{Style{DateStyle: "German, DMY", TimeZone: "PST8PDT"}, OIDTimestamptz, ts, "17.12.1997 07:37:16 PST"},
		{Style{DateStyle: "German, MDY"}, OIDDate, ts, "17.12.1997"},
		{Style{DateStyle: "ISO, MDY", TimeZone: "Asia/Kolkata"}, OIDTimestamptz, time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), "1900-01-01 05:21:10+05:21:10"},
		{Style{DateStyle: "ISO, MDY", TimeZone: "America/St_Johns"}, OIDTimestamptz, time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), "1999-12-31 20:30:00-03:30"},
		{Style{DateStyle: "Postgres, MDY", TimeZone: "Asia/Kathmandu"}, OIDTimestamptz, time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), "Sat Jan 01 05:45:00 2000 +0545"},
		{Style{DateStyle: "Postgres, MDY", TimeZone: "<-07>+07"}, OIDTimestamptz, time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), "Fri Dec 31 17:00:00 1999 -07"},
		{Style{DateStyle: "ISO, MDY", TimeZone: "-7"}, OIDTimestamptz, time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), "1999-12-31 17:00:00-07"},
		{DefaultStyle, OIDDate, time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), "0001-01-01 BC"},
		{DefaultStyle, OIDTimestamptz, TimeInfinity, "infinity"},
		{Style{DateStyle: "Postgres, MDY"}, OIDDate, TimeNegInfinity, "-infinity"},
	} {
		if got := FormatTextStyle(c.oid, c.v, c.style); got != c.want {
			t.Errorf("%v as %d in %+v: got %q, want %q", c.v, c.oid, c.style, got, c.want)
		}
	}
	// The zero Style and FormatText are ISO in UTC.
	if got := FormatText(OIDTimestamptz, ts); got != "1997-12-17 15:37:16+00" {
		t.Errorf("FormatText: %q", got)
	}
	if got := FormatTextStyle(OIDTimestamptz, ts, Style{}); got != "1997-12-17 15:37:16+00" {
		t.Errorf("zero Style: %q", got)
	}
}

func TestFormatInterval(t *testing.T) {
	vals := []int64{0, 86400e6, -86400e6, 2*86400e6 + 3*3600e6 + 4*60e6 + 5500000, -(2*86400e6 + 3*3600e6 + 4*60e6 + 5500000), 1e6, -1, 86400e6 + 1e6, 3600e6, 60e6, 2e6, 1500000, -1e6}
	want := map[string][]string{
		"postgres":         {"00:00:00", "1 day", "-1 days", "2 days 03:04:05.5", "-2 days -03:04:05.5", "00:00:01", "-00:00:00.000001", "1 day 00:00:01", "01:00:00", "00:01:00", "00:00:02", "00:00:01.5", "-00:00:01"},
		"postgres_verbose": {"@ 0", "@ 1 day", "@ 1 day ago", "@ 2 days 3 hours 4 mins 5.5 secs", "@ 2 days 3 hours 4 mins 5.5 secs ago", "@ 1 sec", "@ 0.000001 secs ago", "@ 1 day 1 sec", "@ 1 hour", "@ 1 min", "@ 2 secs", "@ 1.5 secs", "@ 1 sec ago"},
		"sql_standard":     {"0", "1 0:00:00", "-1 0:00:00", "2 3:04:05.5", "-2 3:04:05.5", "0:00:01", "-0:00:00.000001", "1 0:00:01", "1:00:00", "0:01:00", "0:00:02", "0:00:01.5", "-0:00:01"},
		"iso_8601":         {"PT0S", "P1D", "P-1D", "P2DT3H4M5.5S", "P-2DT-3H-4M-5.5S", "PT1S", "PT-0.000001S", "P1DT1S", "PT1H", "PT1M", "PT2S", "PT1.5S", "PT-1S"},
	}
	for style, ws := range want {
		for i, v := range vals {
			iv := Interval{Days: int32(v / 86400e6), Micros: v % 86400e6}
			if got := FormatInterval(iv, style); got != ws[i] {
				t.Errorf("%d µs in %s: got %q, want %q", v, style, got, ws[i])
			}
		}
	}
	// Months, days and time of different signs, as PostgreSQL 15 prints
	// them.
	mixed := Interval{Months: -14, Days: 3, Micros: -(4*3600e6 + 5*60e6 + 6e6)}
	for style, w := range map[string]string{
		"postgres":         "-1 years -2 mons +3 days -04:05:06",
		"postgres_verbose": "@ 1 year 2 mons -3 days 4 hours 5 mins 6 secs ago",
		"sql_standard":     "-1-2 +3 -4:05:06",
		"iso_8601":         "P-1Y-2M3DT-4H-5M-6S",
	} {
		if got := FormatInterval(mixed, style); got != w {
			t.Errorf("%+v in %s: got %q, want %q", mixed, style, got, w)
		}
	}
}

func TestParseDateTime(t *testing.T) {
	utc := func(y, mo, d, h, mi, s, us int) time.Time {
		return time.Date(y, time.Month(mo), d, h, mi, s, us*1000, time.UTC)
	}
	for _, c := range []struct {
		style Style
		oid   uint32
		in    string
		want  time.Time
		code  string
	}{
		{DefaultStyle, OIDDate, "2023-02-29", time.Time{}, "22008"},
		{DefaultStyle, OIDDate, "2024-02-29", utc(2024, 2, 29, 0, 0, 0, 0), ""},
		{DefaultStyle, OIDDate, "2023-13-01", time.Time{}, "22008"},
		{DefaultStyle, OIDDate, "13/25/2023", time.Time{}, "22008"},
		{DefaultStyle, OIDDate, "abc", time.Time{}, "22007"},
		{DefaultStyle, OIDDate, "", time.Time{}, "22007"},
		{DefaultStyle, OIDTimestamp, "2023-01-01 25:00", time.Time{}, "22008"},
		{DefaultStyle, OIDTimestamp, "2023-01-01 24:00", utc(2023, 1, 2, 0, 0, 0, 0), ""},
		{DefaultStyle, OIDTimestamp, "2023-01-01 23:59:60", utc(2023, 1, 2, 0, 0, 0, 0), ""},
		{DefaultStyle, OIDDate, "1/2/2003", utc(2003, 1, 2, 0, 0, 0, 0), ""},
		{Style{DateStyle: "SQL, DMY"}, OIDDate, "1/2/2003", utc(2003, 2, 1, 0, 0, 0, 0), ""},
		{Style{DateStyle: "ISO, YMD"}, OIDDate, "03/01/02", utc(2003, 1, 2, 0, 0, 0, 0), ""},
		{Style{DateStyle: "ISO, YMD"}, OIDDate, "1/2/2003", time.Time{}, "22008"},
		{DefaultStyle, OIDDate, "03-01-02", utc(2002, 3, 1, 0, 0, 0, 0), ""},
		{DefaultStyle, OIDDate, "Jan 2 2003", utc(2003, 1, 2, 0, 0, 0, 0), ""},
		{DefaultStyle, OIDDate, "2 Jan 2003", utc(2003, 1, 2, 0, 0, 0, 0), ""},
		{DefaultStyle, OIDDate, "20030102", utc(2003, 1, 2, 0, 0, 0, 0), ""},
		{DefaultStyle, OIDDate, "1997.12.17", utc(1997, 12, 17, 0, 0, 0, 0), ""},
		{DefaultStyle, OIDDate, "December 17, 1997", utc(1997, 12, 17, 0, 0, 0, 0), ""},
		{DefaultStyle, OIDDate, "1997-Dec-17", utc(1997, 12, 17, 0, 0, 0, 0), ""},
		{DefaultStyle, OIDDate, "J2451187", utc(1999, 1, 8, 0, 0, 0, 0), ""},
		{DefaultStyle, OIDDate, "1997-12-17 07:37:16-08", utc(1997, 12, 17, 0, 0, 0, 0), ""},
		{DefaultStyle, OIDTimestamptz, "2003-01-02T04:05:06Z", utc(2003, 1, 2, 4, 5, 6, 0), ""},
		{DefaultStyle, OIDTimestamptz, "2003-01-02 04:05:06 PST", utc(2003, 1, 2, 12, 5, 6, 0), ""},
		{DefaultStyle, OIDTimestamptz, "2003-01-02 04:05:06 America/New_York", utc(2003, 1, 2, 9, 5, 6, 0), ""},
		{DefaultStyle, OIDTimestamptz, "2003-01-02 04:05:06+0530", utc(2003, 1, 1, 22, 35, 6, 0), ""},
		{DefaultStyle, OIDTimestamptz, "Wed Dec 17 07:37:16 1997 PST", utc(1997, 12, 17, 15, 37, 16, 0), ""},
		{DefaultStyle, OIDTimestamptz, "12/17/1997 07:37:16.00 PST", utc(1997, 12, 17, 15, 37, 16, 0), ""},
		{DefaultStyle, OIDTimestamptz, "2003-01-02 04:05:06 XYZ", time.Time{}, "22007"},
		{Style{DateStyle: "ISO, MDY", TimeZone: "PST8PDT"}, OIDTimestamptz, "2003-07-02 04:05", utc(2003, 7, 2, 11, 5, 0, 0), ""},
		{Style{DateStyle: "ISO, MDY", TimeZone: "PST8PDT"}, OIDTimestamp, "2003-07-02 04:05-02", utc(2003, 7, 2, 4, 5, 0, 0), ""},
		{DefaultStyle, OIDTimestamp, "1997-12-17 07:37 pm", utc(1997, 12, 17, 19, 37, 0, 0), ""},
		{DefaultStyle, OIDTimestamp, "2003-01-02 04:05:06.1234567", utc(2003, 1, 2, 4, 5, 6, 123457), ""},
		{DefaultStyle, OIDTimestamptz, "epoch", utc(1970, 1, 1, 0, 0, 0, 0), ""},
		{DefaultStyle, OIDTimestamp, "infinity", TimeInfinity, ""},
		{DefaultStyle, OIDDate, "-infinity", TimeNegInfinity, ""},
		{DefaultStyle, OIDDate, "0001-01-01 BC", utc(0, 1, 1, 0, 0, 0, 0), ""},
	} {
		got, err := ParseDateTime(c.oid, c.in, c.style, time.Time{})
		if c.code != "" {
			if err == nil || sqlstate.AsError(err).Code != c.code {
				t.Errorf("%q as %d: got %v, %v; want error %s", c.in, c.oid, got, err, c.code)
			}
			continue
		}
		if err != nil || !got.Equal(c.want) {
			t.Errorf("%q as %d in %+v: got %v, %v; want %v", c.in, c.oid, c.style, got, err, c.want)
		}
	}
	_, err := ParseDateTime(OIDDate, "2023-02-29", DefaultStyle, time.Time{})
	if err.Error() != `date/time field value out of range: "2023-02-29" (SQLSTATE 22008)` && sqlstate.AsError(err).Message != `date/time field value out of range: "2023-02-29"` {
		t.Errorf("message: %v", err)
	}
	now := time.Date(2026, 1, 2, 7, 0, 0, 0, time.UTC)
	got, _ := ParseDateTime(OIDDate, "today", Style{TimeZone: "PST8PDT"}, now)
	if !got.Equal(utc(2026, 1, 1, 0, 0, 0, 0)) {
		t.Errorf("today in PST8PDT at 07:00 UTC: %v", got)
	}
}

func TestCanonicalSettings(t *testing.T) {
	for _, c := range []struct{ in, cur, want string }{
		{"Postgres, MDY", "ISO, MDY", "Postgres, MDY"},
		{"postgres", "ISO, DMY", "Postgres, DMY"},
		{"DMY", "Postgres, MDY", "Postgres, DMY"},
		{"German", "ISO, MDY", "German, DMY"},
		{"German, MDY", "ISO, MDY", "German, MDY"},
		{"sql, ymd", "ISO, MDY", "SQL, YMD"},
		{"ymd, sql", "ISO, MDY", "SQL, YMD"},
		{"euro", "ISO, MDY", "ISO, DMY"},
		{"US", "SQL, DMY", "SQL, MDY"},
		{"default", "SQL, DMY", "ISO, MDY"},
	} {
		if got, err := CanonicalDateStyle(c.in, c.cur); err != nil || got != c.want {
			t.Errorf("DateStyle %q after %q: got %q, %v; want %q", c.in, c.cur, got, err, c.want)
		}
	}
	if _, err := CanonicalDateStyle("nonsense", "ISO, MDY"); err == nil {
		t.Error("DateStyle nonsense accepted")
	}
	for _, c := range []struct{ in, want string }{
		{"utc", "UTC"}, {"GMT", "GMT"}, {"pst8pdt", "PST8PDT"}, {"america/new_york", "America/New_York"},
		{"-7", "<-07>+07"}, {"+5", "<+05>-05"}, {"Europe/Moscow", "Europe/Moscow"},
	} {
		if got, err := CanonicalTimeZone(c.in); err != nil || got != c.want {
			t.Errorf("TimeZone %q: got %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	if _, err := CanonicalTimeZone("Nowhere/Zone"); err == nil {
		t.Error("TimeZone Nowhere/Zone accepted")
	}
}

func TestJSONB(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"b":1,"a":2}`, `{"a": 2, "b": 1}`},
		{`{"aa":1,"b":2,"a":3,"a":4}`, `{"a": 4, "b": 2, "aa": 1}`},
		{` [1, 2.50 , 1e2, -0, 1E-2, 0.1e1, -1.5e+3]`, `[1, 2.50, 100, 0, 0.01, 1, -1500]`},
		{`"x\u00e9\n\t\"\\\/\u0001"`, `"xé\n\t\"\\/\u0001"`},
		{`{"a":{"z":[],"y":{}}, "":null}`, `{"": null, "a": {"y": {}, "z": []}}`},
		{` null `, `null`},
		{`"\ud83d\ude00"`, `"😀"`},
		{`{"a" : "b" , "c":[true,false,null]}`, `{"a": "b", "c": [true, false, null]}`},
	} {
		if got, err := NormalizeJSONB(c.in); err != nil || got != c.want {
			t.Errorf("%s: got %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{`{`, `{"a"}`, `[1,]`, `01`, `1.`, `.5`, `tru`, `"\x"`, "\"a\x01\"", `{"a":1}x`, ``, `-`, `1e`, `"\ude00"`, `[1 2]`, `{1:2}`} {
		_, err := NormalizeJSONB(in)
		if e := sqlstate.AsError(err); err == nil || e.Code != "22P02" || e.Message != "invalid input syntax for type json" {
			t.Errorf("%q: %v", in, err)
		}
		if ValidateJSON(in) == nil {
			t.Errorf("json %q accepted", in)
		}
	}
	if _, err := NormalizeJSONB(`"\u0000"`); sqlstate.AsError(err).Code != "22P05" {
		t.Errorf(`jsonb "\u0000": %v`, err)
	}
	if err := ValidateJSON(`"\u0000"`); err != nil {
		t.Errorf(`json "\u0000": %v`, err)
	}
	// json keeps its text; jsonb parameters are canonical.
	if v, _ := ParseText(OIDJSON, ` {"b":1, "a":2} `); v != ` {"b":1, "a":2} ` {
		t.Errorf("json: %q", v)
	}
	if v, _ := ParseText(OIDJSONB, ` {"b":1, "a":2} `); v != `{"a": 2, "b": 1}` {
		t.Errorf("jsonb: %q", v)
	}
}

func TestExtraFloatDigits(t *testing.T) {
	a, b := 0.1, 0.2 // not folded as constants
	settings := func(efd string) func(string) (string, bool) {
		return func(n string) (string, bool) {
			if n == "extra_float_digits" {
				return efd, true
			}
			return "", false
		}
	}
	for _, c := range []struct {
		efd  string
		oid  uint32
		f    float64
		want string
	}{
		{"1", OIDFloat8, 1.0 / 3, "0.3333333333333333"},
		{"3", OIDFloat8, a + b, "0.30000000000000004"},
		{"0", OIDFloat8, a + b, "0.3"},
		{"0", OIDFloat8, 1.0 / 3, "0.333333333333333"},
		{"0", OIDFloat8, 1e20, "1e+20"},
		{"0", OIDFloat8, 123456789.125, "123456789.125"},
		{"-3", OIDFloat8, 1.0 / 3, "0.333333333333"},
		{"-3", OIDFloat4, float64(float32(0.1)), "0.1"},
		{"0", OIDFloat4, float64(float32(1.0 / 3)), "0.333333"},
	} {
		if got := FormatTextStyle(c.oid, c.f, StyleFrom(settings(c.efd))); got != c.want {
			t.Errorf("%v with extra_float_digits %s: got %s, want %s", c.f, c.efd, got, c.want)
		}
	}
}

func TestParseNumeric(t *testing.T) {
	for _, c := range []struct{ in, want, code string }{
		{"1.50", "1.50", ""}, {" -1e2 ", "-100", ""}, {"1.5e1", "15", ""}, {"0.10e1", "1.0", ""}, {"-0", "0", ""}, {".5", "0.5", ""},
		{"5.", "5", ""}, {"1e-3", "0.001", ""}, {"+7", "7", ""}, {"NaN", "NaN", ""},
		{"0x10", "", "22P02"}, {"1/2", "", "22P02"}, {"1e", "", "22P02"}, {"--1", "", "22P02"}, {"1..2", "", "22P02"}, {"", "", "22P02"}, {"1_000", "", "22P02"},
		{"1e131072", "", "22003"}, {"1e-16384", "", "22003"}, {"1e999999999999", "", "22003"},
	} {
		v, err := ParseText(OIDNumeric, c.in)
		if c.code != "" {
			if err == nil || sqlstate.AsError(err).Code != c.code {
				t.Errorf("%q: got %v, %v; want %s", c.in, v, err, c.code)
			}
			continue
		}
		if err != nil || v != Numeric(c.want) {
			t.Errorf("%q: got %v, %v; want %s", c.in, v, err, c.want)
		}
	}
	if n, err := ParseNumeric("1e131071"); err != nil || len(n) != 131072 {
		t.Errorf("1e131071: %d digits, %v", len(n), err)
	}
	if _, err := NormalizeJSONB(`[1e999999]`); sqlstate.AsError(err).Code != "22003" {
		t.Errorf("jsonb 1e999999: %v", err)
	}
	if err := ValidateJSON(`[1e999999]`); err != nil {
		t.Errorf("json 1e999999: %v", err)
	}
}
