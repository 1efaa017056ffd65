package query

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/cellardb/cellar/query/pgtypes"
)

// TestSessionDataDriven runs simple-query scripts:
//
//	exec
//	SQL
//	----
//	columns, rows (text format), tags, notices, errors, and the
//	transaction status after the message
//
//	prepare params=OID,OID
//	SQL
//	----
//	parameter types and columns
func TestSessionDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if filepath.Base(path) == "keyranges" {
			return // TestKeyRanges
		}
		s, err := NewSession(SessionOptions{User: "cellar", Database: "cellar", BackendPID: 42, Seed: 1,
			Clock: func() time.Time { return time.Date(2026, 11, 22, 8, 0, 0, 123456000, time.UTC) }})
		if err != nil {
			t.Fatal(err)
		}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			var b strings.Builder
			switch d.Cmd {
			case "exec":
				stmts, err := s.Parse(d.Input)
				if err != nil {
					fmt.Fprintf(&b, "error: %v\n", err)
					break
				}
				if len(stmts) == 0 {
					b.WriteString("empty query\n")
				}
				for _, st := range stmts {
					res, err := s.Execute(context.Background(), st, nil)
					if err != nil {
						fmt.Fprintf(&b, "error: %v\n", err)
						break
					}
					writeResult(&b, res)
				}
			case "prepare":
				var oids []uint32
				for _, a := range d.CmdArgs {
					if a.Key == "params" {
						for _, v := range a.Vals {
							var o uint32
							fmt.Sscan(v, &o)
							oids = append(oids, o)
						}
					}
				}
				st, err := s.Prepare(context.Background(), d.Input, oids)
				if err != nil {
					fmt.Fprintf(&b, "error: %v\n", err)
					break
				}
				if st == nil {
					b.WriteString("empty query\n")
					break
				}
				fmt.Fprintf(&b, "params: %v\n", st.Params)
				for _, c := range st.Columns {
					fmt.Fprintf(&b, "column %s %s\n", c.Name, pgtypes.TypeName(c.OID))
				}
			default:
				t.Fatalf("unknown command %s", d.Cmd)
			}
			fmt.Fprintf(&b, "status %c\n", s.TxStatus())
			return b.String()
		})
	})
}

func writeResult(b *strings.Builder, res *Result) {
	for _, n := range res.Notices {
		fmt.Fprintf(b, "%s: %v\n", strings.ToLower(n.Severity), n)
	}
	if res.Columns != nil {
		var names []string
		for _, c := range res.Columns {
			names = append(names, c.Name+" "+pgtypes.TypeName(c.OID))
		}
		fmt.Fprintf(b, "columns: %s\n", strings.Join(names, ", "))
		for _, r := range res.Rows {
			var vals []string
			for i, v := range r {
				if v == nil {
					vals = append(vals, "NULL")
				} else {
					vals = append(vals, pgtypes.FormatText(res.Columns[i].OID, v))
				}
			}
			fmt.Fprintf(b, "row: %s\n", strings.Join(vals, " | "))
		}
	}
	fmt.Fprintf(b, "tag: %s\n", res.Tag)
}

// TestStyleFollowsSettings: Style, which reads its settings through
// pointers bound when the settings are made or copied, agrees with
// StyleFrom over Setting through every way the settings change.
func TestStyleFollowsSettings(t *testing.T) {
	s, err := NewSession(SessionOptions{User: "cellar", Database: "cellar"})
	if err != nil {
		t.Fatal(err)
	}
	steps := []string{
		"SET DateStyle = 'German'",
		"SET TimeZone = 'Europe/Berlin'",
		"BEGIN",
		"SET LOCAL IntervalStyle = 'iso_8601'",
		"SAVEPOINT a",
		"SET extra_float_digits = 0",
		"SET DateStyle = 'SQL, DMY'",
		"ROLLBACK TO SAVEPOINT a",
		"SET IntervalStyle = 'sql_standard'",
		"ROLLBACK",
		"BEGIN",
		"SET TimeZone = 'Asia/Seoul'",
		"COMMIT",
		"RESET DateStyle",
		"SET extra_float_digits = -3",
		"RESET ALL",
		"SET TimeZone TO DEFAULT",
	}
	for _, q := range steps {
		stmts, err := s.Parse(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		for _, st := range stmts {
			if _, err := s.Execute(context.Background(), st, nil); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if got, want := s.Style(), pgtypes.StyleFrom(s.Setting); got != want {
			t.Fatalf("after %s: Style() = %+v, StyleFrom(Setting) = %+v", q, got, want)
		}
	}
}
