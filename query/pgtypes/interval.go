package pgtypes

import (
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/cellardb/cellar/query/sqlstate"
)

// Interval is PostgreSQL's interval: months, days and microseconds kept
// apart, because how long a month or a day lasts depends on the calendar
// and the time zone it is added in.
type Interval struct {
	Months int32
	Days   int32
	Micros int64
}

// Microseconds per unit, and the month and year lengths PostgreSQL
// assumes where a span needs one length (comparison, epoch, justify).
const (
	USecsPerSec    = int64(1000000)
	USecsPerMinute = 60 * USecsPerSec
	USecsPerHour   = 60 * USecsPerMinute
	USecsPerDay    = 24 * USecsPerHour
	DaysPerMonth   = 30
	MonthsPerYear  = 12
)

// Interval type modifiers: the range of fields in the high 16 bits (a
// mask of these), the fractional-second precision in the low 16.
const (
	IntervalMonth         = 1 << 1
	IntervalYear          = 1 << 2
	IntervalDay           = 1 << 3
	IntervalHour          = 1 << 10
	IntervalMinute        = 1 << 11
	IntervalSecond        = 1 << 12
	IntervalFullRange     = 0x7FFF
	IntervalFullPrecision = 0xFFFF
	maxIntervalPrecision  = 6
)

// IntervalTypmod is the typmod of interval with a field range and a
// precision (IntervalFullPrecision for none), as intervaltypmodin makes
// it: -1 when neither restricts anything.
func IntervalTypmod(rng, precision int) (int32, error) {
	if !validIntervalRange(rng) {
		return -1, sqlstate.Errorf(sqlstate.CodeInvalidParameterValue, "invalid INTERVAL type modifier")
	}
	if precision == IntervalFullPrecision {
		if rng == IntervalFullRange {
			return -1, nil
		}
		return int32(rng<<16 | IntervalFullPrecision), nil
	}
	if precision < 0 {
		return -1, sqlstate.Errorf(sqlstate.CodeInvalidParameterValue, "INTERVAL(%d) precision must not be negative", precision)
	}
	precision = min(precision, maxIntervalPrecision)
	return int32(rng<<16 | precision), nil
}

func validIntervalRange(rng int) bool {
	switch rng {
	case IntervalYear, IntervalMonth, IntervalDay, IntervalHour, IntervalMinute, IntervalSecond,
		IntervalYear | IntervalMonth, IntervalDay | IntervalHour, IntervalDay | IntervalHour | IntervalMinute,
		IntervalDay | IntervalHour | IntervalMinute | IntervalSecond, IntervalHour | IntervalMinute,
		IntervalHour | IntervalMinute | IntervalSecond, IntervalMinute | IntervalSecond, IntervalFullRange:
		return true
	}
	return false
}

// ValidIntervalTypmod reports whether typmod's field range is one an
// interval qualifier can make.
func ValidIntervalTypmod(typmod int32) bool {
	return typmod < 0 || validIntervalRange(typmodRange(typmod))
}

func typmodRange(typmod int32) int {
	if typmod < 0 {
		return IntervalFullRange
	}
	return int(typmod>>16) & 0x7FFF
}

// FormatIntervalTypmod is how format_type writes an interval typmod
// after "interval": " day to second(3)", "(2)", "".
func FormatIntervalTypmod(typmod int32) string {
	if typmod < 0 {
		return ""
	}
	s := map[int]string{
		IntervalYear: " year", IntervalMonth: " month", IntervalDay: " day", IntervalHour: " hour",
		IntervalMinute: " minute", IntervalSecond: " second", IntervalYear | IntervalMonth: " year to month",
		IntervalDay | IntervalHour: " day to hour", IntervalDay | IntervalHour | IntervalMinute: " day to minute",
		IntervalDay | IntervalHour | IntervalMinute | IntervalSecond: " day to second",
		IntervalHour | IntervalMinute:                                " hour to minute", IntervalHour | IntervalMinute | IntervalSecond: " hour to second",
		IntervalMinute | IntervalSecond: " minute to second",
	}[typmodRange(typmod)]
	if p := typmod & 0xFFFF; p != IntervalFullPrecision {
		s += "(" + strconv.Itoa(int(p)) + ")"
	}
	return s
}

// AdjustInterval applies a typmod as interval_scale does: fields right
// of the range's last one are zeroed, and the microseconds rounded to
// the precision.
func AdjustInterval(iv Interval, typmod int32) (Interval, error) {
	if typmod < 0 {
		return iv, nil
	}
	trunc := func(unit int64) { iv.Micros = iv.Micros / unit * unit }
	switch typmodRange(typmod) {
	case IntervalYear:
		iv.Months = iv.Months / MonthsPerYear * MonthsPerYear
		iv.Days, iv.Micros = 0, 0
	case IntervalMonth, IntervalYear | IntervalMonth:
		iv.Days, iv.Micros = 0, 0
	case IntervalDay:
		iv.Micros = 0
	case IntervalHour, IntervalDay | IntervalHour:
		trunc(USecsPerHour)
	case IntervalMinute, IntervalDay | IntervalHour | IntervalMinute, IntervalHour | IntervalMinute:
		trunc(USecsPerMinute)
	}
	if p := int(typmod & 0xFFFF); p != IntervalFullPrecision {
		if p < 0 || p > maxIntervalPrecision {
			return iv, sqlstate.Errorf(sqlstate.CodeInvalidParameterValue, "interval(%d) precision must be between %d and %d", p, 0, maxIntervalPrecision)
		}
		scale := int64(math.Pow10(maxIntervalPrecision - p))
		// PostgreSQL 15 rounds with wrapping int64 arithmetic.
		if iv.Micros >= 0 {
			iv.Micros = (iv.Micros + scale/2) / scale * scale
		} else {
			iv.Micros = -((-iv.Micros + scale/2) / scale * scale)
		}
	}
	return iv, nil
}

func errIntervalRange() error {
	return sqlstate.Errorf(codeDatetimeFieldOverflow, "interval out of range")
}

// ErrIntervalOutOfRange is 22008 "interval out of range".
func ErrIntervalOutOfRange() error { return errIntervalRange() }

