package pgeval

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// Interval arithmetic as PostgreSQL 15 does it (timestamp.c): months
// move along the calendar, days along local days, microseconds along
// the time line. Timestamps work as PostgreSQL's microsecond counts
// (pgtypes.TimestampMicros), so that overflow happens where it does
// there.

// addInterval is timestamp_pl_interval (loc nil) and
// timestamptz_pl_interval (loc the session's zone, in which months and
// days are counted).
func addInterval(t time.Time, iv pgtypes.Interval, loc *time.Location) (time.Time, error) {
	if pgtypes.IsInfinite(t) != 0 {
		return t, nil
	}
	us := pgtypes.TimestampMicros(t)
	if iv.Months != 0 {
		tm, ok := pgtypes.BreakTimestamp(us, loc)
		if !ok {
			return time.Time{}, pgtypes.ErrTimestampRange()
		}
		mon := int64(tm.Mon) + int64(iv.Months)
		year := int64(tm.Year)
		if mon > pgtypes.MonthsPerYear {
			year += (mon - 1) / pgtypes.MonthsPerYear
			mon = (mon-1)%pgtypes.MonthsPerYear + 1
		} else if mon < 1 {
			year += mon/pgtypes.MonthsPerYear - 1
			mon = mon%pgtypes.MonthsPerYear + pgtypes.MonthsPerYear
		}
		if year != int64(int32(year)) {
			return time.Time{}, pgtypes.ErrTimestampRange()
		}
		tm.Year, tm.Mon = int(year), int(mon)
		if d := pgtypes.DaysInMonth(tm.Year, tm.Mon); tm.Mday > d {
			tm.Mday = d
		}
		if us, ok = pgtypes.MakeTimestamp(tm, loc); !ok {
			return time.Time{}, pgtypes.ErrTimestampRange()
		}
	}
	if iv.Days != 0 {
		tm, ok := pgtypes.BreakTimestamp(us, loc)
		if !ok {
			return time.Time{}, pgtypes.ErrTimestampRange()
		}
		tm.Year, tm.Mon, tm.Mday = pgtypes.J2Date(pgtypes.Date2J(tm.Year, tm.Mon, tm.Mday) + int(iv.Days))
		if us, ok = pgtypes.MakeTimestamp(tm, loc); !ok {
			return time.Time{}, pgtypes.ErrTimestampRange()
		}
	}
	sum := us + iv.Micros
	if (sum > us) != (iv.Micros > 0) || !pgtypes.ValidTimestamp(sum) {
		return time.Time{}, pgtypes.ErrTimestampRange()
	}
	return pgtypes.TimeFromMicros(sum), nil
}

// subTimestamps is timestamp_mi (also timestamptz's): the difference as
// microseconds, with whole days moved to days (justify_hours).
func subTimestamps(a, b time.Time) (pgtypes.Interval, error) {
	if pgtypes.IsInfinite(a) != 0 || pgtypes.IsInfinite(b) != 0 {
		return pgtypes.Interval{}, sqlstate.Errorf(codeDatetimeOverflow, "cannot subtract infinite timestamps")
	}
	// Wrapping, as PostgreSQL 15's subtraction does.
	return pgtypes.Interval{Micros: pgtypes.TimestampMicros(a) - pgtypes.TimestampMicros(b)}.JustifyHours()
}

// age is timestamp_age and timestamptz_age (loc the session's zone): the
// fields' symbolic difference, borrowing from the next field up, a
// month being as long as the month of the earlier time.
func age(a, b time.Time, loc *time.Location) (pgtypes.Interval, error) {
	dt1, dt2 := pgtypes.TimestampMicros(a), pgtypes.TimestampMicros(b)
	tm1, ok1 := pgtypes.BreakTimestamp(dt1, loc)
	tm2, ok2 := pgtypes.BreakTimestamp(dt2, loc)
	if !ok1 || !ok2 {
		return pgtypes.Interval{}, pgtypes.ErrTimestampRange()
	}
	fsec := tm1.Fsec - tm2.Fsec
	sec, min, hour := tm1.Sec-tm2.Sec, tm1.Min-tm2.Min, tm1.Hour-tm2.Hour
	mday, mon, year := tm1.Mday-tm2.Mday, tm1.Mon-tm2.Mon, tm1.Year-tm2.Year
	flip := func() {
		fsec, sec, min, hour, mday, mon, year = -fsec, -sec, -min, -hour, -mday, -mon, -year
	}
	if dt1 < dt2 {
		flip()
	}
	for fsec < 0 {
		fsec += pgtypes.USecsPerSec
		sec--
	}
	for sec < 0 {
		sec += 60
		min--
	}
	for min < 0 {
		min += 60
		hour--
	}
	for hour < 0 {
		hour += 24
		mday--
	}
	for mday < 0 {
		if dt1 < dt2 {
			mday += pgtypes.DaysInMonth(tm1.Year, tm1.Mon)
		} else {
			mday += pgtypes.DaysInMonth(tm2.Year, tm2.Mon)
		}
		mon--
	}
	for mon < 0 {
		mon += 12
		year--
	}
	if dt1 < dt2 {
		flip()
	}
	months := float64(year)*12 + float64(mon)
	if months > math.MaxInt32 || months < math.MinInt32 {
		return pgtypes.Interval{}, pgtypes.ErrIntervalOutOfRange()
	}
	return pgtypes.Interval{
		Months: int32(months),
		Days:   int32(mday),
		Micros: ((int64(hour)*60+int64(min))*60+int64(sec))*pgtypes.USecsPerSec + fsec,
	}, nil
}

