package pglex

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	pg "github.com/pganalyze/pg_query_go/v6"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver"
)

// TestRewrite: each case shows the rewritten text, its parameters and
// flags, whether PostgreSQL's grammar accepts the input (the oracle: the
// dialect is PostgreSQL syntax, except documented extensions such as
// UPSERT), and whether the TiDB grammar accepts the output.
func TestRewrite(t *testing.T) {
	datadriven.RunTest(t, "testdata/rewrite", func(t *testing.T, d *datadriven.TestData) string {
		var b strings.Builder
		if _, err := pg.Parse(d.Input); err != nil {
			fmt.Fprintf(&b, "postgres: %v\n", err)
		} else {
			b.WriteString("postgres: ok\n")
		}
		r, err := Rewrite(d.Input)
		if err != nil {
			e := err.(*Error)
			fmt.Fprintf(&b, "error at %d: %s (unsupported=%v)\n", e.Position, e.Msg, e.Unsupported)
			return b.String()
		}
		fmt.Fprintf(&b, "sql: %s\n", r.SQL)
		if len(r.Params) > 0 {
			fmt.Fprintf(&b, "params: %v\n", r.Params)
		}
		if r.Upsert {
			b.WriteString("upsert\n")
		}
		if r.IgnoreConflicts {
			b.WriteString("ignore conflicts\n")
		}
		for _, o := range r.Options {
			fmt.Fprintf(&b, "option %s = %q (at %d)\n", o.Name, o.Value, o.Position)
		}
		if r.Returning != "" {
			fmt.Fprintf(&b, "returning: %s %v\n", r.Returning, r.ReturningParams)
		}
		p := parser.New()
		p.SetSQLMode(mysql.ModeANSIQuotes | mysql.ModePipesAsConcat | mysql.ModeNoBackslashEscapes)
		if _, _, err := p.Parse(r.SQL, "", ""); err != nil {
			fmt.Fprintf(&b, "tidb: %v\n", err)
		} else {
			b.WriteString("tidb: ok\n")
		}
		if d.HasArg("pos") {
			var at int
			d.ScanArgs(t, "pos", &at)
			fmt.Fprintf(&b, "output byte %d is input character %d\n", at, r.InputPosition(at))
		}
		return b.String()
	})
}
