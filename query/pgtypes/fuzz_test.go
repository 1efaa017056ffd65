package pgtypes

import (
	"math"
	"testing"
	"time"
)

// FuzzParseDateTime: date/time input never panics, and what it reads
// prints and reads back the same in every DateStyle.
func FuzzParseDateTime(f *testing.F) {
	for _, s := range []string{"2023-02-29", "Wed Dec 17 07:37:16 1997 PST", "12/17/1997 07:37:16.00 PST", "17.12.1997", "J2451187",
		"0001-01-01 BC", "epoch", "-infinity", "2003-01-02T04:05:06+05:30", "1997-Dec-17 12:00 am", "20030102", "99999-01-01"} {
		f.Add(s)
	}
	styles := []Style{DefaultStyle, {DateStyle: "Postgres, DMY", TimeZone: "PST8PDT"}, {DateStyle: "SQL, MDY", TimeZone: "Asia/Kolkata"}, {DateStyle: "German, DMY"}}
	f.Fuzz(func(t *testing.T, s string) {
		for _, oid := range []uint32{OIDDate, OIDTimestamp, OIDTimestamptz} {
			for _, st := range styles {
				v, err := ParseDateTime(oid, s, st, time.Time{})
				if err != nil {
					continue
				}
				if v.Year() < -4700 || v.Year() > 294276 {
					continue
				}
				out := FormatTextStyle(oid, v, st)
				back, err := ParseDateTime(oid, out, st, time.Time{})
				if style, _ := st.dateStyle(); oid == OIDTimestamptz && style != dateISO {
					continue // zone abbreviations need not read back
				}
				if err != nil || !back.Equal(v) {
					t.Errorf("%q as %d in %+v: %v printed %q read back %v, %v", s, oid, st, v, out, back, err)
				}
			}
		}
	})
}

// FuzzJSON: JSON input never panics, and jsonb's canonical form is a
// fixed point.
func FuzzJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1,  2.50e1]}`, `"\ud83d\ude00"`, `[{"":null}, true, -0.0]`, `{"a":1,"a":2}`, `1e400`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ValidateJSON(s)
		out, err := NormalizeJSONB(s)
		if err != nil {
			return
		}
		again, err := NormalizeJSONB(out)
		if err != nil || again != out {
			t.Errorf("%q: canonical %q, again %q, %v", s, out, again, err)
		}
	})
}

// FuzzParseInterval: interval input never panics, and what it reads
// prints in every IntervalStyle as text that reads back the same in
// that style.
func FuzzParseInterval(f *testing.F) {
	for _, s := range intervalInputs {
		f.Add(s)
	}
	styles := []string{"postgres", "postgres_verbose", "sql_standard", "iso_8601"}
	f.Fuzz(func(t *testing.T, s string) {
		for _, in := range styles {
			v, err := ParseInterval(s, Style{IntervalStyle: in}, -1)
			if err != nil {
				continue
			}
			for _, out := range styles {
				text := FormatInterval(v, out)
				back, err := ParseInterval(text, Style{IntervalStyle: out}, -1)
				if err != nil {
					// PostgreSQL cannot read back the most negative
					// days, months or hours either.
					if v.Days != math.MinInt32 && v.Months/12 != math.MinInt32/12 && v.Micros > -USecsPerHour*2562047788 {
						t.Errorf("%q (%+v) printed %q in %s: %v", s, v, text, out, err)
					}
					continue
				}
				if back != v {
					t.Errorf("%q (%+v) printed %q in %s, read back %+v", s, v, text, out, back)
				}
			}
		}
	})
}
