package pgtypes

import (
	"math"
	"strings"
	"time"

	"github.com/cellardb/cellar/query/sqlstate"
)

// PostgreSQL's timestamps are microseconds since 2000-01-01 00:00:00;
// dates are Julian day numbers. These are its epochs and the range a
// timestamp may take (4714-11-24 BC to the end of 294276 AD).
const (
	postgresEpochJDate = 2451545
	unixEpochJDate     = 2440588
	MinTimestamp       = int64(-211813488000000000)
	EndTimestamp       = int64(9223371331200000000)
	secsPerDay         = 86400
)

// TimestampMicros is t as PostgreSQL's Timestamp: microseconds since
// 2000-01-01 UTC, the infinities as the largest and smallest int64.
func TimestampMicros(t time.Time) int64 {
	switch IsInfinite(t) {
	case 1:
		return math.MaxInt64
	case -1:
		return math.MinInt64
	}
	u := t.UTC()
	return (u.Unix()-(postgresEpochJDate-unixEpochJDate)*secsPerDay)*USecsPerSec + int64(u.Nanosecond()/1000)
}

// TimeFromMicros is TimestampMicros reversed.
func TimeFromMicros(us int64) time.Time {
	switch us {
	case math.MaxInt64:
		return TimeInfinity
	case math.MinInt64:
		return TimeNegInfinity
	}
	sec := us / USecsPerSec
	frac := us % USecsPerSec
	if frac < 0 {
		frac += USecsPerSec
		sec--
	}
	return time.Unix(sec+(postgresEpochJDate-unixEpochJDate)*secsPerDay, frac*1000).UTC()
}

// ValidTimestamp reports whether us is within PostgreSQL's range.
func ValidTimestamp(us int64) bool { return us >= MinTimestamp && us < EndTimestamp }

// ErrTimestampRange is 22008 "timestamp out of range".
func ErrTimestampRange() error {
	return sqlstate.Errorf(codeDatetimeFieldOverflow, "timestamp out of range")
}

// Date2J is PostgreSQL's date2j: the Julian day of a proleptic
// Gregorian date (year 0 is 1 BC).
func Date2J(y, m, d int) int {
	if m > 2 {
		m++
		y += 4800
	} else {
		m += 13
		y += 4799
	}
	century := y / 100
	julian := y*365 - 32167
	julian += y/4 - century + century/4
	julian += 7834*m/256 + d
	return julian
}

// J2Date is PostgreSQL's j2date.
func J2Date(jd int) (year, month, day int) {
	julian := uint32(jd)
	julian += 32044
	quad := julian / 146097
	extra := (julian-quad*146097)*4 + 3
	julian += 60 + quad*3 + extra/146097
	quad = julian / 1461
	julian -= quad * 1461
	y := int(julian * 4 / 1461)
	if y != 0 {
		julian = (julian+305)%365 + 123
	} else {
		julian = (julian+306)%366 + 123
	}
	y += int(quad * 4)
	year = y - 4800
	quad = julian * 2141 / 65536
	day = int(julian - 7834*quad/256)
	month = int((quad+10)%12 + 1)
	return
}

// ValidJulian is IS_VALID_JULIAN: whether date2j works for the date.
func ValidJulian(y, m int) bool {
	return (y > -4713 || y == -4713 && m >= 11) && (y < 5874898 || y == 5874898 && m < 6)
}

// IsLeap is PostgreSQL's isleap.
func IsLeap(y int) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

// DaysInMonth is day_tab: the days of month m (1 to 12) of year y.
func DaysInMonth(y, m int) int {
	if m == 2 && IsLeap(y) {
		return 29
	}
	return [...]int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[m-1]
}

// Tm is a broken-down time (PostgreSQL's pg_tm and fsec).
type Tm struct {
	Year, Mon, Mday, Hour, Min, Sec int
	Fsec                            int64
}

