package sqltest

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// fakeConn answers from a table of canned results.
type fakeConn map[string][][]*string

func str(s string) *string { return &s }

func (f fakeConn) Exec(_ context.Context, sql string) error {
	if strings.Contains(sql, "fail") {
		return errors.New("ERROR: it failed (SQLSTATE 22012)")
	}
	return nil
}

func (f fakeConn) Query(ctx context.Context, sql string) ([][]*string, error) {
	if err := f.Exec(ctx, sql); err != nil {
		return nil, err
	}
	return f[sql], nil
}

const file = `# comment
statement ok
SET x = 1

statement error 22012
SELECT fail

query IT rowsort
SELECT rows
----
1
a
2
(empty)

query R
SELECT real
----
1.500

skipif fake
query I
SELECT skipped
----
9

query T
SELECT wrong
----
right

query IT
SELECT null
----
NULL
b

statement ok
SELECT fail
`

func TestRun(t *testing.T) {
	recs, err := Parse("f.slt", strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	conn := fakeConn{
		"SELECT rows":  {{str("2"), str("")}, {str("1"), str("a")}},
		"SELECT real":  {{str("1.5")}},
		"SELECT wrong": {{str("left")}},
		"SELECT null":  {{nil, str("b")}},
	}
	res := Run(context.Background(), conn, recs, "fake")
	if res.Passed != 5 || res.Skipped != 1 || len(res.Failures) != 2 {
		t.Fatalf("passed %d skipped %d failures %v", res.Passed, res.Skipped, res.Failures)
	}
	if f := res.Failures[0]; f.Line != 27 || !strings.Contains(f.Msg, "results differ") {
		t.Fatalf("first failure: %v", f)
	}
	if f := res.Failures[1]; f.Line != 38 || !strings.Contains(f.Msg, "unexpected error") {
		t.Fatalf("second failure: %v", f)
	}
}

func TestParseErrors(t *testing.T) {
	for _, bad := range []string{
		"frobnicate\nSELECT 1\n",
		"query X\nSELECT 1\n",
		"query I sideways\nSELECT 1\n",
		"statement maybe\nSELECT 1\n",
		"statement error (\nSELECT 1\n",
		"statement ok\n\n",
	} {
		if _, err := Parse("bad.slt", strings.NewReader(bad)); err == nil || !strings.HasPrefix(err.Error(), "bad.slt:") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
