package pgeval

import (
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// Cast converts v from type from to type to, as an explicit or
// assignment cast does, with PostgreSQL's errors. Casts to the reg*
// types from names need a catalog, so they fail here; the engine uses
// the catalog of the statement's Env.
func Cast(v any, from, to uint32) (any, error) {
	return castValue(v, from, to, nil)
}

// canCast reports whether a cast from → to exists (explicitly).
func canCast(from, to uint32) bool {
	if from == to || from == pgtypes.OIDUnknown || isText(from) || isText(to) || to == pgtypes.OIDText {
		return true
	}
	switch {
	case isNumber(from) && isNumber(to):
		return true
	case (isInt(from) || isOIDLike(from)) && (isInt(to) || isOIDLike(to)):
		return true
	case from == pgtypes.OIDBool && to == pgtypes.OIDInt4, from == pgtypes.OIDInt4 && to == pgtypes.OIDBool:
		return true
	case isTime(from) && isTime(to):
		return true
	case from == OIDTime && to == OIDInterval, from == OIDInterval && to == OIDTime:
		return true
	case (from == pgtypes.OIDJSON || from == pgtypes.OIDJSONB) && (to == pgtypes.OIDJSON || to == pgtypes.OIDJSONB):
		return true
	case isArray(from) && isArray(to):
		return canCast(elemOf[from], elemOf[to])
	case from == OIDRecord && to == OIDRecord:
		return true
	}
	return false
}

// implicitCast reports whether PostgreSQL would convert from → to
// without being asked (function arguments, operators, UNION columns).
func implicitCast(from, to uint32) bool {
	if from == to || from == pgtypes.OIDUnknown {
		return true
	}
	switch {
	case isInt(from) && isNumber(to):
		return numRank(to) >= numRank(from)
	case from == pgtypes.OIDNumeric && isFloat(to), from == pgtypes.OIDFloat4 && to == pgtypes.OIDFloat8:
		return true
	case isText(from) && isText(to):
		return true
	case isInt(from) && isOIDLike(to), isOIDLike(from) && isOIDLike(to):
		return true
	case from == pgtypes.OIDDate && (to == pgtypes.OIDTimestamp || to == pgtypes.OIDTimestamptz),
		from == pgtypes.OIDTimestamp && to == pgtypes.OIDTimestamptz, from == OIDTime && to == OIDInterval:
		return true
	case isArray(from) && isArray(to):
		return implicitCast(elemOf[from], elemOf[to])
	case to == OIDAny:
		return true
	}
	return false
}

func numRank(oid uint32) int {
	switch oid {
	case pgtypes.OIDInt2:
		return 1
	case pgtypes.OIDInt4:
		return 2
	case pgtypes.OIDInt8:
		return 3
	case pgtypes.OIDNumeric:
		return 4
	case pgtypes.OIDFloat4:
		return 5
	case pgtypes.OIDFloat8:
		return 6
	}
	return 0
}

func cannotCast(from, to uint32) error {
	return sqlstate.Errorf(sqlstate.CodeCannotCoerce, "cannot cast type %s to %s", typeName(from), typeName(to))
}

func castValue(v any, from, to uint32, ec *evalCtx) (any, error) {
	if v == nil || from == to {
		return v, nil
	}
	if from == pgtypes.OIDUnknown || isText(from) || from == pgtypes.OIDJSON || from == pgtypes.OIDJSONB {
		if s, ok := v.(string); ok {
			switch {
			case to == pgtypes.OIDJSONB && from != pgtypes.OIDJSONB:
				return pgtypes.NormalizeJSONB(s)
			case to == pgtypes.OIDJSON && from != pgtypes.OIDJSON && from != pgtypes.OIDJSONB:
				if err := pgtypes.ValidateJSON(s); err != nil {
					return nil, err
				}
				return s, nil
			case to == pgtypes.OIDJSON || to == pgtypes.OIDJSONB || isText(to):
				return textTo(s, to), nil
			}
			return castText(s, to, ec)
		}
	}
	if isText(to) {
		switch x := v.(type) {
		case bool:
			if x {
				return textTo("true", to), nil
			}
			return textTo("false", to), nil
		}
		return textTo(FormatTextStyle(from, v, styleOf(ec)), to), nil
	}
	switch {
	case isFloat(from) && to == pgtypes.OIDNumeric:
		// float8_numeric and float4_numeric keep DBL_DIG and FLT_DIG
		// significant digits.
		digits := 15
		if from == pgtypes.OIDFloat4 {
			digits = 6
		}
		if f, ok := v.(float64); ok && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return pgtypes.ParseNumeric(strconv.FormatFloat(f, 'g', digits, 64))
		}
		return numCast(v, to)
	case isNumber(from) && isNumber(to):
		return numCast(v, to)
	case (isInt(from) || isOIDLike(from)) && (isInt(to) || isOIDLike(to)):
		n := toInt(v)
		if isOIDLike(to) {
			if n < 0 || n > math.MaxUint32 {
				return nil, sqlstate.Errorf(sqlstate.CodeNumericOutOfRange, "OID out of range")
			}
			return regFromOID(uint32(n), to, ec)
		}
		lo, hi := intRange(to)
		if n < lo || n > hi {
			return nil, rangeError(to)
		}
		return n, nil
	case from == pgtypes.OIDBool && to == pgtypes.OIDInt4:
		if v.(bool) {
			return int64(1), nil
		}
		return int64(0), nil
	case from == pgtypes.OIDInt4 && to == pgtypes.OIDBool:
		return v.(int64) != 0, nil
	case isTime(from) && isTime(to):
		return castTime(v.(time.Time), from, to, styleOf(ec).Location()), nil
	case from == OIDTime && to == OIDInterval:
		return pgtypes.Interval{Micros: pgtypes.TimeOfDayMicros(v.(time.Time))}, nil
	case from == OIDInterval && to == OIDTime:
		return intervalToTime(v.(pgtypes.Interval)), nil
	case (from == pgtypes.OIDJSON || from == pgtypes.OIDJSONB) && (to == pgtypes.OIDJSON || to == pgtypes.OIDJSONB):
		return v, nil
	case isArray(from) && isArray(to):
		a, ok := v.(Array)
		if !ok {
			return nil, cannotCast(from, to)
		}
		out := Array{Elem: elemOf[to], Vals: make([]any, len(a.Vals)), ZeroBased: to == OIDInt2Vector || to == OIDOidVector}
		for i, e := range a.Vals {
			c, err := castValue(e, a.Elem, out.Elem, ec)
			if err != nil {
				return nil, err
			}
			out.Vals[i] = c
		}
		return out, nil
	case to == OIDRecord:
		return v, nil
	}
	return nil, cannotCast(from, to)
}

