package query

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// A setting is a run-time parameter a session can SHOW, and SET unless it
// is read-only. Reported ones are sent to the client as ParameterStatus
// at start and whenever they change, as PostgreSQL does for the same
// names.
type setting struct {
	name     string // as PostgreSQL spells it
	value    string
	report   bool
	readOnly bool
	check    func(string) (string, *sqlstate.Error) // canonicalizes a new value
	desc     string
}

// ServerVersion is what cellar reports as server_version: drivers parse
// it as PostgreSQL 15.
const ServerVersion = "15.4"

func defaultSettings(user string, superuser bool) []setting {
	onOff := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	return []setting{
		{name: "server_version", value: ServerVersion, report: true, readOnly: true, desc: "Shows the server version."},
		{name: "server_version_num", value: "150004", readOnly: true, desc: "Shows the server version as an integer."},
		{name: "server_encoding", value: "UTF8", report: true, readOnly: true, desc: "Shows the server (database) character set encoding."},
		{name: "client_encoding", value: "UTF8", report: true, check: checkEncoding, desc: "Sets the client's character set encoding."},
		{name: "DateStyle", value: "ISO, MDY", report: true, desc: "Sets the display format for date and time values."},
		{name: "TimeZone", value: "UTC", report: true, check: checkTimeZone, desc: "Sets the time zone for displaying and interpreting time stamps."},
		{name: "integer_datetimes", value: "on", report: true, readOnly: true, desc: "Shows whether datetimes are integer based."},
		{name: "standard_conforming_strings", value: "on", report: true, check: onlyValue("on"), desc: "Causes '...' strings to treat backslashes literally."},
		{name: "IntervalStyle", value: "postgres", report: true, check: checkIntervalStyle, desc: "Sets the display format for interval values."},
		{name: "application_name", value: "", report: true, desc: "Sets the application name to be reported in statistics and logs."},
		{name: "is_superuser", value: onOff(superuser), report: true, readOnly: true, desc: "Shows whether the current user is a superuser."},
		{name: "session_authorization", value: user, report: true, readOnly: true, desc: "Sets the session user name."},
		{name: "default_transaction_read_only", value: "off", report: true, check: checkBool, desc: "Sets the default read-only status of new transactions."},
		{name: "in_hot_standby", value: "off", report: true, readOnly: true, desc: "Shows whether hot standby is currently active."},
		{name: "search_path", value: `"$user", public`, desc: "Sets the schema search order for names that are not schema-qualified."},
		{name: "statement_timeout", value: "0", check: checkDuration, desc: "Sets the maximum allowed duration of any statement."},
		{name: "idle_session_timeout", value: "0", check: checkDuration, desc: "Sets the maximum allowed idle time between queries, when not in a transaction."},
		{name: "idle_in_transaction_session_timeout", value: "0", check: checkDuration, desc: "Sets the maximum allowed idle time between queries, when in a transaction."},
		{name: "lock_timeout", value: "0", check: checkDuration, desc: "Sets the maximum allowed duration of any wait for a lock."},
		{name: "extra_float_digits", value: "1", check: checkInt, desc: "Sets the number of digits displayed for floating-point values."},
		{name: "bytea_output", value: "hex", check: onlyValue("hex"), desc: "Sets the output format for bytea."},
		{name: "default_transaction_isolation", value: "read committed", desc: "Sets the transaction isolation level of each new transaction."},
		{name: "transaction_isolation", value: "read committed", desc: "Sets the current transaction's isolation level."},
		{name: "transaction_read_only", value: "off", check: checkBool, desc: "Sets the current transaction's read-only status."},
		{name: "max_identifier_length", value: "63", readOnly: true, desc: "Shows the maximum identifier length."},
		{name: "client_min_messages", value: "notice", desc: "Sets the message levels that are sent to the client."},
		{name: "timezone_abbreviations", value: "Default", desc: "Selects a file of time zone abbreviations."},
		{name: "max_index_keys", value: "32", readOnly: true, desc: "Shows the maximum number of index keys."},
	}
}

func onlyValue(want string) func(string) (string, *sqlstate.Error) {
	return func(v string) (string, *sqlstate.Error) {
		if !strings.EqualFold(v, want) {
			return "", sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "cellar supports only %q here, not %q", want, v)
		}
		return want, nil
	}
}

// checkEncoding compares names as PostgreSQL's clean_encoding_name does,
// on their letters and digits only: asyncpg's startup packet sends
// client_encoding as "'utf-8'", quotes included.
func checkEncoding(v string) (string, *sqlstate.Error) {
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return -1
	}, v)
	switch clean {
	case "utf8", "unicode":
		return "UTF8", nil
	}
	return "", sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "cellar speaks only UTF8, not client_encoding %q", v)
}

// checkDateStyle applies a DateStyle value to the current one: a style
// alone keeps the order and an order alone keeps the style, as in
// PostgreSQL.
func checkDateStyle(v, current string) (string, *sqlstate.Error) {
	out, err := pgtypes.CanonicalDateStyle(v, current)
	if err != nil {
		e := sqlstate.Errorf(sqlstate.CodeInvalidParameterValue, "invalid value for parameter \"DateStyle\": %q", v)
		e.Detail = err.Error()
		return "", e
	}
	return out, nil
}

