package pgtypes

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cellardb/cellar/query/sqlstate"
)

// Style is what a session's settings say about writing and reading
// dates, times and intervals: DateStyle ("ISO, MDY", "Postgres, DMY",
// "SQL, MDY", "German, DMY"), TimeZone (a zone name, "" is UTC) and
// IntervalStyle (postgres, postgres_verbose, sql_standard, iso_8601).
// The zero Style is PostgreSQL's default output: ISO, MDY in UTC.
// StyleFrom also reads extra_float_digits, which floats' output follows.
type Style struct {
	DateStyle     string
	TimeZone      string
	IntervalStyle string
	// FloatDigits is 0 for PostgreSQL's default float output, the
	// shortest exact digits (extra_float_digits above 0); with
	// extra_float_digits at 0 or below it is 15 plus that setting, the
	// significant digits a float8 gets (a float4 gets 9 fewer).
	FloatDigits int
}

// DefaultStyle is ISO, MDY, UTC and postgres intervals.
var DefaultStyle = Style{DateStyle: "ISO, MDY", TimeZone: "UTC", IntervalStyle: "postgres"}

// StyleFrom reads a Style from session settings (a query.Session's or a
// pgeval.Env's Setting); missing settings keep their defaults.
func StyleFrom(setting func(name string) (string, bool)) Style {
	st := DefaultStyle
	if setting == nil {
		return st
	}
	if v, ok := setting("datestyle"); ok && v != "" {
		st.DateStyle = v
	}
	if v, ok := setting("timezone"); ok && v != "" {
		st.TimeZone = v
	}
	if v, ok := setting("intervalstyle"); ok && v != "" {
		st.IntervalStyle = v
	}
	if v, ok := setting("extra_float_digits"); ok && v != "" && v != "1" {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n <= 0 {
			st.FloatDigits = max(15+max(n, -15), 1)
		}
	}
	return st
}

// Date output styles and field orders.
const (
	dateISO = iota
	datePostgres
	dateSQL
	dateGerman
)

const (
	orderMDY = iota
	orderDMY
	orderYMD
)

// dateStyle splits a canonical DateStyle value.
func (s Style) dateStyle() (style, order int) {
	up := strings.ToUpper(s.DateStyle)
	switch {
	case strings.HasPrefix(up, "POSTGRES"):
		style = datePostgres
	case strings.HasPrefix(up, "SQL"):
		style = dateSQL
	case strings.HasPrefix(up, "GERMAN"):
		style = dateGerman
	}
	switch {
	case strings.Contains(up, "DMY"):
		order = orderDMY
	case strings.Contains(up, "YMD"):
		order = orderYMD
	}
	return
}

// CanonicalDateStyle applies a SET DateStyle value to the current one as
// PostgreSQL does ("Postgres" keeps the order, "German" alone means
// German, DMY, "DMY" keeps the style, "Euro"/"US" are orders) and returns
// the new value as SHOW prints it.
func CanonicalDateStyle(v, current string) (string, error) {
	cur := Style{DateStyle: current}
	style, order := cur.dateStyle()
	if current == "" {
		style, order = dateISO, orderMDY
	}
	newStyle, newOrder := -1, -1
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		switch strings.ToLower(f) {
		case "iso":
			newStyle = dateISO
		case "sql":
			newStyle = dateSQL
		case "postgres":
			newStyle = datePostgres
		case "german":
			newStyle = dateGerman
			if newOrder < 0 {
				order = orderDMY
			}
		case "ymd":
			newOrder = orderYMD
		case "dmy", "euro", "european":
			newOrder = orderDMY
		case "mdy", "us", "noneuro", "noneuropean":
			newOrder = orderMDY
		case "default":
			newStyle, newOrder = dateISO, orderMDY
		default:
			return "", fmt.Errorf("Unrecognized key word: \"%s\".", f)
		}
	}
	if newStyle >= 0 {
		style = newStyle
	}
	if newOrder >= 0 {
		order = newOrder
	}
	return []string{"ISO", "Postgres", "SQL", "German"}[style] + ", " + []string{"MDY", "DMY", "YMD"}[order], nil
}

