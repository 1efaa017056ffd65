// Package sqltest runs SQL regression files in the sqllogictest format
// against any PostgreSQL-protocol endpoint (cellar's gateway, or
// PostgreSQL itself), and reports each difference. `cellar sqltest FILE…`
// is its command; users keep their own regression tests this way.
//
// The format (sqllogictest's, as SQLite and CockroachDB use it):
//
//	# a comment
//	statement ok
//	SET application_name = 'x'
//
//	statement error division by zero      (a regular expression)
//	SELECT 1/0
//
//	query IT rowsort                        (I integer, R real, T text;
//	SELECT 1, 'a'                            nosort, rowsort, valuesort)
//	----
//	1
//	a
//
//	hash-threshold 8                        (longer results compare as
//	                                         "N values hashing to MD5")
//	skipif postgresql / onlyif cellar       (the next record only for ...)
//	halt                                    (stop the file here)
//
// Results are one value per line; NULL is "NULL" and an empty string is
// "(empty)". R values are written with three decimals. A record ends at a
// blank line.
package sqltest

import (
	"bufio"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Record is one statement or query of a file.
type Record struct {
	File string
	Line int
	// Query is set for a query record, which returns rows.
	Query bool
	SQL   string
	// ErrorRE, if set, is the error the statement must fail with (a
	// regular expression matched against the message and the SQLSTATE).
	ErrorRE string
	// WantError: the statement must fail (with ErrorRE, if set).
	WantError bool
	Types     string
	Sort      string
	Expected  []string
	// HashThreshold in force for this record (0: never hash).
	HashThreshold int
	// SkipIf and OnlyIf name endpoints (cellar, postgresql).
	SkipIf, OnlyIf []string
}

// Parse reads a file of records.
func Parse(name string, r io.Reader) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var out []Record
	line := 0
	threshold := 0
	var skipIf, onlyIf []string
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		line++
		return sc.Text(), true
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, args...))
	}
	for {
		text, ok := next()
		if !ok {
			break
		}
		t := strings.TrimSpace(text)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		fields := strings.Fields(t)
		switch fields[0] {
		case "halt":
			return out, sc.Err()
		case "hash-threshold":
			if len(fields) != 2 {
				return nil, bad("hash-threshold needs a number")
			}
			n, err := strconv.Atoi(fields[1])
			if err != nil {
				return nil, bad("hash-threshold %q: %v", fields[1], err)
			}
			threshold = n
			continue
		case "skipif", "onlyif":
			if len(fields) != 2 {
				return nil, bad("%s needs an endpoint name", fields[0])
			}
			if fields[0] == "skipif" {
				skipIf = append(skipIf, fields[1])
			} else {
				onlyIf = append(onlyIf, fields[1])
			}
			continue
		case "statement", "query":
		default:
			return nil, bad("unknown record %q", fields[0])
		}
		rec := Record{File: name, Line: line, Query: fields[0] == "query", HashThreshold: threshold, SkipIf: skipIf, OnlyIf: onlyIf}
		skipIf, onlyIf = nil, nil
		if rec.Query {
			if len(fields) < 2 {
				return nil, bad("query needs its column types (I, R, T)")
			}
			if fields[1] == "error" {
				rec.WantError, rec.ErrorRE = true, strings.TrimSpace(strings.TrimPrefix(t, "query error"))
			} else {
				rec.Types, rec.Sort = fields[1], "nosort"
				if len(fields) > 2 {
					rec.Sort = fields[2]
				}
				if strings.Trim(rec.Types, "IRT") != "" {
					return nil, bad("column types %q: use I, R and T", rec.Types)
				}
				switch rec.Sort {
				case "nosort", "rowsort", "valuesort":
				default:
					return nil, bad("unknown sort mode %q", rec.Sort)
				}
			}
		} else {
			switch {
			case len(fields) >= 2 && fields[1] == "ok":
			case len(fields) >= 2 && fields[1] == "error":
				rec.WantError, rec.ErrorRE = true, strings.TrimSpace(strings.TrimPrefix(t, "statement error"))
			default:
				return nil, bad("statement needs ok or error")
			}
		}
		if rec.ErrorRE != "" {
			if _, err := regexp.Compile(rec.ErrorRE); err != nil {
				return nil, bad("error pattern: %v", err)
			}
		}
		var sql []string
		inResult := false
		for {
			l, ok := next()
			if !ok || strings.TrimSpace(l) == "" {
				break
			}
			if rec.Query && !rec.WantError && l == "----" {
				inResult = true
				continue
			}
			if inResult {
				rec.Expected = append(rec.Expected, l)
			} else {
				sql = append(sql, l)
			}
		}
		rec.SQL = strings.Join(sql, "\n")
		if rec.SQL == "" {
			return nil, bad("the record has no SQL")
		}
		out = append(out, rec)
	}
	return out, sc.Err()
}