func checkIntervalStyle(v string) (string, *sqlstate.Error) {
	switch l := strings.ToLower(strings.TrimSpace(v)); l {
	case "postgres", "postgres_verbose", "sql_standard", "iso_8601":
		return l, nil
	}
	e := sqlstate.Errorf(sqlstate.CodeInvalidParameterValue, "invalid value for parameter \"IntervalStyle\": %q", v)
	e.Hint = "Available values: postgres, postgres_verbose, sql_standard, iso_8601."
	return "", e
}

func checkTimeZone(v string) (string, *sqlstate.Error) {
	out, err := pgtypes.CanonicalTimeZone(v)
	if err != nil {
		return "", sqlstate.Errorf(sqlstate.CodeInvalidParameterValue, "invalid value for parameter \"TimeZone\": %q", v)
	}
	return out, nil
}

func checkBool(v string) (string, *sqlstate.Error) {
	b, err := pgtypes.ParseText(pgtypes.OIDBool, v)
	if err != nil {
		return "", sqlstate.Errorf(sqlstate.CodeInvalidParameterValue, "parameter requires a Boolean value, not %q", v)
	}
	if b.(bool) {
		return "on", nil
	}
	return "off", nil
}

func checkInt(v string) (string, *sqlstate.Error) {
	if _, err := strconv.Atoi(strings.TrimSpace(v)); err != nil {
		return "", sqlstate.Errorf(sqlstate.CodeInvalidParameterValue, "invalid value %q: an integer is required", v)
	}
	return strings.TrimSpace(v), nil
}

// checkDuration accepts milliseconds or a number with a unit, as
// PostgreSQL's time settings do, and keeps PostgreSQL's spelling.
func checkDuration(v string) (string, *sqlstate.Error) {
	if _, err := ParseDuration(v); err != nil {
		return "", sqlstate.Errorf(sqlstate.CodeInvalidParameterValue, "invalid value for a time setting: %q", v)
	}
	return strings.TrimSpace(v), nil
}

// ParseDuration reads a time setting: a bare number is milliseconds.
func ParseDuration(v string) (time.Duration, error) {
	t := strings.TrimSpace(strings.Trim(v, "'"))
	units := []struct {
		suffix string
		unit   time.Duration
	}{{"ms", time.Millisecond}, {"us", time.Microsecond}, {"min", time.Minute}, {"s", time.Second}, {"h", time.Hour}, {"d", 24 * time.Hour}}
	unit := time.Millisecond
	for _, u := range units {
		if n, ok := strings.CutSuffix(t, u.suffix); ok {
			t, unit = strings.TrimSpace(n), u.unit
			break
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || n < 0 {
		return 0, strconv.ErrSyntax
	}
	return time.Duration(n * float64(unit)), nil
}

// settings holds a session's settings, by lower-case name.
type settings struct {
	byName map[string]*setting
	// reported are the names of the reported settings, sorted: every
	// statement's ReportChanges walks them (the set never changes).
	reported []string
	// reportedSet are those settings, in the same order (set by bind).
	reportedSet []*setting
	// bound are the settings of boundNames (set by bind): every
	// statement asks for them.
	bound [len(boundNames)]*setting
}

// boundNames are the settings every statement reads, which Setting finds
// without a map lookup: the four a pgtypes.Style is made of, and the
// statement_timeout pgwire arms.
var boundNames = [...]string{"datestyle", "timezone", "intervalstyle", "extra_float_digits", "statement_timeout"}

// boundSetting finds a setting of boundNames without the map: ok is
// false if name is not one of them.
func (s *settings) boundSetting(name string) (st *setting, ok bool) {
	for i, k := range boundNames {
		if k == name {
			return s.bound[i], true
		}
	}
	return nil, false
}

func newSettings(user string, superuser bool) settings {
	s := settings{byName: map[string]*setting{}}
	for _, d := range defaultSettings(user, superuser) {
		d := d
		s.byName[strings.ToLower(d.name)] = &d
		if d.report {
			s.reported = append(s.reported, strings.ToLower(d.name))
		}
	}
	sort.Strings(s.reported)
	s.bind()
	return s
}

func (s settings) clone() settings {
	c := settings{byName: make(map[string]*setting, len(s.byName)), reported: s.reported}
	for k, v := range s.byName {
		cp := *v
		c.byName[k] = &cp
	}
	c.bind()
	return c
}

// bind gives the checks that depend on a setting's current value (a
// DateStyle part keeps the other part) that setting.
func (s *settings) bind() {
	s.reportedSet = s.reportedSet[:0]
	for _, k := range s.reported {
		s.reportedSet = append(s.reportedSet, s.byName[k])
	}
	for i, k := range boundNames {
		s.bound[i] = s.byName[k]
	}
	if ds := s.byName["datestyle"]; ds != nil {
		ds.check = func(v string) (string, *sqlstate.Error) { return checkDateStyle(v, ds.value) }
	}
}

func (s settings) names() []string {
	out := make([]string, 0, len(s.byName))
	for k := range s.byName {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