var locCache sync.Map // string → *time.Location

// Location returns the session time zone; unknown names are UTC.
func (s Style) Location() *time.Location {
	loc, err := LoadLocation(s.TimeZone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// LoadLocation reads a TimeZone setting: a tz database name, UTC, or a
// POSIX-style offset as PostgreSQL takes them ("-7" is 7 hours west,
// shown as <-07>+07; "<-07>+07" itself).
func LoadLocation(name string) (*time.Location, error) {
	if name == "" || strings.EqualFold(name, "utc") || strings.EqualFold(name, "gmt") || name == "Z" {
		return time.UTC, nil
	}
	if l, ok := locCache.Load(name); ok {
		return l.(*time.Location), nil
	}
	loc, err := loadLocation(name)
	if err != nil {
		return nil, err
	}
	locCache.Store(name, loc)
	return loc, nil
}

func loadLocation(name string) (*time.Location, error) {
	if off, ok := parseOffsetHours(name); ok {
		return fixedZone(off), nil
	}
	if strings.HasPrefix(name, "<") {
		if i := strings.IndexByte(name, '>'); i > 0 {
			if off, ok := parseOffsetHours(name[i+1:]); ok {
				return fixedZone(-off), nil // POSIX offsets count west
			}
		}
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		// PostgreSQL matches zone names without regard to case.
		if real, ok := zoneNameFold()[strings.ToLower(name)]; ok && real != name {
			return time.LoadLocation(real)
		}
	}
	return loc, err
}

var (
	zoneNamesOnce sync.Once
	zoneNames     map[string]string // lower case → tz database name
)

func zoneNameFold() map[string]string {
	zoneNamesOnce.Do(func() {
		zoneNames = map[string]string{}
		for _, dir := range []string{os.Getenv("ZONEINFO"), "/usr/share/zoneinfo", "/usr/share/lib/zoneinfo", "/etc/zoneinfo"} {
			if dir == "" {
				continue
			}
			filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return nil
				}
				if rel, err := filepath.Rel(dir, path); err == nil && !strings.Contains(rel, ".") {
					if _, ok := zoneNames[strings.ToLower(rel)]; !ok {
						zoneNames[strings.ToLower(rel)] = rel
					}
				}
				return nil
			})
		}
	})
	return zoneNames
}

// canonicalZoneName spells a zone name as the tz database does.
func canonicalZoneName(name string) string {
	if _, err := time.LoadLocation(name); err == nil {
		return name
	}
	if real, ok := zoneNameFold()[strings.ToLower(name)]; ok {
		return real
	}
	return name
}

// parseOffsetHours reads "-7", "+5:30", "5.5" as seconds east of UTC.
func parseOffsetHours(s string) (int, bool) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, false
	}
	sign := 1
	switch t[0] {
	case '-':
		sign, t = -1, t[1:]
	case '+':
		t = t[1:]
	}
	if t == "" {
		return 0, false
	}
	if h, m, ok := strings.Cut(t, ":"); ok {
		hh, err1 := strconv.Atoi(h)
		mm, err2 := strconv.Atoi(m)
		if err1 != nil || err2 != nil {
			return 0, false
		}
		return sign * (hh*3600 + mm*60), true
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f > 24*7 {
		return 0, false
	}
	return sign * int(f*3600), true
}

// fixedZone names a fixed offset as PostgreSQL abbreviates it ("-07",
// "+05:30").
func fixedZone(secEast int) *time.Location {
	return time.FixedZone(formatOffset(secEast), secEast)
}

