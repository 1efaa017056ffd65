package pgeval

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// addIntervalFuncs adds the interval functions and the date and
// timestamp constructors.
func addIntervalFuncs(add func(string, ...*builtin)) {
	justify := func(f func(pgtypes.Interval) (pgtypes.Interval, error)) *builtin {
		return &builtin{args: []uint32{tIv}, ret: tIv, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) { return f(a[0].(pgtypes.Interval)) }}
	}
	add("justify_days", justify(pgtypes.Interval.JustifyDays))
	add("justify_hours", justify(pgtypes.Interval.JustifyHours))
	add("justify_interval", justify(pgtypes.Interval.JustifyInterval))
	add("make_interval", &builtin{args: []uint32{tInt4, tInt4, tInt4, tInt4, tInt4, tInt4, tF8}, min: -1, ret: tIv,
		names:    []string{"years", "months", "weeks", "days", "hours", "mins", "secs"},
		defaults: []any{int64(0), int64(0), int64(0), int64(0), int64(0), int64(0), 0.0},
		fn:       func(_ *evalCtx, a []any, _ []uint32) (any, error) { return makeInterval(a) }})
	add("make_date", &builtin{args: []uint32{tInt4, tInt4, tInt4}, ret: pgtypes.OIDDate, names: []string{"year", "month", "day"},
		fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
			return makeDate(a[0].(int64), a[1].(int64), a[2].(int64))
		}})
	tsNames := []string{"year", "month", "mday", "hour", "min", "sec", "timezone"}
	add("make_timestamp", &builtin{args: []uint32{tInt4, tInt4, tInt4, tInt4, tInt4, tF8}, ret: tTSo, names: tsNames[:6],
		fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
			us, err := makeTimestamp(a)
			if err != nil {
				return nil, err
			}
			return pgtypes.TimeFromMicros(us), nil
		}})
	add("make_timestamptz", &builtin{args: []uint32{tInt4, tInt4, tInt4, tInt4, tInt4, tF8}, ret: tTS, names: tsNames[:6],
		fn: func(ec *evalCtx, a []any, _ []uint32) (any, error) {
			us, err := makeTimestamp(a)
			if err != nil {
				return nil, err
			}
			tm, _ := pgtypes.BreakTimestamp(us, nil)
			us -= int64(pgtypes.ZoneOffset(tm, styleOf(ec).Location())) * pgtypes.USecsPerSec
			if !pgtypes.ValidTimestamp(us) {
				return nil, pgtypes.ErrTimestampRange()
			}
			return pgtypes.TimeFromMicros(us), nil
		}},
		&builtin{args: []uint32{tInt4, tInt4, tInt4, tInt4, tInt4, tF8, tText}, ret: tTS, names: tsNames,
			fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
				us, err := makeTimestamp(a)
				if err != nil {
					return nil, err
				}
				tm, _ := pgtypes.BreakTimestamp(us, nil)
				off, err := pgtypes.NamedZoneOffset(str(a[6]), tm)
				if err != nil {
					return nil, err
				}
				us -= int64(off) * pgtypes.USecsPerSec
				if !pgtypes.ValidTimestamp(us) {
					return nil, pgtypes.ErrTimestampRange()
				}
				return pgtypes.TimeFromMicros(us), nil
			}})
	finite := func(t uint32) *builtin {
		return &builtin{args: []uint32{t}, ret: tBool, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
			if x, ok := a[0].(time.Time); ok {
				return pgtypes.IsInfinite(x) == 0, nil
			}
			return true, nil // PostgreSQL 15 has no infinite intervals
		}}
	}
	add("isfinite", finite(pgtypes.OIDDate), finite(tTS), finite(tTSo), finite(tIv))
}

// currentDate is CURRENT_DATE: today in the session's time zone.
func currentDate(ec *evalCtx) time.Time {
	return truncDay(ec.env.Now.In(styleOf(ec).Location()))
}

// validateDate is ValidateDate for make_date and make_timestamp: a
// negative year is BC. It returns the internal year (0 for 1 BC).
// make_date's errors show the year as ValidateDate left it (asGiven
// false), make_timestamp's as given.
func validateDate(y, m, d int64, asGiven bool) (int, error) {
	year := y
	bc := year < 0
	if bc {
		year = -year
	}
	bad := func() error {
		shown := year
		if asGiven {
			shown = y
		}
		return sqlstate.Errorf(codeDatetimeOverflow, "date field value out of range: %d-%02d-%02d", shown, m, d)
	}
	if year <= 0 || year > math.MaxInt32 {
		return 0, bad()
	}
	if bc {
		year = -(year - 1)
	}
	if m < 1 || m > 12 || d < 1 || d > 31 || d > int64(pgtypes.DaysInMonth(int(year), int(m))) {
		return 0, bad()
	}
	if !pgtypes.ValidJulian(int(year), int(m)) {
		shown := year
		if asGiven {
			shown = y
		}
		return 0, sqlstate.Errorf(codeDatetimeOverflow, "date out of range: %d-%02d-%02d", shown, m, d)
	}
	return int(year), nil
}

