package query

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/kv/model"
)

// TestKeyRanges prints the row ranges a WHERE clause over a table keyed
// by _key (raw text) becomes, and whether each conjunct is exact (applied
// by the ranges alone, so a LIMIT may reach the scan).
func TestKeyRanges(t *testing.T) {
	datadriven.RunTest(t, "testdata/keyranges", func(t *testing.T, d *datadriven.TestData) string {
		tree, err := pg.Parse("SELECT * FROM t WHERE " + d.Input)
		if err != nil {
			return fmt.Sprintf("parse: %v\n", err)
		}
		where := tree.Stmts[0].Stmt.GetSelectStmt().WhereClause
		var conj []*pg.Node
		if b := where.GetBoolExpr(); b != nil && b.Boolop == pg.BoolExprType_AND_EXPR {
			conj = b.Args
		} else {
			conj = []*pg.Node{where}
		}
		a := &keyAnalyzer{column: "_key", raw: true, prefixOnly: d.HasArg("prefix"), term: func(n *pg.Node) ([]byte, bool, bool, error) {
			c := n.GetAConst()
			switch {
			case c == nil:
				return nil, false, false, nil
			case c.Isnull:
				return nil, true, true, nil
			case c.GetSval() != nil:
				return []byte(c.GetSval().Sval), false, true, nil
			}
			return nil, false, false, nil
		}}
		rs, err := a.ranges(conj)
		if err != nil {
			return fmt.Sprintf("error: %v\n", err)
		}
		var b strings.Builder
		if len(rs) == 0 {
			b.WriteString("no rows\n")
		}
		for _, r := range rs {
			fmt.Fprintln(&b, r.String())
		}
		var exact []string
		for _, n := range conj {
			exact = append(exact, fmt.Sprint(exactKeyPredicate(n, "_key", true)))
		}
		fmt.Fprintf(&b, "exact: %s\n", strings.Join(exact, " "))
		return b.String()
	})
}

func TestPrefixEnd(t *testing.T) {
	for _, c := range []struct{ in, want string }{{"ab", "ac"}, {"a\xff", "b"}, {"\xff\xff", ""}, {"", ""}} {
		got := prefixEnd([]byte(c.in))
		if string(got) != c.want || (c.want == "" && got != nil) {
			t.Errorf("prefixEnd(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if _, ok := pointRange(model.RowRange{Start: []byte("a"), End: []byte("a\x00")}); !ok {
		t.Error("a point range is not seen as one")
	}
}

// TestKeyEquality: the lone equality a prepared point lookup plans once
// is found either way round and nothing else is taken for one, and its
// range holds exactly the one row, however its start is appended to.
func TestKeyEquality(t *testing.T) {
	for where, want := range map[string]string{
		"_key = $1":           "$1",
		"$1 = _key":           "$1",
		"t._key = 'a'":        "a",
		"_key = _key":         "",
		"_key >= $1":          "",
		"_key IN ($1, $2)":    "",
		"v = $1":              "",
		"_key = $1 AND v = 1": "",
	} {
		tree, err := pg.Parse("SELECT * FROM t WHERE " + where)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if n := keyEquality(tree.Stmts[0].Stmt.GetSelectStmt().WhereClause, "_key"); n != nil {
			if p := n.GetParamRef(); p != nil {
				got = fmt.Sprintf("$%d", p.Number)
			} else {
				got = n.GetAConst().GetSval().GetSval()
			}
		}
		if got != want {
			t.Errorf("%s: got %q, want %q", where, got, want)
		}
	}
	r := oneRow([]byte("k1"))
	if key, ok := pointRange(r); !ok || string(key) != "k1" {
		t.Fatalf("oneRow(k1) = %v, not the one row k1", r)
	}
	_ = append(r.Start, 'x')
	if string(r.End) != "k1\x00" {
		t.Fatalf("appending to the start changed the end: %q", r.End)
	}
}