// CanonicalTimeZone checks a SET TimeZone value and returns it as SHOW
// prints it.
func CanonicalTimeZone(v string) (string, error) {
	t := strings.TrimSpace(v)
	if strings.EqualFold(t, "utc") || t == "Z" || t == "0" || t == "+00" || t == "00:00" {
		return "UTC", nil
	}
	if strings.EqualFold(t, "gmt") {
		return "GMT", nil
	}
	if off, ok := parseOffsetHours(t); ok {
		// PostgreSQL shows a numeric zone as a POSIX spec: <-07>+07.
		return "<" + formatOffset(off) + ">" + formatOffset(-off), nil
	}
	if _, err := LoadLocation(t); err != nil {
		return "", err
	}
	return canonicalZoneName(t), nil
}

// formatOffset writes seconds east of UTC as ISO output does: +05,
// -03:30, +05:21:10.
func formatOffset(sec int) string {
	sign := byte('+')
	if sec < 0 {
		sign, sec = '-', -sec
	}
	b := []byte{sign}
	b = fmt.Appendf(b, "%02d", sec/3600)
	if m, s := sec/60%60, sec%60; m != 0 || s != 0 {
		b = fmt.Appendf(b, ":%02d", m)
		if s != 0 {
			b = fmt.Appendf(b, ":%02d", s)
		}
	}
	return string(b)
}

// Infinite dates and timestamps are held as these sentinels, which
// compare after and before every other time.
var (
	TimeInfinity    = time.Date(294277, 1, 1, 0, 0, 0, 0, time.UTC)
	TimeNegInfinity = time.Date(-4714, 1, 1, 0, 0, 0, 0, time.UTC).Add(-24 * time.Hour)
)

// IsInfinite reports +1 or -1 for the infinity sentinels, 0 otherwise.
func IsInfinite(t time.Time) int {
	switch {
	case !t.Before(TimeInfinity):
		return 1
	case !t.After(TimeNegInfinity):
		return -1
	}
	return 0
}

var weekdays = [...]string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}
var months = [...]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// formatDateTime writes a date, timestamp or timestamptz in a style.
func formatDateTime(oid uint32, t time.Time, st Style) string {
	switch IsInfinite(t) {
	case 1:
		return "infinity"
	case -1:
		return "-infinity"
	}
	style, order := st.dateStyle()
	withZone := oid == OIDTimestamptz
	if withZone {
		t = t.In(st.Location())
	} else {
		t = t.UTC()
	}
	year, month, day := t.Date()
	bc := year <= 0
	if bc {
		year = 1 - year
	}
	var b strings.Builder
	date := func() {
		switch style {
		case dateISO:
			fmt.Fprintf(&b, "%04d-%02d-%02d", year, month, day)
		case dateSQL:
			if order == orderDMY {
				fmt.Fprintf(&b, "%02d/%02d/%04d", day, month, year)
			} else {
				fmt.Fprintf(&b, "%02d/%02d/%04d", month, day, year)
			}
		case dateGerman:
			fmt.Fprintf(&b, "%02d.%02d.%04d", day, month, year)
		default:
			if order == orderDMY {
				fmt.Fprintf(&b, "%02d-%02d-%04d", day, month, year)
			} else {
				fmt.Fprintf(&b, "%02d-%02d-%04d", month, day, year)
			}
		}
	}
	clock := func() {
		fmt.Fprintf(&b, "%02d:%02d:%02d", t.Hour(), t.Minute(), t.Second())
		if us := t.Nanosecond() / 1000; us != 0 {
			b.WriteString(strings.TrimRight(fmt.Sprintf(".%06d", us), "0"))
		}
	}
	zone := func() {
		name, off := t.Zone()
		if style == dateISO {
			b.WriteString(formatOffset(off))
			return
		}
		b.WriteByte(' ')
		if name == "" {
			name = formatOffset(off)
		}
		b.WriteString(name)
	}
	if oid == OIDDate {
		date()
	} else if style == datePostgres {
		b.WriteString(weekdays[t.Weekday()])
		if order == orderDMY {
			fmt.Fprintf(&b, " %02d %s ", day, months[month-1])
		} else {
			fmt.Fprintf(&b, " %s %02d ", months[month-1], day)
		}
		clock()
		fmt.Fprintf(&b, " %04d", year)
		if withZone {
			zone()
		}
	} else {
		date()
		b.WriteByte(' ')
		clock()
		if withZone {
			zone()
		}
	}
	if bc {
		b.WriteString(" BC")
	}
	return b.String()
}