// Conn is what the runner needs of a connection.
type Conn interface {
	// Exec runs a statement.
	Exec(ctx context.Context, sql string) error
	// Query runs a query and returns its rows as text, nil for NULL.
	Query(ctx context.Context, sql string) ([][]*string, error)
}

// Failure is one difference.
type Failure struct {
	File string
	Line int
	SQL  string
	Msg  string
}

func (f Failure) String() string {
	return fmt.Sprintf("%s:%d: %s\n    %s", f.File, f.Line, f.Msg, strings.ReplaceAll(f.SQL, "\n", "\n    "))
}

// Result sums up a run.
type Result struct {
	Passed, Skipped int
	Failures        []Failure
}

// Run runs the records on conn, as the endpoint named endpoint (for skipif
// and onlyif).
func Run(ctx context.Context, conn Conn, recs []Record, endpoint string) Result {
	var res Result
	for _, rec := range recs {
		if contains(rec.SkipIf, endpoint) || (len(rec.OnlyIf) > 0 && !contains(rec.OnlyIf, endpoint)) {
			res.Skipped++
			continue
		}
		if msg := runRecord(ctx, conn, rec); msg != "" {
			res.Failures = append(res.Failures, Failure{File: rec.File, Line: rec.Line, SQL: rec.SQL, Msg: msg})
		} else {
			res.Passed++
		}
	}
	return res
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// runRecord runs one record and returns what differs ("" if nothing).
func runRecord(ctx context.Context, conn Conn, rec Record) string {
	var rows [][]*string
	var err error
	if rec.Query {
		rows, err = conn.Query(ctx, rec.SQL)
	} else {
		err = conn.Exec(ctx, rec.SQL)
	}
	if rec.WantError {
		if err == nil {
			return "expected an error, but it succeeded"
		}
		if rec.ErrorRE != "" && !regexp.MustCompile(rec.ErrorRE).MatchString(err.Error()) {
			return fmt.Sprintf("expected an error matching %q, got: %v", rec.ErrorRE, err)
		}
		return ""
	}
	if err != nil {
		return fmt.Sprintf("unexpected error: %v", err)
	}
	if !rec.Query {
		return ""
	}
	got, err := format(rows, rec.Types, rec.Sort)
	if err != nil {
		return err.Error()
	}
	if rec.HashThreshold > 0 && len(got) > rec.HashThreshold {
		got = []string{hashValues(got)}
	}
	if strings.Join(got, "\n") != strings.Join(rec.Expected, "\n") {
		return fmt.Sprintf("results differ:\n  expected:\n    %s\n  got:\n    %s",
			strings.Join(rec.Expected, "\n    "), strings.Join(got, "\n    "))
	}
	return ""
}

// format writes rows as the file's expected lines: one value per line.
func format(rows [][]*string, types, mode string) ([]string, error) {
	formatted := make([][]string, len(rows))
	for i, row := range rows {
		if len(row) != len(types) {
			return nil, fmt.Errorf("the query returned %d columns, the record declares %d (%s)", len(row), len(types), types)
		}
		for j, v := range row {
			formatted[i] = append(formatted[i], formatValue(v, types[j]))
		}
	}
	switch mode {
	case "rowsort":
		sort.Slice(formatted, func(i, j int) bool {
			return strings.Join(formatted[i], "\x00") < strings.Join(formatted[j], "\x00")
		})
	}
	var out []string
	for _, row := range formatted {
		out = append(out, row...)
	}
	if mode == "valuesort" {
		sort.Strings(out)
	}
	return out, nil
}

func formatValue(v *string, typ byte) string {
	switch {
	case v == nil:
		return "NULL"
	case *v == "":
		return "(empty)"
	case typ == 'R':
		if f, err := strconv.ParseFloat(*v, 64); err == nil {
			return strconv.FormatFloat(f, 'f', 3, 64)
		}
	case typ == 'I':
		if _, err := strconv.ParseInt(*v, 10, 64); err == nil {
			return *v
		}
		if f, err := strconv.ParseFloat(*v, 64); err == nil {
			return strconv.FormatInt(int64(f), 10)
		}
	}
	return *v
}

func hashValues(values []string) string {
	h := md5.New()
	for _, v := range values {
		io.WriteString(h, v)
		io.WriteString(h, "\n")
	}
	return fmt.Sprintf("%d values hashing to %s", len(values), hex.EncodeToString(h.Sum(nil)))
}