// textTo applies a text type's own rule: "char" keeps one byte.
func textTo(s string, to uint32) string {
	if to == OIDChar && len(s) > 1 {
		return s[:1]
	}
	return s
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case Reg:
		return int64(x.OID)
	case float64:
		return int64(x)
	}
	return 0
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	case pgtypes.Numeric:
		switch x {
		case pgtypes.NumericNaN:
			return math.NaN()
		case pgtypes.NumericPosInf:
			return math.Inf(1)
		case pgtypes.NumericNegInf:
			return math.Inf(-1)
		}
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	}
	return 0
}

func toRat(v any) *big.Rat {
	switch x := v.(type) {
	case int64:
		return new(big.Rat).SetInt64(x)
	case float64:
		r := new(big.Rat)
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return r
		}
		r.SetFloat64(x)
		return r
	case pgtypes.Numeric:
		r, ok := new(big.Rat).SetString(string(x))
		if !ok {
			return new(big.Rat)
		}
		return r
	}
	return new(big.Rat)
}

func numScale(v any) int {
	if n, ok := v.(pgtypes.Numeric); ok {
		if i := strings.IndexByte(string(n), '.'); i >= 0 {
			return len(n) - i - 1
		}
	}
	return 0
}

// roundRat rounds half away from zero to scale digits, as numeric does.
func roundRat(r *big.Rat, scale int) pgtypes.Numeric {
	return roundHalfAway(r, scale)
}