// Span is the interval as one length: months of 30 days, days of 24
// hours, as PostgreSQL compares and hashes intervals. It is days and the
// microseconds of the last day (0 to a day), so that equal spans have
// equal Spans.
func (iv Interval) Span() (days, micros int64) {
	micros = iv.Micros % USecsPerDay
	days = iv.Micros/USecsPerDay + int64(iv.Months)*DaysPerMonth + int64(iv.Days)
	if micros < 0 {
		micros += USecsPerDay
		days--
	}
	return days, micros
}

// Cmp orders intervals by their Span: interval '1 month' equals
// interval '30 days'.
func (iv Interval) Cmp(o Interval) int {
	d1, u1 := iv.Span()
	d2, u2 := o.Span()
	switch {
	case d1 < d2:
		return -1
	case d1 > d2:
		return 1
	case u1 < u2:
		return -1
	case u1 > u2:
		return 1
	}
	return 0
}

// Neg is unary minus (interval_um).
func (iv Interval) Neg() (Interval, error) {
	if iv.Micros == math.MinInt64 || iv.Days == math.MinInt32 || iv.Months == math.MinInt32 {
		return Interval{}, errIntervalRange()
	}
	return Interval{Months: -iv.Months, Days: -iv.Days, Micros: -iv.Micros}, nil
}

// Add adds field by field (interval_pl).
func (iv Interval) Add(o Interval) (Interval, error) {
	m, ok1 := add32(iv.Months, o.Months)
	d, ok2 := add32(iv.Days, o.Days)
	u, ok3 := add64(iv.Micros, o.Micros)
	if !ok1 || !ok2 || !ok3 {
		return Interval{}, errIntervalRange()
	}
	return Interval{m, d, u}, nil
}

// Sub subtracts field by field (interval_mi).
func (iv Interval) Sub(o Interval) (Interval, error) {
	m, ok1 := sub32(iv.Months, o.Months)
	d, ok2 := sub32(iv.Days, o.Days)
	u, ok3 := sub64(iv.Micros, o.Micros)
	if !ok1 || !ok2 || !ok3 {
		return Interval{}, errIntervalRange()
	}
	return Interval{m, d, u}, nil
}

func add32(a, b int32) (int32, bool) {
	s := int64(a) + int64(b)
	return int32(s), s == int64(int32(s))
}

func sub32(a, b int32) (int32, bool) {
	s := int64(a) - int64(b)
	return int32(s), s == int64(int32(s))
}

func add64(a, b int64) (int64, bool) {
	s := a + b
	return s, (s > a) == (b > 0)
}

func sub64(a, b int64) (int64, bool) {
	s := a - b
	return s, (s < a) == (b > 0)
}

func mul64(a, b int64) (int64, bool) {
	hi, lo := bits.Mul64(uint64(absU(a)), uint64(absU(b)))
	neg := (a < 0) != (b < 0)
	if hi != 0 || lo > math.MaxInt64+uint64(boolInt(neg)) {
		return 0, false
	}
	if neg {
		return -int64(lo), true
	}
	return int64(lo), true
}