// makeDate is make_date.
func makeDate(y, m, d int64) (any, error) {
	year, err := validateDate(y, m, d, false)
	if err != nil {
		return nil, err
	}
	if pgtypes.Date2J(year, int(m), int(d)) >= 2147483494 {
		return nil, sqlstate.Errorf(codeDatetimeOverflow, "date out of range: %d-%02d-%02d", year, m, d)
	}
	return time.Date(year, time.Month(m), int(d), 0, 0, 0, 0, time.UTC), nil
}

// makeTimestamp is make_timestamp_internal: the timestamp of year,
// month, mday, hour, min and sec, as microseconds.
func makeTimestamp(a []any) (int64, error) {
	m, d, h, mi := a[1].(int64), a[2].(int64), a[3].(int64), a[4].(int64)
	sec := a[5].(float64)
	y, err := validateDate(a[0].(int64), m, d, true)
	if err != nil {
		return 0, err
	}
	secText := cFormatG2(sec)
	us := math.RoundToEven(float64(sec * 1e6))
	if h < 0 || h > 24 || mi < 0 || mi >= 60 || math.IsNaN(sec) || us < 0 || us > 60e6 ||
		float64((h*60+mi)*60*1e6)+us > float64(pgtypes.USecsPerDay) {
		return 0, sqlstate.Errorf(codeDatetimeOverflow, "time field value out of range: %d:%02d:%s", h, mi, secText)
	}
	date := int64(pgtypes.Date2J(y, int(m), int(d)) - 2451545)
	t := (h*60+mi)*60*pgtypes.USecsPerSec + int64(us)
	r := date*pgtypes.USecsPerDay + t
	if (r-t)/pgtypes.USecsPerDay != date || r < 0 && date > 0 || r > 0 && date < -1 || !pgtypes.ValidTimestamp(r) {
		return 0, sqlstate.Errorf(codeDatetimeOverflow, "timestamp out of range: %d-%02d-%02d %d:%02d:%s", a[0].(int64), m, d, h, mi, secText)
	}
	return r, nil
}

// cFormatG2 is C's %02g.
func cFormatG2(f float64) string {
	s := strconv.FormatFloat(f, 'g', 6, 64)
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case len(s) < 2:
		return "0" + s
	}
	return s
}

// intervalToChar is to_char(interval, text) for the template patterns
// to_char of a timestamp supports here (HH24, HH12, HH, MI, SS, MS, US,
// YYYY, YY, MM, DD, AM, PM, with FM), with PostgreSQL's interval rules:
// hours beyond 24, negative fields, and month and day names refused.
func intervalToChar(iv pgtypes.Interval, f string) (any, error) {
	if f == "" {
		return nil, nil
	}
	fl := iv.Fields()
	year, hour := int64(fl.Year), fl.Hour
	pad := func(fm bool, v int64, w int) string {
		if fm {
			return strconv.FormatInt(v, 10)
		}
		if v < 0 {
			w++
		}
		return fmt.Sprintf("%0*d", w, v)
	}
	signed := func(v int64) int {
		if v < 0 {
			return 1
		}
		return 0
	}
	var b strings.Builder
	for i := 0; i < len(f); {
		if f[i] == '"' {
			j := i + 1
			for j < len(f) && f[j] != '"' {
				if f[j] == '\\' && j+1 < len(f) {
					j++
				}
				b.WriteByte(f[j])
				j++
			}
			i = j + 1
			continue
		}
		fm := false
		k := i
		if strings.HasPrefix(f[k:], "FM") || strings.HasPrefix(f[k:], "fm") {
			fm, k = true, k+2
		}
		kw := ""
		for _, w := range toCharKeywords {
			if strings.HasPrefix(f[k:], w) {
				kw = w
				break
			}
		}
		if kw == "" {
			if fm {
				i = k
				continue
			}
			b.WriteByte(f[i])
			i++
			continue
		}
		i = k + len(kw)
		switch strings.ToUpper(kw) {
		case "HH24":
			b.WriteString(pad(fm, hour, 2))
		case "HH12", "HH":
			h := hour % 12
			if h == 0 {
				h = 12
			}
			b.WriteString(fmtWidth(fm, h, 2+signed(hour)))
		case "MI":
			b.WriteString(pad(fm, int64(fl.Min), 2))
		case "SS":
			b.WriteString(pad(fm, int64(fl.Sec), 2))
		case "MS":
			b.WriteString(fmtWidth(false, int64(fl.USec/1000), 3))
		case "US":
			b.WriteString(fmtWidth(false, int64(fl.USec), 6))
		case "YYYY":
			b.WriteString(pad(fm, year, 4))
		case "YY":
			b.WriteString(fmtWidth(fm, year%100, 2+signed(year)))
		case "MM":
			b.WriteString(pad(fm, int64(fl.Mon), 2))
		case "DD":
			b.WriteString(fmtWidth(fm, int64(fl.Day), 2))
		case "AM", "PM", "A.M.", "P.M.":
			pm := hour%24 >= 12
			out := map[bool]string{false: "AM", true: "PM"}[pm]
			if strings.Contains(kw, ".") {
				out = map[bool]string{false: "A.M.", true: "P.M."}[pm]
			}
			if kw[0] >= 'a' {
				out = strings.ToLower(out)
			}
			b.WriteString(out)
		default:
			e := sqlstate.Errorf(codeInvalidDatetimeFormat, "invalid format specification for an interval value")
			e.Hint = "Intervals are not tied to specific calendar dates."
			return nil, e
		}
	}
	return b.String(), nil
}