// fitsInt32 and fitsInt64 are FLOAT8_FITS_IN_INT32/64.
func fitsInt32(f float64) bool { return f >= math.MinInt32 && f < -float64(math.MinInt32) }
func fitsInt64(f float64) bool { return f >= math.MinInt64 && f < -float64(math.MinInt64) }

// tsround is TSROUND: rounding to microsecond precision.
func tsround(f float64) float64 { return math.RoundToEven(float64(f*1e6)) / 1e6 }

// scaleInterval is interval_mul (div false) and interval_div: months
// and days scale by the factor; the fractions of a month cascade into
// days (of 30) and of a day into time (of 24 hours), never upward.
func scaleInterval(iv pgtypes.Interval, factor float64, div bool) (pgtypes.Interval, error) {
	if div && factor == 0 {
		return pgtypes.Interval{}, sqlstate.Errorf(sqlstate.CodeDivisionByZero, "division by zero")
	}
	op := func(x float64) float64 {
		if div {
			return float64(x / factor)
		}
		return float64(x * factor)
	}
	var out pgtypes.Interval
	m := op(float64(iv.Months))
	if math.IsNaN(m) || !fitsInt32(m) {
		return out, pgtypes.ErrIntervalOutOfRange()
	}
	out.Months = int32(m)
	d := op(float64(iv.Days))
	if math.IsNaN(d) || !fitsInt32(d) {
		return out, pgtypes.ErrIntervalOutOfRange()
	}
	out.Days = int32(d)
	monthDays := tsround(float64(float64(m-float64(out.Months)) * pgtypes.DaysPerMonth))
	secs := tsround(float64((d - float64(out.Days) + monthDays - float64(int32(monthDays))) * 86400))
	var ok bool
	if math.Abs(secs) >= 86400 {
		whole := int32(secs / 86400)
		if out.Days, ok = addInt32(out.Days, whole); !ok {
			return out, pgtypes.ErrIntervalOutOfRange()
		}
		secs -= float64(whole) * 86400
	}
	if out.Days, ok = addInt32(out.Days, int32(monthDays)); !ok {
		return out, pgtypes.ErrIntervalOutOfRange()
	}
	t := math.RoundToEven(op(float64(iv.Micros)) + float64(secs*1e6))
	if math.IsNaN(t) || !fitsInt64(t) {
		return out, pgtypes.ErrIntervalOutOfRange()
	}
	out.Micros = int64(t)
	return out, nil
}

func addInt32(a, b int32) (int32, bool) {
	s := int64(a) + int64(b)
	return int32(s), s == int64(int32(s))
}

// julianDay is a date's Julian day number.
func julianDay(t time.Time) int {
	y, m, d := t.Date()
	return pgtypes.Date2J(y, int(m), d)
}

// addTimeInterval is time_pl_interval: only the time part counts, and
// the result wraps around midnight.
func addTimeInterval(t time.Time, iv pgtypes.Interval, sub bool) time.Time {
	d := iv.Micros
	if sub {
		d = -d
	}
	r := pgtypes.TimeOfDayMicros(t) + d
	r -= r / pgtypes.USecsPerDay * pgtypes.USecsPerDay
	if r < 0 {
		r += pgtypes.USecsPerDay
	}
	return pgtypes.TimeFromMicros(r)
}