func numCast(v any, to uint32) (any, error) {
	switch {
	case isInt(to):
		var n int64
		switch x := v.(type) {
		case int64:
			n = x
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) || x >= 9.3e18 || x <= -9.3e18 {
				return nil, rangeError(to)
			}
			n = int64(math.RoundToEven(x))
		case pgtypes.Numeric:
			switch x {
			case pgtypes.NumericNaN:
				return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "cannot convert NaN to %s", typeName(to))
			case pgtypes.NumericPosInf, pgtypes.NumericNegInf:
				return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "cannot convert infinity to %s", typeName(to))
			}
			s := roundRat(toRat(x), 0)
			i, err := strconv.ParseInt(string(s), 10, 64)
			if err != nil {
				return nil, rangeError(to)
			}
			n = i
		}
		lo, hi := intRange(to)
		if n < lo || n > hi {
			return nil, rangeError(to)
		}
		return n, nil
	case isFloat(to):
		f := toFloat(v)
		if to == pgtypes.OIDFloat4 {
			if !math.IsInf(f, 0) && math.Abs(f) > math.MaxFloat32 {
				return nil, sqlstate.Errorf(sqlstate.CodeNumericOutOfRange, "value out of range: overflow")
			}
			f = float64(float32(f))
		}
		return f, nil
	}
	switch x := v.(type) {
	case int64:
		return pgtypes.Numeric(strconv.FormatInt(x, 10)), nil
	case float64:
		switch {
		case math.IsNaN(x):
			return pgtypes.NumericNaN, nil
		case math.IsInf(x, 1):
			return pgtypes.NumericPosInf, nil
		case math.IsInf(x, -1):
			return pgtypes.NumericNegInf, nil
		}
		n, err := pgtypes.ParseNumeric(strconv.FormatFloat(x, 'f', -1, 64))
		if err != nil {
			return nil, err
		}
		return n, nil
	}
	return v, nil
}

// castText converts a string to type to (input functions).
func castText(s string, to uint32, ec *evalCtx) (any, error) {
	switch to {
	case OIDOid, OIDXid:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || n < 0 || n > math.MaxUint32 {
			return nil, sqlstate.Errorf(sqlstate.CodeInvalidTextRepresent, "invalid input syntax for type %s: %q", typeName(to), s)
		}
		return n, nil
	case OIDRegclass, OIDRegtype, OIDRegproc, OIDRegnamespace, OIDRegrole:
		return regFromName(s, to, ec)
	case OIDChar, OIDBpchar, pgtypes.OIDVarchar, pgtypes.OIDText, pgtypes.OIDName:
		return textTo(s, to), nil
	case pgtypes.OIDJSON:
		if err := pgtypes.ValidateJSON(s); err != nil {
			return nil, err
		}
		return s, nil
	case pgtypes.OIDJSONB:
		return pgtypes.NormalizeJSONB(s)
	case OIDInt2Vector, OIDOidVector:
		a := Array{Elem: elemOf[to], Vals: []any{}, ZeroBased: true}
		for _, f := range strings.Fields(s) {
			v, err := castText(f, a.Elem, ec)
			if err != nil {
				return nil, err
			}
			a.Vals = append(a.Vals, v)
		}
		return a, nil
	case OIDInterval:
		return pgtypes.ParseInterval(s, styleOf(ec), -1)
	case pgtypes.OIDBytea:
		if strings.HasPrefix(s, `\x`) {
			break
		}
		// The escape format: \\ is a backslash, \nnn an octal byte.
		var out []byte
		for i := 0; i < len(s); i++ {
			switch {
			case s[i] != '\\':
				out = append(out, s[i])
			case i+1 < len(s) && s[i+1] == '\\':
				out = append(out, '\\')
				i++
			case i+3 < len(s):
				n, err := strconv.ParseUint(s[i+1:i+4], 8, 8)
				if err != nil {
					return nil, sqlstate.Errorf(sqlstate.CodeInvalidTextRepresent, "invalid input syntax for type bytea")
				}
				out = append(out, byte(n))
				i += 3
			default:
				return nil, sqlstate.Errorf(sqlstate.CodeInvalidTextRepresent, "invalid input syntax for type bytea")
			}
		}
		return out, nil
	case pgtypes.OIDInt2, pgtypes.OIDInt4, pgtypes.OIDInt8:
		v, err := pgtypes.ParseText(to, s)
		if err != nil {
			if e, ok := err.(*sqlstate.Error); ok && e.Code == sqlstate.CodeNumericOutOfRange {
				return nil, sqlstate.Errorf(e.Code, "value \"%s\" is out of range for type %s", s, typeName(to))
			}
			return nil, sqlstate.Errorf(sqlstate.CodeInvalidTextRepresent, "invalid input syntax for type %s: \"%s\"", typeName(to), s)
		}
		return v, nil
	case pgtypes.OIDDate, pgtypes.OIDTimestamp, pgtypes.OIDTimestamptz:
		var now time.Time
		if ec != nil && ec.env != nil {
			now = ec.env.Now
		}
		return pgtypes.ParseDateTime(to, s, styleOf(ec), now)
	case OIDTime:
		return parseTimeOfDay(s)
	}
	if e := elemOf[to]; e != 0 {
		return parseArray(e, s, ec)
	}
	if !pgtypes.Supported(to) {
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "type %s is not supported", typeName(to))
	}
	v, err := pgtypes.ParseText(to, s)
	if err != nil {
		if e, ok := err.(*sqlstate.Error); ok && e.Code == sqlstate.CodeInvalidTextRepresent {
			return nil, sqlstate.Errorf(e.Code, "invalid input syntax for type %s: \"%s\"", typeName(to), s)
		}
		return nil, err
	}
	return v, nil
}

