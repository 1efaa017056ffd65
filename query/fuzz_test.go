package query

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cellardb/cellar/query/pglex"
)

// FuzzStatements feeds arbitrary text to the SQL front door: the PG
// lexical front end, the statement splitter and both grammars, and the
// planner of everything that needs no cluster. Bad SQL must give an
// error, never a panic. The seeds are the SQL regression suite's
// statements.
func FuzzStatements(f *testing.F) {
	files, _ := filepath.Glob("../tests/sql/*.slt")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, rec := range strings.Split(string(b), "\n\n") {
			lines := strings.Split(strings.TrimSpace(rec), "\n")
			if len(lines) < 2 || !(strings.HasPrefix(lines[0], "statement") || strings.HasPrefix(lines[0], "query")) {
				continue
			}
			sql, _, _ := strings.Cut(strings.Join(lines[1:], "\n"), "\n----")
			f.Add(sql)
		}
	}
	f.Add("UPSERT INTO t (_key, a.b) VALUES ($1, E'x\\n') RETURNING *")
	f.Add("SELECT * FROM t AS OF TIMESTAMP $1 WHERE _key LIKE 'a%'")
	f.Fuzz(func(t *testing.T, sql string) {
		s, err := NewSession(SessionOptions{User: "u", Database: "d", Clock: func() time.Time { return time.Unix(0, 0) }})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = pglex.Rewrite(sql)
		stmts, err := s.Parse(sql)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		for _, st := range stmts {
			if st.later != nil || len(st.Params) > 0 {
				continue // needs a cluster, or parameters
			}
			s.Execute(ctx, st, nil)
		}
		s.Prepare(ctx, sql, nil)
	})
}