// intervalToTime is the interval → time cast: the time part modulo a
// day.
func intervalToTime(iv pgtypes.Interval) time.Time {
	r := iv.Micros
	if r >= pgtypes.USecsPerDay || r < 0 {
		r -= r / pgtypes.USecsPerDay * pgtypes.USecsPerDay
		if r < 0 {
			r += pgtypes.USecsPerDay
		}
	}
	return pgtypes.TimeFromMicros(r)
}

// lowUnits is a unit argument as PostgreSQL reports it: lower case, at
// most 63 bytes.
func lowUnits(s string) string {
	s = strings.ToLower(s)
	if len(s) > 63 {
		s = s[:63]
	}
	return s
}

// intervalUnitOf reads extract's and date_part's unit: the delta units,
// then the date keywords (mm is minutes, epoch), as DecodeUnits and
// DecodeSpecial do.
func intervalUnitOf(word string) (unit string, known bool) {
	if u, ok := pgtypes.IntervalUnit(word); ok {
		return u, true
	}
	switch word {
	case "mm":
		return "minute", true
	case "h":
		return "hour", true
	case "epoch":
		return "epoch", true
	case "dow", "doy", "isodow", "isoyear", "j", "jd", "julian":
		return "", true
	}
	return "", false
}

// intervalPart is extract (numeric) and date_part (float8) of an
// interval.
func intervalPart(field string, iv pgtypes.Interval, numeric bool) (any, error) {
	low := lowUnits(field)
	unit, known := intervalUnitOf(low)
	if !known {
		return nil, sqlstate.Errorf(sqlstate.CodeInvalidParameterValue, "unit \"%s\" not recognized for type interval", low)
	}
	f := iv.Fields()
	var n int64
	switch unit {
	case "microseconds":
		n = int64(f.Sec)*pgtypes.USecsPerSec + int64(f.USec)
	case "milliseconds":
		us := int64(f.Sec)*pgtypes.USecsPerSec + int64(f.USec)
		if numeric {
			return scaledNumeric(us, 3), nil
		}
		return float64(f.Sec)*1000 + float64(f.USec)/1000, nil
	case "second":
		us := int64(f.Sec)*pgtypes.USecsPerSec + int64(f.USec)
		if numeric {
			return scaledNumeric(us, 6), nil
		}
		return float64(f.Sec) + float64(f.USec)/1e6, nil
	case "minute":
		n = int64(f.Min)
	case "hour":
		n = f.Hour
	case "day":
		n = int64(f.Day)
	case "month":
		n = int64(f.Mon)
	case "quarter":
		n = int64(f.Mon/3 + 1)
	case "year":
		n = int64(f.Year)
	case "decade":
		n = int64(f.Year / 10)
	case "century":
		n = int64(f.Year / 100)
	case "millennium":
		n = int64(f.Year / 1000)
	case "epoch":
		if numeric {
			secs := (int64(4*365.25)*int64(iv.Months/12) + 4*30*int64(iv.Months%12) + 4*int64(iv.Days)) * (86400 / 4)
			if us, ok := mulAdd(secs, pgtypes.USecsPerSec, iv.Micros); ok {
				return scaledNumeric(us, 6), nil
			}
			return arithValues("+", pgtypes.OIDNumeric, scaledNumeric(iv.Micros, 6), pgtypes.Numeric(strconv.FormatInt(secs, 10)))
		}
		r := float64(iv.Micros) / 1e6
		r += float64(365.25*86400) * float64(iv.Months/12)
		r += float64(30*86400) * float64(iv.Months%12)
		r += float64(86400) * float64(iv.Days)
		return r, nil
	default:
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "unit \"%s\" not supported for type interval", low)
	}
	if numeric {
		return pgtypes.Numeric(strconv.FormatInt(n, 10)), nil
	}
	return float64(n), nil
}

func mulAdd(a, b, c int64) (int64, bool) {
	p := a * b
	if a != 0 && (p/a != b || a == -1 && b == math.MinInt64) {
		return 0, false
	}
	s := p + c
	if (s > p) != (c > 0) {
		return 0, false
	}
	return s, true
}

// scaledNumeric is v / 10^scale as a numeric of that scale
// (int64_div_fast_to_numeric).
func scaledNumeric(v int64, scale int) pgtypes.Numeric {
	neg := v < 0
	u := uint64(v)
	if neg {
		u = -u
	}
	s := strconv.FormatUint(u, 10)
	if len(s) <= scale {
		s = strings.Repeat("0", scale-len(s)+1) + s
	}
	out := s[:len(s)-scale] + "." + s[len(s)-scale:]
	if neg {
		out = "-" + out
	}
	return pgtypes.Numeric(out)
}