// styleOf is the statement's DateStyle, TimeZone and IntervalStyle.
func styleOf(ec *evalCtx) pgtypes.Style {
	if ec == nil || ec.env == nil || ec.env.Setting == nil {
		return pgtypes.DefaultStyle
	}
	return pgtypes.StyleFrom(ec.env.Setting)
}

// castTime converts between date, timestamp and timestamptz: a
// timestamp is a local time in the session's zone where it meets a
// timestamptz, as in PostgreSQL.
func castTime(t time.Time, from, to uint32, loc *time.Location) time.Time {
	if pgtypes.IsInfinite(t) != 0 {
		return t
	}
	local := func(t time.Time) time.Time { // timestamptz → its wall clock
		l := t.In(loc)
		return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
	}
	switch {
	case from == pgtypes.OIDTimestamptz && to != pgtypes.OIDTimestamptz:
		t = local(t)
	case from != pgtypes.OIDTimestamptz && to == pgtypes.OIDTimestamptz:
		u := t.UTC()
		if to == pgtypes.OIDTimestamptz && from == pgtypes.OIDDate {
			u = time.Date(u.Year(), u.Month(), u.Day(), 0, 0, 0, 0, time.UTC)
		}
		return pgtypes.LocalTime(u.Year(), u.Month(), u.Day(), u.Hour(), u.Minute(), u.Second(), u.Nanosecond(), loc).UTC()
	}
	if to == pgtypes.OIDDate {
		t = t.UTC()
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	}
	return t
}

// numericDate: s is a date in digits and separators (2000-01-01,
// 1/2/2000, 2000.01.01).
func numericDate(s string) bool {
	return strings.Trim(s, "0123456789") != s && strings.Trim(s, "0123456789-/.") == "" && strings.ContainsAny(s, "-/.")
}

// parseTimeOfDay reads time without time zone: HH:MM[:SS[.frac]] with
// an optional AM/PM, a numeric date before it, or allballs.
func parseTimeOfDay(s string) (any, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "allballs" {
		return time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), nil
	}
	// Reuse the timestamp reader on a fixed date.
	v, err := pgtypes.ParseDateTime(pgtypes.OIDTimestamp, "2000-01-01 "+t, pgtypes.DefaultStyle, time.Time{})
	if date, _, ok := strings.Cut(t, " "); err != nil && ok && numericDate(date) {
		// A numeric date before the time is read and ignored, as by
		// time_in ('2000-01-01 12:00', not '2000-01-01T12:00').
		ts, err2 := pgtypes.ParseDateTime(pgtypes.OIDTimestamp, t, pgtypes.DefaultStyle, time.Time{})
		if err2 == nil {
			u := ts.UTC()
			v, err = time.Date(2000, 1, 1, u.Hour(), u.Minute(), u.Second(), u.Nanosecond(), time.UTC), nil
		} else {
			err = err2
		}
	}
	if err != nil || !strings.Contains(t, ":") {
		if se, ok := err.(*sqlstate.Error); ok && se.Code == "22008" {
			return nil, sqlstate.Errorf("22008", "date/time field value out of range: \"%s\"", s)
		}
		return nil, sqlstate.Errorf(codeInvalidDatetimeFormat, "invalid input syntax for type time: \"%s\"", s)
	}
	return v, nil
}
