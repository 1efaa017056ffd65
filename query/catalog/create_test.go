package catalog

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver"

	"github.com/cellardb/cellar/query/pglex"
	"github.com/cellardb/cellar/query/sqlstate"
)

// TestCreate reads CREATE TABLE statements as clients write them, through
// the front end and the TiDB grammar, and prints the table SQL sees and
// the storage schema.
func TestCreate(t *testing.T) {
	datadriven.RunTest(t, "testdata/create", func(t *testing.T, d *datadriven.TestData) string {
		r, err := pglex.Rewrite(d.Input)
		if err != nil {
			return fmt.Sprintf("front end: %v\n", err)
		}
		p := parser.New()
		p.SetSQLMode(mysql.ModeANSIQuotes | mysql.ModePipesAsConcat | mysql.ModeNoBackslashEscapes)
		stmt, err := p.ParseOneStmt(r.SQL, "", "")
		if err != nil {
			return fmt.Sprintf("parse: %v\n", err)
		}
		c, err := FromCreate(stmt.(*ast.CreateTableStmt), r.Options)
		if err != nil {
			e := err.(*sqlstate.Error)
			return fmt.Sprintf("error %s: %s\n", e.Code, e.Message)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "table %s plain=%v rawkey=%v\n", c.Table.Name, c.Table.Plain, c.Table.RawKey())
		for _, col := range c.Table.Columns {
			fmt.Fprintf(&b, "column %q %s", col.Name, col.TypeName())
			if col.Key {
				b.WriteString(" key")
			}
			if col.Family != "" {
				fmt.Fprintf(&b, " in %s:%s", col.Family, col.Qualifier)
			}
			b.WriteString("\n")
		}
		for _, f := range c.Table.Families {
			fmt.Fprintf(&b, "family %s of %s open=%v\n", f.Name, f.DefaultType, f.Open)
		}
		s := c.Schema
		s.Meta = nil
		js, _ := json.Marshal(s)
		fmt.Fprintf(&b, "schema %s\n", js)
		if len(c.Splits) > 0 {
			fmt.Fprintf(&b, "splits %q\n", c.Splits)
		}
		back, err := FromSchema(c.Table.Name, c.Schema)
		if err != nil || fmt.Sprint(back) != fmt.Sprint(c.Table) {
			t.Fatalf("the definition did not survive the schema: %v %+v", err, back)
		}
		return b.String()
	})
}

// TestCreateStatementSplits: SHOW CREATE TABLE writes a table's split
// keys as its splits option, which reads them back the same, and says in
// a comment when one cannot be written there.
func TestCreateStatementSplits(t *testing.T) {
	create := func(sql string) *Created {
		t.Helper()
		r, err := pglex.Rewrite(sql)
		if err != nil {
			t.Fatal(err)
		}
		p := parser.New()
		p.SetSQLMode(mysql.ModeANSIQuotes | mysql.ModePipesAsConcat | mysql.ModeNoBackslashEscapes)
		stmt, err := p.ParseOneStmt(r.SQL, "", "")
		if err != nil {
			t.Fatal(err)
		}
		c, err := FromCreate(stmt.(*ast.CreateTableStmt), r.Options)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := create(`CREATE TABLE t (_key TEXT PRIMARY KEY, "f:" TEXT) WITH (splits = 'g,o''k,p')`)
	out := CreateStatement(c.Table, c.Schema, c.Splits)
	if !strings.Contains(out, `WITH (splits = 'g,o''k,p')`) {
		t.Fatalf("splits not shown:\n%s", out)
	}
	if again := create(out); fmt.Sprintf("%q", again.Splits) != fmt.Sprintf("%q", c.Splits) {
		t.Fatalf("read back %q, want %q", again.Splits, c.Splits)
	}
	out = CreateStatement(c.Table, c.Schema, [][]byte{[]byte("a,b"), []byte("c")})
	if strings.Contains(out, "splits =") || !strings.Contains(out, "-- 2 split points, not all writable as splits") {
		t.Fatalf("a key with a comma:\n%s", out)
	}
	p := create(`CREATE TABLE p (id INT PRIMARY KEY, v TEXT)`)
	if out := CreateStatement(p.Table, p.Schema, [][]byte{{1, 2}}); strings.Contains(out, "split") {
		t.Fatalf("a plain table's encoded split keys shown:\n%s", out)
	}
}