// FormatXSD writes a date, timestamp or timestamptz as JSON output
// does (XML Schema's form): 2003-07-02T09:35:00+05:30, the zone being the
// session's.
func FormatXSD(oid uint32, t time.Time, st Style) string {
	switch IsInfinite(t) {
	case 1:
		return "infinity"
	case -1:
		return "-infinity"
	}
	if oid == OIDTimestamptz {
		t = t.In(st.Location())
	} else {
		t = t.UTC()
	}
	year, month, day := t.Date()
	bc := year <= 0
	if bc {
		year = 1 - year
	}
	out := fmt.Sprintf("%04d-%02d-%02d", year, month, day)
	if oid != OIDDate {
		out += "T" + FormatTime(time.Date(2000, 1, 1, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC))
		if oid == OIDTimestamptz {
			_, off := t.Zone()
			o := formatOffset(off)
			if len(o) == 3 {
				o += ":00"
			}
			out += o
		}
	}
	if bc {
		out += " BC"
	}
	return out
}

// FormatTime writes a time of day held as a time.Time (time without
// time zone).
func FormatTime(t time.Time) string {
	us := TimeOfDayMicros(t)
	s := fmt.Sprintf("%02d:%02d:%02d", us/USecsPerHour, us/USecsPerMinute%60, us/USecsPerSec%60)
	if frac := us % USecsPerSec; frac != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%06d", frac), "0")
	}
	return s
}

// TimeOfDayMicros is a time of day held as a time.Time on 2000-01-01 UTC
// (time without time zone) in µs since midnight; TimeFromMicros, whose
// epoch is that midnight, makes one back. 24:00:00, which
// PostgreSQL accepts as the end of the day, is midnight of 2000-01-02.
func TimeOfDayMicros(t time.Time) int64 {
	u := t.UTC()
	us := int64(u.Hour())*USecsPerHour + int64(u.Minute())*USecsPerMinute + int64(u.Second())*USecsPerSec + int64(u.Nanosecond()/1000)
	if us == 0 && u.Year() == 2000 && u.Month() == 1 && u.Day() == 2 {
		return USecsPerDay
	}
	return us
}

// Date/time input errors.
const (
	codeInvalidDatetimeFormat = "22007"
	codeDatetimeFieldOverflow = "22008"
)

// ParseDateTime reads a date, timestamp or timestamptz from text as
// PostgreSQL's input functions do, with DateStyle's field order for
// ambiguous dates and the session time zone for timestamptz without a
// zone. now is what 'now', 'today', 'tomorrow' and 'yesterday' mean (the
// zero time refuses them).
func ParseDateTime(oid uint32, s string, st Style, now time.Time) (time.Time, error) {
	t, err := parseDateTime(oid, s, st, now)
	if err != nil {
		if err == errOverflow || err == errOverflowHint {
			e := sqlstate.Errorf(codeDatetimeFieldOverflow, "date/time field value out of range: \"%s\"", s)
			if err == errOverflowHint {
				e.Hint = `Perhaps you need a different "datestyle" setting.`
			}
			return time.Time{}, e
		}
		if se, ok := err.(*sqlstate.Error); ok {
			return time.Time{}, se
		}
		if err == errTimestampRange {
			return time.Time{}, sqlstate.Errorf(codeDatetimeFieldOverflow, "timestamp out of range: \"%s\"", s)
		}
		name := TypeName(oid)
		if oid == OIDTimestamp {
			name = "timestamp" // as timestamp_in says it
		}
		return time.Time{}, sqlstate.Errorf(codeInvalidDatetimeFormat, "invalid input syntax for type %s: \"%s\"", name, s)
	}
	return t, nil
}

type dtError string

func (e dtError) Error() string { return string(e) }