// truncInterval is date_trunc(text, interval): the fields below the unit
// zeroed.
func truncInterval(unit string, iv pgtypes.Interval) (pgtypes.Interval, error) {
	low := lowUnits(unit)
	u, ok := pgtypes.IntervalUnit(low)
	if !ok {
		return iv, sqlstate.Errorf(sqlstate.CodeInvalidParameterValue, "unit \"%s\" not recognized for type interval", low)
	}
	f := iv.Fields()
	year, mon, day := int64(f.Year), int64(f.Mon), int64(f.Day)
	hour, min, sec, usec := f.Hour, int64(f.Min), int64(f.Sec), int64(f.USec)
	level := map[string]int{"millennium": 1, "century": 2, "decade": 3, "year": 4, "quarter": 5, "month": 6, "day": 7,
		"hour": 8, "minute": 9, "second": 10, "milliseconds": 11, "microseconds": 12}[u]
	switch {
	case u == "week":
		e := sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "unit \"%s\" not supported for type interval", low)
		e.Detail = "Months usually have fractional weeks."
		return iv, e
	case level == 0:
		return iv, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "unit \"%s\" not supported for type interval", low)
	}
	if level <= 1 {
		year = year / 1000 * 1000
	}
	if level <= 2 {
		year = year / 100 * 100
	}
	if level <= 3 {
		year = year / 10 * 10
	}
	if level <= 4 {
		mon = 0
	}
	if level <= 5 {
		mon = 3 * (mon / 3)
	}
	if level <= 6 {
		day = 0
	}
	if level <= 7 {
		hour = 0
	}
	if level <= 8 {
		min = 0
	}
	if level <= 9 {
		sec = 0
	}
	if level <= 10 {
		usec = 0
	}
	if level == 11 {
		usec = usec / 1000 * 1000
	}
	months := float64(year)*12 + float64(mon)
	if months > math.MaxInt32 || months < math.MinInt32 {
		return iv, pgtypes.ErrIntervalOutOfRange()
	}
	return pgtypes.Interval{Months: int32(months), Days: int32(day), Micros: ((hour*60+min)*60+sec)*pgtypes.USecsPerSec + usec}, nil
}

// makeInterval is make_interval(years, months, weeks, days, hours, mins,
// secs). PostgreSQL 15 does not check the integer fields for overflow:
// they wrap, as here.
func makeInterval(a []any) (any, error) {
	arg := func(i int) int64 {
		if i < len(a) && a[i] != nil {
			return a[i].(int64)
		}
		return 0
	}
	secs := 0.0
	if len(a) > 6 && a[6] != nil {
		secs = a[6].(float64)
	}
	if math.IsInf(secs, 0) || math.IsNaN(secs) {
		return nil, pgtypes.ErrIntervalOutOfRange()
	}
	us := math.RoundToEven(float64(secs * 1e6))
	usInt := int64(math.MinInt64) // what x86 gives for a double out of int64's range
	if fitsInt64(us) {
		usInt = int64(us)
	}
	return pgtypes.Interval{
		Months: int32(arg(0))*12 + int32(arg(1)),
		Days:   int32(arg(2))*7 + int32(arg(3)),
		Micros: arg(4)*pgtypes.USecsPerHour + arg(5)*pgtypes.USecsPerMinute + usInt,
	}, nil
}

// timestampSeries is generate_series over timestamps (loc nil) or
// timestamptz (loc the session's zone) with an interval step.
func timestampSeries(ec *evalCtx, start, stop time.Time, step pgtypes.Interval, loc *time.Location) ([][]any, error) {
	sign := step.Cmp(pgtypes.Interval{})
	if sign == 0 {
		return nil, sqlstate.Errorf(codeInvalidParameterValue, "step size cannot equal zero")
	}
	var out [][]any
	var held int64
	defer func() { ec.release(held) }()
	for cur := start; ; {
		if c := cur.Compare(stop); sign > 0 && c > 0 || sign < 0 && c < 0 {
			break
		}
		if err := ec.chargeN(64); err != nil {
			return nil, err
		}
		held += 64
		out = append(out, []any{cur})
		next, err := addInterval(cur, step, loc)
		if err != nil {
			return nil, err
		}
		cur = next
	}
	return out, nil
}