// fmtWidth is C's "%0*d" with width w (0 under FM).
func fmtWidth(fm bool, v int64, w int) string {
	if fm {
		w = 0
	}
	return fmt.Sprintf("%0*d", w, v)
}

// toCharKeywords are the template patterns intervalToChar knows, longest
// first where one starts another.
var toCharKeywords = []string{
	"MONTH", "Month", "month", "MON", "Mon", "mon", "DAY", "Day", "day", "DY", "Dy", "dy", "TZ", "tz",
	"HH24", "HH12", "HH", "hh24", "hh12", "hh", "MI", "mi", "SS", "ss", "MS", "ms", "US", "us",
	"YYYY", "YY", "yyyy", "yy", "MM", "mm", "DD", "dd", "A.M.", "P.M.", "a.m.", "p.m.", "AM", "PM", "am", "pm",
}

// nodeLocation is where an argument starts in the statement, for errors
// about it (-1 when unknown).
func nodeLocation(n *pg.Node) int32 {
	switch x := n.Node.(type) {
	case *pg.Node_AConst:
		return x.AConst.Location
	case *pg.Node_ColumnRef:
		return x.ColumnRef.Location
	case *pg.Node_FuncCall:
		return x.FuncCall.Location
	case *pg.Node_TypeCast:
		if l := nodeLocation(x.TypeCast.Arg); l >= 0 {
			return l
		}
		return x.TypeCast.Location
	case *pg.Node_AExpr:
		return x.AExpr.Location
	case *pg.Node_ParamRef:
		return x.ParamRef.Location
	case *pg.Node_NamedArgExpr:
		return x.NamedArgExpr.Location
	}
	return -1
}

// namedArgs splits a call's arguments into expressions and names ("" for
// a positional one), with PostgreSQL's checks: no positional argument
// after a named one, no name twice.
func (c *compiler) namedArgs(nodes []*pg.Node, sc *scope) ([]*Expr, []string, error) {
	var args []*Expr
	var names []string
	seen := map[string]bool{}
	named := false
	for _, n := range nodes {
		name := ""
		arg := n
		if na := n.GetNamedArgExpr(); na != nil {
			name, arg = na.Name, na.Arg
			if seen[name] {
				return nil, nil, errAt(na.Location, codeSyntaxError, "argument name \"%s\" used more than once", name)
			}
			seen[name] = true
			named = true
		} else if named {
			return nil, nil, errAt(nodeLocation(n), codeSyntaxError, "positional argument cannot follow named argument")
		}
		e, err := c.expr(arg, sc)
		if err != nil {
			return nil, nil, err
		}
		args = append(args, e)
		names = append(names, name)
	}
	return args, names, nil
}

// placeNamed puts a call's arguments in b's parameter order, filling the
// parameters a named call leaves out with their defaults; ok is false
// when the names do not fit b.
func placeNamed(b *builtin, args []*Expr, names []string) ([]*Expr, bool) {
	if b.names == nil || b.variadic {
		return nil, false
	}
	var out []*Expr
	put := func(i int, e *Expr) bool {
		for len(out) <= i {
			out = append(out, nil)
		}
		if out[i] != nil {
			return false
		}
		out[i] = e
		return true
	}
	for i, e := range args {
		idx := i
		if names[i] != "" {
			idx = -1
			for j, n := range b.names {
				if n == names[i] {
					idx = j
				}
			}
			if idx < 0 {
				return nil, false
			}
		}
		if idx >= len(b.args) || !put(idx, e) {
			return nil, false
		}
	}
	for i, e := range out {
		if e != nil {
			continue
		}
		d := i - b.minArgs()
		if d < 0 || b.defaults == nil {
			return nil, false
		}
		out[i] = constExpr(b.args[i], b.names[i], b.defaults[i])
	}
	return out, true
}