// BreakTimestamp is timestamp2tm: the fields of us, a timestamp (loc
// nil) or a timestamptz seen in loc. ok is false outside the Julian
// range.
func BreakTimestamp(us int64, loc *time.Location) (tm Tm, ok bool) {
	date := us / USecsPerDay
	t := us - date*USecsPerDay
	if t < 0 {
		t += USecsPerDay
		date--
	}
	date += postgresEpochJDate
	if date < 0 || date > math.MaxInt32 {
		return tm, false
	}
	if loc != nil && loc != time.UTC {
		// The local time of the instant's whole second, as pg_localtime
		// gives it.
		secs := floorDiv(us, USecsPerSec)
		unix := secs + (postgresEpochJDate-unixEpochJDate)*secsPerDay
		_, off := time.Unix(unix, 0).In(loc).Zone()
		local := unix + int64(off)
		date = floorDiv(local, secsPerDay) + unixEpochJDate
		t = (local-floorDiv(local, secsPerDay)*secsPerDay)*USecsPerSec + (us - secs*USecsPerSec)
	}
	tm.Year, tm.Mon, tm.Mday = J2Date(int(date))
	tm.Hour = int(t / USecsPerHour)
	t -= int64(tm.Hour) * USecsPerHour
	tm.Min = int(t / USecsPerMinute)
	t -= int64(tm.Min) * USecsPerMinute
	tm.Sec = int(t / USecsPerSec)
	tm.Fsec = t - int64(tm.Sec)*USecsPerSec
	return tm, true
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// MakeTimestamp is tm2timestamp: the timestamp of tm, a wall-clock time
// in loc for a timestamptz (loc nil for a timestamp), with PostgreSQL's
// choice at daylight-saving changes (DetermineTimeZoneOffset). ok is
// false out of range.
func MakeTimestamp(tm Tm, loc *time.Location) (int64, bool) {
	if !ValidJulian(tm.Year, tm.Mon) {
		return 0, false
	}
	date := int64(Date2J(tm.Year, tm.Mon, tm.Mday) - postgresEpochJDate)
	t := ((int64(tm.Hour)*60+int64(tm.Min))*60+int64(tm.Sec))*USecsPerSec + tm.Fsec
	us := date*USecsPerDay + t
	if (us-t)/USecsPerDay != date || us < 0 && date > 0 || us > 0 && date < -1 {
		return 0, false
	}
	if loc != nil {
		us -= int64(ZoneOffset(tm, loc)) * USecsPerSec
	}
	return us, ValidTimestamp(us)
}

// ZoneOffset is DetermineTimeZoneOffset: the UTC offset (seconds east)
// of wall-clock time tm in loc. A time skipped by a spring-forward
// change takes the offset before it; a time repeated by a fall-back
// change the offset after it.
func ZoneOffset(tm Tm, loc *time.Location) int {
	if loc == nil || loc == time.UTC || !ValidJulian(tm.Year, tm.Mon) {
		return 0
	}
	mytime := int64(Date2J(tm.Year, tm.Mon, tm.Mday)-unixEpochJDate)*secsPerDay + int64(tm.Sec+(tm.Min+tm.Hour*60)*60)
	prec := time.Unix(mytime-secsPerDay, 0).In(loc)
	_, before := prec.Zone()
	_, end := prec.ZoneBounds()
	if end.IsZero() {
		return before
	}
	boundary := end.Unix()
	_, after := end.In(loc).Zone()
	beforeTime, afterTime := mytime-int64(before), mytime-int64(after)
	switch {
	case beforeTime < boundary && afterTime < boundary:
		return before
	case beforeTime > boundary && afterTime >= boundary:
		return after
	case beforeTime > afterTime:
		return before
	}
	return after
}

// LocalTime is the instant of a wall-clock time in loc, resolved at
// daylight-saving changes as PostgreSQL does (see ZoneOffset).
func LocalTime(year int, month time.Month, day, hour, min, sec, nsec int, loc *time.Location) time.Time {
	wall := time.Date(year, month, day, hour, min, sec, nsec, time.UTC)
	tm := Tm{Year: wall.Year(), Mon: int(wall.Month()), Mday: wall.Day(), Hour: wall.Hour(), Min: wall.Minute(), Sec: wall.Second()}
	return wall.Add(-time.Duration(ZoneOffset(tm, loc)) * time.Second)
}

// NamedZoneOffset is parse_sane_timezone (make_timestamptz's and
// date_trunc's zone argument): a numeric offset (+05, -03:30, +0530), a
// time zone abbreviation, or a zone name whose offset at wall-clock time
// tm counts. It returns seconds east of UTC.
func NamedZoneOffset(name string, tm Tm) (int, error) {
	if name != "" && isDigitB(name[0]) {
		e := sqlstate.Errorf(sqlstate.CodeInvalidParameterValue, "invalid input syntax for type numeric time zone: \"%s\"", name)
		e.Hint = `Numeric time zones must have "-" or "+" as first character.`
		return 0, e
	}
	if name != "" && (name[0] == '+' || name[0] == '-') {
		off, r := decodeTimezone(name)
		switch r {
		case dtOK:
			return off, nil
		case dtOverflow:
			return 0, sqlstate.Errorf(sqlstate.CodeInvalidParameterValue, "numeric time zone \"%s\" out of range", name)
		}
	}
	low := strings.ToLower(name)
	if off, ok := zoneAbbrevs[low]; ok {
		return off, nil
	}
	if zone, ok := zoneAbbrevZones[low]; ok {
		if loc, err := LoadLocation(zone); err == nil {
			return ZoneOffset(tm, loc), nil
		}
	}
	if loc, err := LoadLocation(name); err == nil {
		return ZoneOffset(tm, loc), nil
	}
	return 0, sqlstate.Errorf(sqlstate.CodeInvalidParameterValue, "time zone \"%s\" not recognized", name)
}

// decodeTimezone is DecodeTimezone: ±hh, ±hhmm, ±hh:mm, ±hh:mm:ss, as
// seconds east.
func decodeTimezone(s string) (int, int) {
	hr, i, over := strtoint(s, 1)
	if over {
		return 0, dtOverflow
	}
	var min, sec int32
	switch {
	case i < len(s) && s[i] == ':':
		if min, i, over = strtoint(s, i+1); over {
			return 0, dtOverflow
		}
		if i < len(s) && s[i] == ':' {
			if sec, i, over = strtoint(s, i+1); over {
				return 0, dtOverflow
			}
		}
	case i == len(s) && len(s) > 3:
		min, hr = hr%100, hr/100
	}
	if hr < 0 || hr > 15 || min < 0 || min >= 60 || sec < 0 || sec >= 60 {
		return 0, dtOverflow
	}
	off := int((hr*60+min)*60 + sec)
	if s[0] == '-' {
		off = -off
	}
	if i != len(s) {
		return 0, dtBad
	}
	return off, dtOK
}