const (
	errSyntax       = dtError("syntax")
	errOverflow     = dtError("overflow")
	errOverflowHint = dtError("overflow, datestyle")
	// errTimestampRange is a valid date and time outside timestamp's
	// range.
	errTimestampRange = dtError("timestamp out of range")
)

var monthNames = map[string]int{
	"jan": 1, "january": 1, "feb": 2, "february": 2, "mar": 3, "march": 3, "apr": 4, "april": 4,
	"may": 5, "jun": 6, "june": 6, "jul": 7, "july": 7, "aug": 8, "august": 8, "sep": 9, "sept": 9,
	"september": 9, "oct": 10, "october": 10, "nov": 11, "november": 11, "dec": 12, "december": 12,
}

var dayNames = map[string]bool{
	"sun": true, "sunday": true, "mon": true, "monday": true, "tue": true, "tues": true, "tuesday": true,
	"wed": true, "wednesday": true, "thu": true, "thur": true, "thurs": true, "thursday": true,
	"fri": true, "friday": true, "sat": true, "saturday": true,
}

// dtToken is one field of a date/time string.
type dtToken struct {
	kind byte // 'n' number, 'd' date with separators, 't' time, 'a' word, 'z' numeric zone
	text string
	sep  byte // a date's separator
}

func tokenizeDateTime(s string) ([]dtToken, error) {
	var out []dtToken
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == ',' || c == '\n':
			i++
		case isDigit(c):
			j := i
			for j < len(s) && (isDigit(s[j]) || s[j] == '.') {
				j++
			}
			if j < len(s) && s[j] == ':' {
				for j < len(s) && (isDigit(s[j]) || s[j] == ':' || s[j] == '.') {
					j++
				}
				out = append(out, dtToken{kind: 't', text: s[i:j]})
			} else if j < len(s) && (s[j] == '-' || s[j] == '/') || strings.Count(s[i:j], ".") >= 2 {
				sep := byte('.')
				if j < len(s) && (s[j] == '-' || s[j] == '/') {
					sep = s[j]
				}
				for j < len(s) {
					if isDigit(s[j]) || s[j] == sep {
						j++
						continue
					}
					// A month name may be a field (1997-Dec-17).
					k := j
					for k < len(s) && isLetter(s[k]) {
						k++
					}
					if k > j && monthNames[strings.ToLower(s[j:k])] != 0 && s[j-1] == sep {
						j = k
						continue
					}
					break
				}
				out = append(out, dtToken{kind: 'd', text: s[i:j], sep: sep})
			} else {
				out = append(out, dtToken{kind: 'n', text: s[i:j]})
			}
			i = j
		case c == '+' || c == '-':
			j := i + 1
			for j < len(s) && (isDigit(s[j]) || s[j] == ':') {
				j++
			}
			if j == i+1 {
				// "-infinity" or a lone sign.
				k := j
				for k < len(s) && isLetter(s[k]) {
					k++
				}
				if k == j {
					return nil, errSyntax
				}
				out = append(out, dtToken{kind: 'a', text: s[i:k]})
				i = k
				continue
			}
			out = append(out, dtToken{kind: 'z', text: s[i:j]})
			i = j
		case isLetter(c):
			j := i
			for j < len(s) && (isLetter(s[j]) || s[j] == '/' || s[j] == '_' || (j > i && s[j] == '-' && j+1 < len(s) && isLetter(s[j+1])) ||
				(strings.Contains(s[i:j], "/") && (isDigit(s[j]) || s[j] == '+' || s[j] == '-'))) {
				j++
			}
			if (s[i] == 'j' || s[i] == 'J') && j == i+1 {
				// A Julian day: J2451187.
				for j < len(s) && isDigit(s[j]) {
					j++
				}
			}
			w := s[i:j]
			// ISO 8601's T between date and time.
			if (w == "t" || w == "T") && j < len(s) && isDigit(s[j]) {
				i = j
				continue
			}
			if j < len(s) && s[j] == '-' && monthNames[strings.ToLower(w)] != 0 {
				// Dec-17-1997: a date with a month name.
				k := j
				for k < len(s) && (isDigit(s[k]) || s[k] == '-') {
					k++
				}
				out = append(out, dtToken{kind: 'd', text: s[i:k], sep: '-'})
				i = k
				continue
			}
			out = append(out, dtToken{kind: 'a', text: w})
			i = j
		case c == '.':
			return nil, errSyntax
		default:
			return nil, errSyntax
		}
	}
	return out, nil
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func parseDateTime(oid uint32, s string, st Style, now time.Time) (time.Time, error) {
	toks, err := tokenizeDateTime(s)
	if err != nil {
		return time.Time{}, err
	}
	if len(toks) == 0 {
		return time.Time{}, errSyntax
	}
	_, order := st.dateStyle()
	loc := st.Location()
	var (
		year, month, day     = -1, -1, -1
		yearDigits           int
		hour, min, sec, nsec int
		haveTime             bool
		ampm                 = 0 // 1 am, 2 pm
		bc                   bool
		zone                 *time.Location
		special              string
		nums                 []string // bare numbers, in order
	)
	setDate := func(y, m, d int, ydigits int) error {
		if year >= 0 || month >= 0 || day >= 0 {
			return errSyntax
		}
		year, month, day, yearDigits = y, m, d, ydigits
		return nil
	}
	atoi := func(x string) (int, error) {
		if x == "" || len(x) > 9 {
			return 0, errSyntax
		}
		n, err := strconv.Atoi(x)
		if err != nil {
			return 0, errSyntax
		}
		return n, nil
	}
	for ti, tk := range toks {
		switch tk.kind {
		case 'd':
			parts := strings.Split(tk.text, string(tk.sep))
			if len(parts) != 3 {
				return time.Time{}, errSyntax
			}
			// A month name among the parts.
			mi := -1
			for i, p := range parts {
				if m := monthNames[strings.ToLower(p)]; m != 0 {
					mi = i
				}
			}
			var a [3]int
			for i, p := range parts {
				if i == mi {
					continue
				}
				n, err := atoi(p)
				if err != nil {
					return time.Time{}, err
				}
				a[i] = n
			}
			switch {
			case mi >= 0:
				m := monthNames[strings.ToLower(parts[mi])]
				others := []int{}
				for i := range parts {
					if i != mi {
						others = append(others, i)
					}
				}
				y, d := others[1], others[0]
				if len(parts[others[0]]) > 2 {
					y, d = others[0], others[1]
				}
				err = setDate(a[y], m, a[d], len(parts[y]))
			case len(parts[0]) > 2:
				err = setDate(a[0], a[1], a[2], len(parts[0]))
			case order == orderYMD:
				err = setDate(a[0], a[1], a[2], len(parts[0]))
			case order == orderDMY:
				err = setDate(a[2], a[1], a[0], len(parts[2]))
			default:
				err = setDate(a[2], a[0], a[1], len(parts[2]))
			}
			if err != nil {
				return time.Time{}, err
			}
		case 't':
			if haveTime {
				return time.Time{}, errSyntax
			}
			haveTime = true
			parts := strings.Split(tk.text, ":")
			if len(parts) > 3 || len(parts) < 2 {
				return time.Time{}, errSyntax
			}
			if hour, err = atoi(parts[0]); err != nil {
				return time.Time{}, err
			}
			secPart := ""
			if len(parts) == 3 {
				secPart = parts[2]
			}
			mp := parts[1]
			if len(parts) == 2 {
				if m, f, ok := strings.Cut(parts[1], "."); ok {
					// HH:MM.frac is minutes and fraction? PostgreSQL reads MM:SS.frac.
					_ = m
					_ = f
					return time.Time{}, errSyntax
				}
			}
			if min, err = atoi(mp); err != nil {
				return time.Time{}, err
			}
			if secPart != "" {
				whole, frac, _ := strings.Cut(secPart, ".")
				if sec, err = atoi(whole); err != nil {
					return time.Time{}, err
				}
				if frac != "" {
					f, err := strconv.ParseFloat("0."+frac, 64)
					if err != nil {
						return time.Time{}, errSyntax
					}
					// Round to microseconds, as PostgreSQL does.
					nsec = int(f*1e6+0.5) * 1000
				}
			}
		case 'z':
			if !haveTime && year < 0 {
				return time.Time{}, errSyntax
			}
			off, ok := parseZoneOffset(tk.text)
			if !ok {
				return time.Time{}, errSyntax
			}
			zone = time.FixedZone("", off)
		case 'n':
			if strings.Contains(tk.text, ".") {
				return time.Time{}, errSyntax
			}
			if len(tk.text) == 8 && year < 0 && len(nums) == 0 && month < 0 {
				y, _ := atoi(tk.text[:4])
				m, _ := atoi(tk.text[4:6])
				d, _ := atoi(tk.text[6:])
				if err := setDate(y, m, d, 4); err != nil {
					return time.Time{}, err
				}
				continue
			}
			nums = append(nums, tk.text)
		case 'a':
			w := strings.ToLower(tk.text)
			switch {
			case w == "epoch" || w == "infinity" || w == "+infinity" || w == "-infinity" || w == "now" || w == "today" || w == "tomorrow" || w == "yesterday":
				if len(toks) != 1 && !(w == "today" || w == "tomorrow" || w == "yesterday") {
					return time.Time{}, errSyntax
				}
				special = w
			case w == "allballs":
				haveTime = true
			case monthNames[w] != 0:
				if month >= 0 {
					return time.Time{}, errSyntax
				}
				month = monthNames[w]
			case dayNames[w]:
			case w == "am" || w == "a.m.":
				ampm = 1
			case w == "pm" || w == "p.m.":
				ampm = 2
			case w == "bc":
				bc = true
			case w == "ad":
			case w == "at" || w == "on":
			case strings.HasPrefix(w, "j") && len(w) > 1 && isAllDigits(w[1:]):
				jd, err := atoi(w[1:])
				if err != nil {
					return time.Time{}, err
				}
				t := time.Date(-4713, 11, 24, 0, 0, 0, 0, time.UTC).AddDate(0, 0, jd)
				if err := setDate(t.Year(), int(t.Month()), t.Day(), 4); err != nil {
					return time.Time{}, err
				}
			default:
				if off, ok := zoneAbbrevs[w]; ok {
					zone = time.FixedZone(strings.ToUpper(w), off)
					continue
				}
				if name, ok := zoneAbbrevZones[w]; ok {
					if l, err := LoadLocation(name); err == nil {
						zone = l
						continue
					}
				}
				if ti > 0 {
					if l, err := LoadLocation(tk.text); err == nil && strings.ContainsAny(tk.text, "/") || err == nil && len(tk.text) > 3 {
						zone = l
						continue
					}
				}
				return time.Time{}, errSyntax
			}
		}
	}
	if special != "" {
		switch special {
		case "epoch":
			return time.Unix(0, 0).UTC(), nil
		case "infinity", "+infinity":
			return TimeInfinity, nil
		case "-infinity":
			return TimeNegInfinity, nil
		}
		if now.IsZero() {
			return time.Time{}, errSyntax
		}
		n := now.In(loc)
		if special == "now" {
			if oid == OIDTimestamp {
				return time.Date(n.Year(), n.Month(), n.Day(), n.Hour(), n.Minute(), n.Second(), n.Nanosecond(), time.UTC), nil
			}
			if oid == OIDDate {
				return time.Date(n.Year(), n.Month(), n.Day(), 0, 0, 0, 0, time.UTC), nil
			}
			return now.UTC(), nil
		}
		d := map[string]int{"today": 0, "tomorrow": 1, "yesterday": -1}[special]
		if oid == OIDTimestamptz {
			return time.Date(n.Year(), n.Month(), n.Day()+d, 0, 0, 0, 0, loc).UTC(), nil
		}
		return time.Date(n.Year(), n.Month(), n.Day()+d, 0, 0, 0, 0, time.UTC), nil
	}
	// Bare numbers: with a month name they are day and year; a year may
	// follow a time (Postgres style output).
	if len(nums) > 0 {
		if year >= 0 {
			return time.Time{}, errSyntax
		}
		switch {
		case month >= 0 && len(nums) == 2:
			a, _ := atoi(nums[0])
			b, _ := atoi(nums[1])
			if len(nums[0]) > 2 || order == orderYMD && len(nums[1]) <= 2 {
				year, day, yearDigits = a, b, len(nums[0])
			} else {
				day, year, yearDigits = a, b, len(nums[1])
			}
		default:
			return time.Time{}, errSyntax
		}
	}
	if year < 0 || month < 0 || day < 0 {
		return time.Time{}, errSyntax
	}
	if yearDigits <= 2 && !bc {
		if year < 70 {
			year += 2000
		} else if year < 100 {
			year += 1900
		}
	}
	if bc {
		if year <= 0 {
			return time.Time{}, errOverflow
		}
		year = 1 - year
	}
	if month < 1 || month > 12 {
		return time.Time{}, errOverflowHint
	}
	if day < 1 || day > daysIn(year, month) {
		if day > 31 || day < 1 {
			return time.Time{}, errOverflowHint
		}
		return time.Time{}, errOverflow
	}
	switch ampm {
	case 1:
		if hour > 12 || hour < 1 && false {
			return time.Time{}, errOverflow
		}
		if hour == 12 {
			hour = 0
		}
	case 2:
		if hour > 12 {
			return time.Time{}, errOverflow
		}
		if hour != 12 {
			hour += 12
		}
	}
	if hour < 0 || hour > 24 || min < 0 || min > 59 || sec < 0 || sec > 60 ||
		hour == 24 && (min != 0 || sec != 0 || nsec != 0) {
		return time.Time{}, errOverflow
	}
	if oid == OIDDate {
		return time.Date(year, time.Month(month), day, 0, 0, 0, 0, time.UTC), nil
	}
	if oid == OIDTimestamp || zone == nil && oid != OIDTimestamptz {
		t := time.Date(year, time.Month(month), day, hour, min, sec, nsec, time.UTC)
		if !ValidTimestamp(TimestampMicros(t)) {
			return time.Time{}, errTimestampRange
		}
		return t, nil
	}
	if zone == nil {
		zone = loc
	}
	t := LocalTime(year, time.Month(month), day, hour, min, sec, nsec, zone).UTC()
	if !ValidTimestamp(TimestampMicros(t)) {
		return time.Time{}, errTimestampRange
	}
	return t, nil
}

func isAllDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

// parseZoneOffset reads +HH, +HHMM, +HH:MM, +HH:MM:SS as seconds east.
func parseZoneOffset(s string) (int, bool) {
	sign := 1
	if s[0] == '-' {
		sign = -1
	}
	t := s[1:]
	var h, m, sec int
	var err error
	switch {
	case strings.Contains(t, ":"):
		p := strings.Split(t, ":")
		if len(p) > 3 {
			return 0, false
		}
		vals := make([]int, 3)
		for i, x := range p {
			if vals[i], err = strconv.Atoi(x); err != nil {
				return 0, false
			}
		}
		h, m, sec = vals[0], vals[1], vals[2]
	case len(t) <= 2:
		if h, err = strconv.Atoi(t); err != nil {
			return 0, false
		}
	case len(t) == 4:
		h, _ = strconv.Atoi(t[:2])
		m, _ = strconv.Atoi(t[2:])
	case len(t) == 6:
		h, _ = strconv.Atoi(t[:2])
		m, _ = strconv.Atoi(t[2:4])
		sec, _ = strconv.Atoi(t[4:])
	default:
		return 0, false
	}
	if h > 15 || m > 59 || sec > 59 {
		return 0, false
	}
	return sign * (h*3600 + m*60 + sec), true
}

func daysIn(year, month int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