func absU(a int64) uint64 {
	if a < 0 {
		return uint64(-a)
	}
	return uint64(a)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// JustifyHours moves whole days of the time part into days
// (justify_hours).
func (iv Interval) JustifyHours() (Interval, error) {
	whole := iv.Micros / USecsPerDay
	iv.Micros -= whole * USecsPerDay
	d := int64(iv.Days) + whole
	if d != int64(int32(d)) {
		return Interval{}, errIntervalRange()
	}
	iv.Days = int32(d)
	switch {
	case iv.Days > 0 && iv.Micros < 0:
		iv.Micros += USecsPerDay
		iv.Days--
	case iv.Days < 0 && iv.Micros > 0:
		iv.Micros -= USecsPerDay
		iv.Days++
	}
	return iv, nil
}

// daysToMonths moves whole 30-day months of days into months; false if
// months overflow.
func (iv *Interval) daysToMonths() bool {
	whole := iv.Days / DaysPerMonth
	iv.Days -= whole * DaysPerMonth
	m, ok := add32(iv.Months, whole)
	iv.Months = m
	return ok
}

// JustifyDays moves whole 30-day months of days into months
// (justify_days).
func (iv Interval) JustifyDays() (Interval, error) {
	if !iv.daysToMonths() {
		return Interval{}, errIntervalRange()
	}
	switch {
	case iv.Months > 0 && iv.Days < 0:
		iv.Days += DaysPerMonth
		iv.Months--
	case iv.Months < 0 && iv.Days > 0:
		iv.Days -= DaysPerMonth
		iv.Months++
	}
	return iv, nil
}

// JustifyInterval is justify_days and justify_hours with the signs of
// all three fields made the same (justify_interval).
func (iv Interval) JustifyInterval() (Interval, error) {
	if iv.Days > 0 && iv.Micros > 0 || iv.Days < 0 && iv.Micros < 0 {
		// Justifying days first keeps the day count from overflowing.
		if !iv.daysToMonths() {
			return Interval{}, errIntervalRange()
		}
	}
	wholeDay := iv.Micros / USecsPerDay
	iv.Micros -= wholeDay * USecsPerDay
	iv.Days += int32(wholeDay)
	if !iv.daysToMonths() {
		return Interval{}, errIntervalRange()
	}
	switch {
	case iv.Months > 0 && (iv.Days < 0 || iv.Days == 0 && iv.Micros < 0):
		iv.Days += DaysPerMonth
		iv.Months--
	case iv.Months < 0 && (iv.Days > 0 || iv.Days == 0 && iv.Micros > 0):
		iv.Days -= DaysPerMonth
		iv.Months++
	}
	switch {
	case iv.Days > 0 && iv.Micros < 0:
		iv.Micros += USecsPerDay
		iv.Days--
	case iv.Days < 0 && iv.Micros > 0:
		iv.Micros -= USecsPerDay
		iv.Days++
	}
	return iv, nil
}

// IntervalFields is an interval broken down as interval2itm does:
// years and months from Months, hours to microseconds from Micros, each
// with the sign of its source.
type IntervalFields struct {
	Year, Mon int32
	Day       int32
	Hour      int64
	Min, Sec  int32
	USec      int32
}

// Fields breaks the interval down (interval2itm).
func (iv Interval) Fields() IntervalFields {
	t := iv.Micros
	f := IntervalFields{Year: iv.Months / MonthsPerYear, Mon: iv.Months % MonthsPerYear, Day: iv.Days}
	f.Hour = t / USecsPerHour
	t -= f.Hour * USecsPerHour
	f.Min = int32(t / USecsPerMinute)
	t -= int64(f.Min) * USecsPerMinute
	f.Sec = int32(t / USecsPerSec)
	f.USec = int32(t - int64(f.Sec)*USecsPerSec)
	return f
}

// FormatInterval writes an interval in an IntervalStyle (postgres,
// postgres_verbose, sql_standard, iso_8601), byte for byte as
// PostgreSQL's EncodeInterval.
func FormatInterval(iv Interval, intervalStyle string) string {
	f := iv.Fields()
	year, mon, mday := int64(f.Year), int64(f.Mon), int64(f.Day)
	hour, mins, sec, fsec := f.Hour, int64(f.Min), int64(f.Sec), int64(f.USec)
	b := make([]byte, 0, 48)
	switch strings.ToLower(intervalStyle) {
	case "sql_standard":
		hasNeg := year < 0 || mon < 0 || mday < 0 || hour < 0 || mins < 0 || sec < 0 || fsec < 0
		hasPos := year > 0 || mon > 0 || mday > 0 || hour > 0 || mins > 0 || sec > 0 || fsec > 0
		hasYM := year != 0 || mon != 0
		hasDT := mday != 0 || hour != 0 || mins != 0 || sec != 0 || fsec != 0
		std := !(hasNeg && hasPos) && !(hasYM && hasDT)
		if hasNeg && std {
			b = append(b, '-')
			year, mon, mday, hour, mins, sec, fsec = -year, -mon, -mday, -hour, -mins, -sec, -fsec
		}
		switch {
		case !hasNeg && !hasPos:
			b = append(b, '0')
		case !std:
			sign := func(neg bool) byte {
				if neg {
					return '-'
				}
				return '+'
			}
			b = append(b, sign(year < 0 || mon < 0))
			b = strconv.AppendInt(b, abs64(year), 10)
			b = append(b, '-')
			b = strconv.AppendInt(b, abs64(mon), 10)
			b = append(b, ' ', sign(mday < 0))
			b = strconv.AppendInt(b, abs64(mday), 10)
			b = append(b, ' ', sign(hour < 0 || mins < 0 || sec < 0 || fsec < 0))
			b = strconv.AppendInt(b, abs64(hour), 10)
			b = append(b, ':')
			b = appendPad2(b, abs64(mins))
			b = append(b, ':')
			b = appendSeconds(b, sec, fsec, true)
		case hasYM:
			b = strconv.AppendInt(b, year, 10)
			b = append(b, '-')
			b = strconv.AppendInt(b, mon, 10)
		default:
			if mday != 0 {
				b = strconv.AppendInt(b, mday, 10)
				b = append(b, ' ')
			}
			b = strconv.AppendInt(b, hour, 10)
			b = append(b, ':')
			b = appendPad2(b, mins)
			b = append(b, ':')
			b = appendSeconds(b, sec, fsec, true)
		}
	case "iso_8601":
		if year == 0 && mon == 0 && mday == 0 && hour == 0 && mins == 0 && sec == 0 && fsec == 0 {
			return "PT0S"
		}
		b = append(b, 'P')
		part := func(v int64, unit byte) {
			if v != 0 {
				b = strconv.AppendInt(b, v, 10)
				b = append(b, unit)
			}
		}
		part(year, 'Y')
		part(mon, 'M')
		part(mday, 'D')
		if hour != 0 || mins != 0 || sec != 0 || fsec != 0 {
			b = append(b, 'T')
		}
		part(hour, 'H')
		part(mins, 'M')
		if sec != 0 || fsec != 0 {
			if sec < 0 || fsec < 0 {
				b = append(b, '-')
			}
			b = appendSeconds(b, sec, fsec, false)
			b = append(b, 'S')
		}
	case "postgres_verbose":
		b = append(b, '@')
		isZero, isBefore := true, false
		part := func(v int64, unit string) {
			if v == 0 {
				return
			}
			if isZero {
				isBefore = v < 0
				v = abs64(v)
			} else if isBefore {
				v = -v
			}
			b = append(b, ' ')
			b = strconv.AppendInt(b, v, 10)
			b = append(b, ' ')
			b = append(b, unit...)
			if v != 1 {
				b = append(b, 's')
			}
			isZero = false
		}
		part(year, "year")
		part(mon, "mon")
		part(mday, "day")
		part(hour, "hour")
		part(mins, "min")
		if sec != 0 || fsec != 0 {
			b = append(b, ' ')
			if sec < 0 || sec == 0 && fsec < 0 {
				if isZero {
					isBefore = true
				} else if !isBefore {
					b = append(b, '-')
				}
			} else if isBefore {
				b = append(b, '-')
			}
			b = appendSeconds(b, sec, fsec, false)
			b = append(b, " sec"...)
			if abs64(sec) != 1 || fsec != 0 {
				b = append(b, 's')
			}
			isZero = false
		}
		if isZero {
			b = append(b, " 0"...)
		}
		if isBefore {
			b = append(b, " ago"...)
		}
	default:
		isZero, isBefore := true, false
		part := func(v int64, unit string) {
			if v == 0 {
				return
			}
			if !isZero {
				b = append(b, ' ')
			}
			if isBefore && v > 0 {
				b = append(b, '+')
			}
			b = strconv.AppendInt(b, v, 10)
			b = append(b, ' ')
			b = append(b, unit...)
			if v != 1 {
				b = append(b, 's')
			}
			isBefore = v < 0
			isZero = false
		}
		part(year, "year")
		part(mon, "mon")
		part(mday, "day")
		if isZero || hour != 0 || mins != 0 || sec != 0 || fsec != 0 {
			minus := hour < 0 || mins < 0 || sec < 0 || fsec < 0
			if !isZero {
				b = append(b, ' ')
			}
			if minus {
				b = append(b, '-')
			} else if isBefore {
				b = append(b, '+')
			}
			b = appendPad2(b, abs64(hour))
			b = append(b, ':')
			b = appendPad2(b, abs64(mins))
			b = append(b, ':')
			b = appendSeconds(b, sec, fsec, true)
		}
	}
	return string(b)
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func appendPad2(b []byte, v int64) []byte {
	if v < 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, v, 10)
}

// appendSeconds is AppendSeconds: the absolute seconds (two digits with
// pad), then the fraction without trailing zeros.
func appendSeconds(b []byte, sec, fsec int64, pad bool) []byte {
	if pad {
		b = appendPad2(b, abs64(sec))
	} else {
		b = strconv.AppendInt(b, abs64(sec), 10)
	}
	if fsec != 0 {
		f := strconv.FormatInt(abs64(fsec)+1000000, 10)[1:]
		b = append(b, '.')
		b = append(b, strings.TrimRight(f, "0")...)
	}
	return b
}

// Interval input: PostgreSQL's ParseDateTime splits the text into
// fields, DecodeInterval reads them right to left; what it refuses as
// badly formatted is tried as ISO 8601 (DecodeISO8601Interval).

// Field kinds of ParseDateTime.
const (
	fNumber = iota
	fDate
	fTime
	fString
	fSpecial
	fTZ
)

// Outcomes of the decoders besides success.
const (
	dtOK = iota
	dtBad
	dtOverflow
)

// Units of DecodeInterval; uNone is what "ago" leaves, which no number
// may take.
const (
	uNone = iota
	uIgnore
	uMicrosec
	uMillisec
	uSecond
	uMinute
	uHour
	uDay
	uWeek
	uMonth
	uQuarter
	uYear
	uDecade
	uCentury
	uMillennium
	uOther // a unit word intervals have no field for
	uAgo
	uReserved
)

// deltaUnits is PostgreSQL's deltatktbl. Words are matched on their
// first 10 characters (TOKMAXLEN), which is why "microseconds" is
// "microsecon".
var deltaUnits = map[string]int{
	"@": uIgnore, "ago": uAgo, "c": uCentury, "cent": uCentury, "centuries": uCentury, "century": uCentury,
	"d": uDay, "day": uDay, "days": uDay, "dec": uDecade, "decade": uDecade, "decades": uDecade, "decs": uDecade,
	"h": uHour, "hour": uHour, "hours": uHour, "hr": uHour, "hrs": uHour, "invalid": uReserved,
	"m": uMinute, "microsecon": uMicrosec, "mil": uMillennium, "millennia": uMillennium, "millennium": uMillennium,
	"millisecon": uMillisec, "mils": uMillennium, "min": uMinute, "mins": uMinute, "minute": uMinute, "minutes": uMinute,
	"mon": uMonth, "mons": uMonth, "month": uMonth, "months": uMonth, "ms": uMillisec, "msec": uMillisec,
	"msecond": uMillisec, "mseconds": uMillisec, "msecs": uMillisec, "qtr": uQuarter, "quarter": uQuarter,
	"s": uSecond, "sec": uSecond, "second": uSecond, "seconds": uSecond, "secs": uSecond,
	"timezone": uOther, "timezone_h": uOther, "timezone_m": uOther, "undefined": uReserved,
	"us": uMicrosec, "usec": uMicrosec, "usecond": uMicrosec, "useconds": uMicrosec, "usecs": uMicrosec,
	"w": uWeek, "week": uWeek, "weeks": uWeek, "y": uYear, "year": uYear, "years": uYear, "yr": uYear, "yrs": uYear,
}

// lookupUnit finds a lower-case unit word in deltaUnits.
func lookupUnit(w string) (int, bool) {
	if len(w) >= 10 {
		if u, ok := deltaUnits[w[:10]]; ok && len(w[:10]) == 10 {
			return u, true
		}
		return 0, false
	}
	u, ok := deltaUnits[w]
	return u, ok
}

// dateTokens are the words of PostgreSQL's datetktbl: a word among them
// followed by a digit or '+' is a word, any other is the start of a
// date-like field (a zone name such as "gmt+8").
var dateTokens = map[string]bool{
	"-infinity": true, "ad": true, "allballs": true, "am": true, "apr": true, "april": true, "at": true, "aug": true,
	"august": true, "bc": true, "d": true, "dec": true, "december": true, "dow": true, "doy": true, "dst": true,
	"epoch": true, "feb": true, "february": true, "fri": true, "friday": true, "h": true, "infinity": true,
	"isodow": true, "isoyear": true, "j": true, "jan": true, "january": true, "jd": true, "jul": true, "julian": true,
	"july": true, "jun": true, "june": true, "m": true, "mar": true, "march": true, "may": true, "mm": true,
	"mon": true, "monday": true, "nov": true, "november": true, "now": true, "oct": true, "october": true,
	"on": true, "pm": true, "s": true, "sat": true, "saturday": true, "sep": true, "sept": true, "september": true,
	"sun": true, "sunday": true, "t": true, "thu": true, "thur": true, "thurs": true, "thursday": true,
	"today": true, "tomorrow": true, "tue": true, "tues": true, "tuesday": true, "wed": true, "wednesday": true,
	"weds": true, "y": true, "yesterday": true,
}

func isDigitB(c byte) bool { return c >= '0' && c <= '9' }
func isAlphaB(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isSpaceB(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }
func isPunctB(c byte) bool {
	return c > ' ' && c < 0x7f && !isDigitB(c) && !isAlphaB(c)
}
func lowerB(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// splitDateTime is ParseDateTime: at most 25 fields, in a work buffer of
// 256 bytes (interval_in's), lower-cased.
func splitDateTime(s string) (fields []string, kinds []int, ok bool) {
	const maxFields, bufLen = 25, 256
	used := 0
	for i := 0; i < len(s); {
		c := s[i]
		if isSpaceB(c) {
			i++
			continue
		}
		if len(fields) >= maxFields {
			return nil, nil, false
		}
		var b []byte
		put := func(ch byte) bool {
			if used+1 >= bufLen {
				return false
			}
			b = append(b, ch)
			used++
			return true
		}
		// run appends characters while pred holds.
		run := func(pred func(byte) bool, low bool) bool {
			for i < len(s) && pred(s[i]) {
				ch := s[i]
				if low {
					ch = lowerB(ch)
				}
				if !put(ch) {
					return false
				}
				i++
			}
			return true
		}
		var kind int
		switch {
		case isDigitB(c):
			if !run(isDigitB, false) {
				return nil, nil, false
			}
			switch {
			case i < len(s) && s[i] == ':':
				kind = fTime
				if !run(func(ch byte) bool { return isDigitB(ch) || ch == ':' || ch == '.' }, false) {
					return nil, nil, false
				}
			case i < len(s) && (s[i] == '-' || s[i] == '/' || s[i] == '.'):
				delim := s[i]
				if !put(delim) {
					return nil, nil, false
				}
				i++
				if i < len(s) && isDigitB(s[i]) {
					kind = fDate
					if delim == '.' {
						kind = fNumber
					}
					if !run(isDigitB, false) {
						return nil, nil, false
					}
					if i < len(s) && s[i] == delim {
						kind = fDate
						if !run(func(ch byte) bool { return isDigitB(ch) || ch == delim }, false) {
							return nil, nil, false
						}
					}
				} else {
					kind = fDate
					if !run(func(ch byte) bool { return isDigitB(ch) || isAlphaB(ch) || ch == delim }, true) {
						return nil, nil, false
					}
				}
			default:
				kind = fNumber
			}
		case c == '.':
			if !put(c) {
				return nil, nil, false
			}
			i++
			if !run(isDigitB, false) {
				return nil, nil, false
			}
			kind = fNumber
		case isAlphaB(c):
			kind = fString
			if !run(isAlphaB, true) {
				return nil, nil, false
			}
			isDate := false
			if i < len(s) {
				switch n := s[i]; {
				case n == '-' || n == '/' || n == '.':
					isDate = true
				case n == '+' || isDigitB(n):
					isDate = !dateTokens[tok10(string(b))]
				}
			}
			if isDate {
				kind = fDate
				for {
					if !put(lowerB(s[i])) {
						return nil, nil, false
					}
					i++
					if i >= len(s) {
						break
					}
					n := s[i]
					if !(n == '+' || n == '-' || n == '/' || n == '_' || n == '.' || n == ':' || isDigitB(n) || isAlphaB(n)) {
						break
					}
				}
			}
		case c == '+' || c == '-':
			if !put(c) {
				return nil, nil, false
			}
			i++
			for i < len(s) && isSpaceB(s[i]) {
				i++
			}
			switch {
			case i < len(s) && isDigitB(s[i]):
				kind = fTZ
				if !run(func(ch byte) bool { return isDigitB(ch) || ch == ':' || ch == '.' || ch == '-' }, false) {
					return nil, nil, false
				}
			case i < len(s) && isAlphaB(s[i]):
				kind = fSpecial
				if !run(isAlphaB, true) {
					return nil, nil, false
				}
			default:
				return nil, nil, false
			}
		case isPunctB(c):
			i++
			continue
		default:
			return nil, nil, false
		}
		used++ // the field's terminator
		fields = append(fields, string(b))
		kinds = append(kinds, kind)
	}
	return fields, kinds, true
}

// tok10 is a token as the keyword tables compare it (TOKMAXLEN).
func tok10(w string) string {
	if len(w) > 10 {
		return w[:10]
	}
	return w
}

// itmIn is pg_itm_in: what interval input accumulates.
type itmIn struct {
	usec            int64
	mday, mon, year int32
}

func (t *itmIn) addMicros(val int64, fval float64, scale int64) bool {
	p, ok := mul64(val, scale)
	if !ok {
		return false
	}
	if t.usec, ok = add64(t.usec, p); !ok {
		return false
	}
	return t.addFractMicros(fval, scale)
}

func (t *itmIn) addFractMicros(frac float64, scale int64) bool {
	if frac == 0 {
		return true
	}
	frac *= float64(scale)
	usec := int64(frac)
	frac -= float64(usec)
	if frac > 0.5 {
		usec++
	} else if frac < -0.5 {
		usec--
	}
	var ok bool
	t.usec, ok = add64(t.usec, usec)
	return ok
}

func (t *itmIn) addFractDays(frac float64, scale int) bool {
	if frac == 0 {
		return true
	}
	frac *= float64(scale)
	extra := int32(frac)
	var ok bool
	if t.mday, ok = add32(t.mday, extra); !ok {
		return false
	}
	return t.addFractMicros(frac-float64(extra), USecsPerDay)
}

func (t *itmIn) addFractYears(frac float64, scale int) bool {
	extra := int32(math.RoundToEven(frac * float64(scale) * MonthsPerYear))
	var ok bool
	t.mon, ok = add32(t.mon, extra)
	return ok
}

func (t *itmIn) addDays(val int64, scale int32) bool {
	if val != int64(int32(val)) {
		return false
	}
	d := int64(val) * int64(scale)
	if d != int64(int32(d)) {
		return false
	}
	var ok bool
	t.mday, ok = add32(t.mday, int32(d))
	return ok
}

func (t *itmIn) addMonths(val int64) bool {
	if val != int64(int32(val)) {
		return false
	}
	var ok bool
	t.mon, ok = add32(t.mon, int32(val))
	return ok
}

func (t *itmIn) addYears(val int64, scale int32) bool {
	if val != int64(int32(val)) {
		return false
	}
	y := val * int64(scale)
	if y != int64(int32(y)) {
		return false
	}
	var ok bool
	t.year, ok = add32(t.year, int32(y))
	return ok
}

// strtoll reads what C's strtoll reads in base 10 from s[i:]: a sign and
// digits. It returns the index after them (i itself when there are no
// digits) and whether the value overflowed.
func strtoll(s string, i int) (int64, int, bool) {
	j := i
	neg := false
	if j < len(s) && (s[j] == '+' || s[j] == '-') {
		neg = s[j] == '-'
		j++
	}
	k := j
	var v uint64
	over := false
	for k < len(s) && isDigitB(s[k]) {
		d := uint64(s[k] - '0')
		if v > (math.MaxUint64-d)/10 {
			over = true
		} else {
			v = v*10 + d
		}
		k++
	}
	if k == j {
		return 0, i, false
	}
	limit := uint64(math.MaxInt64)
	if neg {
		limit++
	}
	if over || v > limit {
		return 0, k, true
	}
	if neg {
		return -int64(v), k, false
	}
	return int64(v), k, false
}

// strtoint is strtoll limited to int32 (PostgreSQL's strtoint).
func strtoint(s string, i int) (int32, int, bool) {
	v, j, over := strtoll(s, i)
	if over || v != int64(int32(v)) {
		return 0, j, true
	}
	return int32(v), j, false
}

// parseFraction reads ".digits" to the end of s (ParseFraction).
func parseFraction(s string) (float64, bool) {
	if s == "." {
		return 0, true
	}
	if len(s) < 2 || s[0] != '.' || !isAllDigits(s[1:]) {
		return 0, false
	}
	f, err := strconv.ParseFloat("0"+s, 64)
	return f, err == nil
}

// decodeTime is DecodeTimeForInterval: hh:mm, hh:mm:ss[.frac] or
// mm:ss.frac as microseconds.
func decodeTime(s string, rng int) (int64, int) {
	hour, i, over := strtoll(s, 0)
	if over {
		return 0, dtOverflow
	}
	if i >= len(s) || s[i] != ':' {
		return 0, dtBad
	}
	mins, i, over32 := strtoint(s, i+1)
	if over32 {
		return 0, dtOverflow
	}
	var sec int32
	var fsec float64
	switch {
	case i == len(s):
		if rng == IntervalMinute|IntervalSecond {
			if hour != int64(int32(hour)) {
				return 0, dtOverflow
			}
			sec, mins, hour = mins, int32(hour), 0
		}
	case s[i] == '.':
		f, ok := parseFraction(s[i:])
		if !ok {
			return 0, dtBad
		}
		fsec = math.RoundToEven(f * 1e6)
		if hour != int64(int32(hour)) {
			return 0, dtOverflow
		}
		sec, mins, hour = mins, int32(hour), 0
	case s[i] == ':':
		sec, i, over32 = strtoint(s, i+1)
		if over32 {
			return 0, dtOverflow
		}
		if i < len(s) {
			if s[i] != '.' {
				return 0, dtBad
			}
			f, ok := parseFraction(s[i:])
			if !ok {
				return 0, dtBad
			}
			fsec = math.RoundToEven(f * 1e6)
		}
	default:
		return 0, dtBad
	}
	if hour < 0 || mins < 0 || mins > 59 || sec < 0 || sec > 60 || fsec < 0 || fsec > 1e6 {
		return 0, dtOverflow
	}
	t := itmIn{usec: int64(fsec)}
	if !t.addMicros(hour, 0, USecsPerHour) || !t.addMicros(int64(mins), 0, USecsPerMinute) || !t.addMicros(int64(sec), 0, USecsPerSec) {
		return 0, dtOverflow
	}
	return t.usec, dtOK
}

// Field masks of DecodeInterval (DTK_M), to refuse a field twice.
const (
	mYear   = 1 << 2
	mMonth  = 1 << 1
	mDay    = 1 << 3
	mHour   = 1 << 10
	mMinute = 1 << 11
	mSecond = 1 << 12
	mMilli  = 1 << 13
	mMicro  = 1 << 14
	mWeek   = 1 << 24
	mDecade = 1 << 25
	mCent   = 1 << 26
	mMill   = 1 << 27
	mAllSec = mSecond | mMilli | mMicro
	mTime   = mHour | mMinute | mAllSec
)

// decodeInterval is DecodeInterval.
func decodeInterval(fields []string, kinds []int, rng int, sqlStandard bool) (itmIn, int) {
	var t itmIn
	forceNeg, isBefore := false, false
	fmask := 0
	typ := uIgnore
	if sqlStandard && len(fields) > 0 && fields[0][0] == '-' {
		forceNeg = true
		for _, f := range fields[1:] {
			if f[0] == '-' || f[0] == '+' {
				forceNeg = false
				break
			}
		}
	}
	for i := len(fields) - 1; i >= 0; i-- {
		field := fields[i]
		tmask := 0
		kind := kinds[i]
		if kind == fTZ && strings.IndexByte(field[1:], ':') >= 0 {
			if us, r := decodeTime(field[1:], rng); r == dtOK {
				t.usec = us
				if field[0] == '-' {
					t.usec = -t.usec
				}
				if forceNeg && t.usec > 0 {
					t.usec = -t.usec
				}
				tmask = mTime
				typ = uDay
				if tmask&fmask != 0 {
					return t, dtBad
				}
				fmask |= tmask
				continue
			}
		}
		switch kind {
		case fTime:
			us, r := decodeTime(field, rng)
			if r != dtOK {
				return t, r
			}
			t.usec = us
			if forceNeg && t.usec > 0 {
				t.usec = -t.usec
			}
			tmask = mTime
			typ = uDay
		case fTZ, fDate, fNumber:
			if typ == uIgnore {
				switch rng {
				case IntervalYear:
					typ = uYear
				case IntervalMonth, IntervalYear | IntervalMonth:
					typ = uMonth
				case IntervalDay:
					typ = uDay
				case IntervalHour, IntervalDay | IntervalHour:
					typ = uHour
				case IntervalMinute, IntervalHour | IntervalMinute, IntervalDay | IntervalHour | IntervalMinute:
					typ = uMinute
				default:
					typ = uSecond
				}
			}
			val, j, over := strtoll(field, 0)
			if over {
				return t, dtOverflow
			}
			var fval float64
			switch {
			case j < len(field) && field[j] == '-':
				// SQL's years-months: 1-2.
				val2, k, over := strtoint(field, j+1)
				if over || val2 < 0 || val2 >= MonthsPerYear {
					return t, dtOverflow
				}
				if k != len(field) {
					return t, dtBad
				}
				typ = uMonth
				if field[0] == '-' {
					val2 = -val2
				}
				var ok bool
				if val, ok = mul64(val, MonthsPerYear); !ok {
					return t, dtOverflow
				}
				if val, ok = add64(val, int64(val2)); !ok {
					return t, dtOverflow
				}
			case j < len(field) && field[j] == '.':
				f, ok := parseFraction(field[j:])
				if !ok {
					return t, dtBad
				}
				fval = f
				if field[0] == '-' {
					fval = -fval
				}
			case j == len(field):
			default:
				return t, dtBad
			}
			if forceNeg {
				if val > 0 {
					val = -val
				}
				if fval > 0 {
					fval = -fval
				}
			}
			ok := true
			switch typ {
			case uMicrosec:
				ok, tmask = t.addMicros(val, fval, 1), mMicro
			case uMillisec:
				ok, tmask = t.addMicros(val, fval, 1000), mMilli
			case uSecond:
				ok, tmask = t.addMicros(val, fval, USecsPerSec), mSecond
				if fval != 0 {
					tmask = mAllSec
				}
			case uMinute:
				ok, tmask = t.addMicros(val, fval, USecsPerMinute), mMinute
			case uHour:
				ok, tmask = t.addMicros(val, fval, USecsPerHour), mHour
				typ = uDay
			case uDay:
				ok, tmask = t.addDays(val, 1) && t.addFractMicros(fval, USecsPerDay), mDay
			case uWeek:
				ok, tmask = t.addDays(val, 7) && t.addFractDays(fval, 7), mWeek
			case uMonth:
				ok, tmask = t.addMonths(val) && t.addFractDays(fval, DaysPerMonth), mMonth
			case uYear:
				ok, tmask = t.addYears(val, 1) && t.addFractYears(fval, 1), mYear
			case uDecade:
				ok, tmask = t.addYears(val, 10) && t.addFractYears(fval, 10), mDecade
			case uCentury:
				ok, tmask = t.addYears(val, 100) && t.addFractYears(fval, 100), mCent
			case uMillennium:
				ok, tmask = t.addYears(val, 1000) && t.addFractYears(fval, 1000), mMill
			default:
				return t, dtBad
			}
			if !ok {
				return t, dtOverflow
			}
		case fString, fSpecial:
			u, found := lookupUnit(field)
			if !found {
				return t, dtBad
			}
			switch u {
			case uIgnore:
				continue
			case uAgo:
				isBefore = true
				typ = uNone
			case uReserved:
				return t, dtBad
			case uOther:
				typ = uQuarter // a unit no number can take
			default:
				typ = u
			}
		default:
			return t, dtBad
		}
		if tmask&fmask != 0 {
			return t, dtBad
		}
		fmask |= tmask
	}
	if fmask == 0 {
		return t, dtBad
	}
	if isBefore {
		if t.usec == math.MinInt64 || t.mday == math.MinInt32 || t.mon == math.MinInt32 || t.year == math.MinInt32 {
			return t, dtOverflow
		}
		t.usec, t.mday, t.mon, t.year = -t.usec, -t.mday, -t.mon, -t.year
	}
	return t, dtOK
}

// parseISONumber is ParseISO8601Number: what strtod reads, at most 1e15
// in magnitude, split into its integer part and fraction.
func parseISONumber(s string, i int) (ipart int64, fpart float64, next int, r int) {
	if i >= len(s) || !(isDigitB(s[i]) || s[i] == '-' || s[i] == '.') {
		return 0, 0, i, dtBad
	}
	val, n := strtod(s[i:])
	if n == 0 {
		return 0, 0, i, dtBad
	}
	if math.IsNaN(val) || val < -1e15 || val > 1e15 {
		return 0, 0, i + n, dtOverflow
	}
	if val >= 0 {
		ipart = int64(math.Floor(val))
	} else {
		ipart = -int64(math.Floor(-val))
	}
	return ipart, val - float64(ipart), i + n, dtOK
}

// strtod reads the longest prefix of s that C's strtod takes: decimal
// and hexadecimal numbers, inf, infinity and nan. It returns the value
// and the length read (0 for none).
func strtod(s string) (float64, int) {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	low := strings.ToLower(s[i:])
	for _, w := range []string{"infinity", "inf", "nan"} {
		if strings.HasPrefix(low, w) {
			v := math.Inf(1)
			if w == "nan" {
				v = math.NaN()
			} else if s[0] == '-' {
				v = math.Inf(-1)
			}
			return v, i + len(w)
		}
	}
	if strings.HasPrefix(low, "0x") {
		j := i + 2
		digits := 0
		for j < len(s) && isHexB(s[j]) {
			j, digits = j+1, digits+1
		}
		if j < len(s) && s[j] == '.' {
			j++
			for j < len(s) && isHexB(s[j]) {
				j, digits = j+1, digits+1
			}
		}
		if digits == 0 {
			return 0, i + 1 // the "0"
		}
		mant := s[:j]
		end := j
		if j < len(s) && (s[j] == 'p' || s[j] == 'P') {
			k := j + 1
			if k < len(s) && (s[k] == '+' || s[k] == '-') {
				k++
			}
			if k < len(s) && isDigitB(s[k]) {
				for k < len(s) && isDigitB(s[k]) {
					k++
				}
				end = k
			}
		}
		text := s[:end]
		if end == j {
			text = mant + "p0"
		}
		v, err := strconv.ParseFloat(text, 64)
		if err != nil && !isRangeErr(err) {
			return 0, 0
		}
		return v, end
	}
	j := i
	digits := 0
	for j < len(s) && isDigitB(s[j]) {
		j, digits = j+1, digits+1
	}
	if j < len(s) && s[j] == '.' {
		j++
		for j < len(s) && isDigitB(s[j]) {
			j, digits = j+1, digits+1
		}
	}
	if digits == 0 {
		return 0, 0
	}
	end := j
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && isDigitB(s[k]) {
			for k < len(s) && isDigitB(s[k]) {
				k++
			}
			end = k
		}
	}
	v, err := strconv.ParseFloat(s[:end], 64)
	if err != nil && !isRangeErr(err) {
		return 0, 0
	}
	return v, end
}

func isHexB(c byte) bool { return isDigitB(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func isoIntegerWidth(s string) int {
	if strings.HasPrefix(s, "-") {
		s = s[1:]
	}
	n := 0
	for n < len(s) && isDigitB(s[n]) {
		n++
	}
	return n
}

// decodeISOInterval is DecodeISO8601Interval: P1Y2M3DT4H5M6S, P1W, and
// the alternative formats P0001-02-03T04:05:06 and P00010203T040506.
func decodeISOInterval(s string) (itmIn, int) {
	var t itmIn
	if len(s) < 2 || s[0] != 'P' {
		return t, dtBad
	}
	datePart, haveField := true, false
	i := 1
	fail := func(ok bool) int {
		if !ok {
			return dtOverflow
		}
		return dtOK
	}
	for i < len(s) {
		if s[i] == 'T' {
			datePart, haveField = false, false
			i++
			continue
		}
		start := i
		val, fval, next, r := parseISONumber(s, i)
		if r != dtOK {
			return t, r
		}
		i = next
		unit := byte(0)
		if i < len(s) {
			unit = s[i]
		}
		i++
		if datePart {
			switch unit {
			case 'Y':
				if r := fail(t.addYears(val, 1) && t.addFractYears(fval, 1)); r != dtOK {
					return t, r
				}
			case 'M':
				if r := fail(t.addMonths(val) && t.addFractDays(fval, DaysPerMonth)); r != dtOK {
					return t, r
				}
			case 'W':
				if r := fail(t.addDays(val, 7) && t.addFractDays(fval, 7)); r != dtOK {
					return t, r
				}
			case 'D':
				if r := fail(t.addDays(val, 1) && t.addFractMicros(fval, USecsPerDay)); r != dtOK {
					return t, r
				}
			case 'T', 0, '-':
				if unit != '-' && isoIntegerWidth(s[start:]) == 8 && !haveField {
					if r := fail(t.addYears(val/10000, 1) && t.addMonths(val/100%100) && t.addDays(val%100, 1) && t.addFractMicros(fval, USecsPerDay)); r != dtOK {
						return t, r
					}
					if unit == 0 {
						return t, dtOK
					}
					datePart, haveField = false, false
					continue
				}
				if haveField {
					return t, dtBad
				}
				if r := fail(t.addYears(val, 1) && t.addFractYears(fval, 1)); r != dtOK {
					return t, r
				}
				if unit == 0 {
					return t, dtOK
				}
				if unit == 'T' {
					datePart, haveField = false, false
					continue
				}
				val, fval, i, r = parseISONumber(s, i)
				if r != dtOK {
					return t, r
				}
				if r := fail(t.addMonths(val) && t.addFractDays(fval, DaysPerMonth)); r != dtOK {
					return t, r
				}
				if i >= len(s) {
					return t, dtOK
				}
				if s[i] == 'T' {
					datePart, haveField = false, false
					continue
				}
				if s[i] != '-' {
					return t, dtBad
				}
				i++
				val, fval, i, r = parseISONumber(s, i)
				if r != dtOK {
					return t, r
				}
				if r := fail(t.addDays(val, 1) && t.addFractMicros(fval, USecsPerDay)); r != dtOK {
					return t, r
				}
				if i >= len(s) {
					return t, dtOK
				}
				if s[i] == 'T' {
					datePart, haveField = false, false
					continue
				}
				return t, dtBad
			default:
				return t, dtBad
			}
		} else {
			switch unit {
			case 'H':
				if r := fail(t.addMicros(val, fval, USecsPerHour)); r != dtOK {
					return t, r
				}
			case 'M':
				if r := fail(t.addMicros(val, fval, USecsPerMinute)); r != dtOK {
					return t, r
				}
			case 'S':
				if r := fail(t.addMicros(val, fval, USecsPerSec)); r != dtOK {
					return t, r
				}
			case 0, ':':
				if unit == 0 && isoIntegerWidth(s[start:]) == 6 && !haveField {
					return t, fail(t.addMicros(val/10000, 0, USecsPerHour) && t.addMicros(val/100%100, 0, USecsPerMinute) &&
						t.addMicros(val%100, 0, USecsPerSec) && t.addFractMicros(fval, 1))
				}
				if haveField {
					return t, dtBad
				}
				if r := fail(t.addMicros(val, fval, USecsPerHour)); r != dtOK {
					return t, r
				}
				if unit == 0 {
					return t, dtOK
				}
				val, fval, i, r = parseISONumber(s, i)
				if r != dtOK {
					return t, r
				}
				if r := fail(t.addMicros(val, fval, USecsPerMinute)); r != dtOK {
					return t, r
				}
				if i >= len(s) {
					return t, dtOK
				}
				if s[i] != ':' {
					return t, dtBad
				}
				i++
				val, fval, i, r = parseISONumber(s, i)
				if r != dtOK {
					return t, r
				}
				if r := fail(t.addMicros(val, fval, USecsPerSec)); r != dtOK {
					return t, r
				}
				if i >= len(s) {
					return t, dtOK
				}
				return t, dtBad
			default:
				return t, dtBad
			}
		}
		haveField = true
	}
	return t, dtOK
}

// ParseInterval reads interval input as interval_in does under a
// session's IntervalStyle (sql_standard makes a leading minus apply to
// every field) and a typmod (-1 for none; its field range says what a
// bare number means and which fields are kept). Errors: 22007 for bad
// syntax, 22015 for a field out of range, 22008 for a result out of
// range.
func ParseInterval(s string, st Style, typmod int32) (Interval, error) {
	rng := typmodRange(typmod)
	r := dtBad
	var t itmIn
	if fields, kinds, ok := splitDateTime(s); ok {
		t, r = decodeInterval(fields, kinds, rng, strings.EqualFold(st.IntervalStyle, "sql_standard"))
	}
	if r == dtBad {
		t, r = decodeISOInterval(s)
	}
	switch r {
	case dtBad:
		return Interval{}, sqlstate.Errorf(codeInvalidDatetimeFormat, "invalid input syntax for type interval: \"%s\"", s)
	case dtOverflow:
		return Interval{}, sqlstate.Errorf(codeIntervalFieldOverflow, "interval field value out of range: \"%s\"", s)
	}
	months := int64(t.year)*MonthsPerYear + int64(t.mon)
	if months != int64(int32(months)) {
		return Interval{}, errIntervalRange()
	}
	return AdjustInterval(Interval{Months: int32(months), Days: t.mday, Micros: t.usec}, typmod)
}

// codeIntervalFieldOverflow is 22015.
const codeIntervalFieldOverflow = "22015"

// IntervalUnit reads a unit name as date_trunc and extract do on an
// interval: ok is false for a word that is no unit; the unit is one of
// "microseconds", "milliseconds", "second", "minute", "hour", "day",
// "week", "month", "quarter", "year", "decade", "century",
// "millennium" or "" for a unit intervals do not have.
func IntervalUnit(word string) (unit string, ok bool) {
	u, found := lookupUnit(strings.ToLower(word))
	if !found {
		return "", false
	}
	switch u {
	case uMicrosec:
		return "microseconds", true
	case uMillisec:
		return "milliseconds", true
	case uSecond:
		return "second", true
	case uMinute:
		return "minute", true
	case uHour:
		return "hour", true
	case uDay:
		return "day", true
	case uWeek:
		return "week", true
	case uMonth:
		return "month", true
	case uQuarter:
		return "quarter", true
	case uYear:
		return "year", true
	case uDecade:
		return "decade", true
	case uCentury:
		return "century", true
	case uMillennium:
		return "millennium", true
	case uOther:
		return "", true
	}
	return "", false
}
