package pgeval

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// TestBIQueries prepares and runs every SELECT of the BI tools'
// connect-time and schema-browse queries against the fixture catalog.
// Statements that are not SELECTs (SET, SHOW) belong to the session and
// are listed, not run.
func TestBIQueries(t *testing.T) {
	cat := &memCatalog{rels: map[string]Relation{}}
	loadFixture(t, cat)
	env := testEnv(cat)
	blocks := biBlocks(t)
	if len(blocks) < 58 {
		t.Fatalf("expected 58 BI query blocks, found %d", len(blocks))
	}
	expected := biExpected(t)
	selects := 0
	for i, b := range blocks {
		res, err := pg.Parse(b)
		if err != nil {
			t.Errorf("block %d: parse: %v", i+1, err)
			continue
		}
		for _, st := range res.Stmts {
			if st.Stmt.GetSelectStmt() == nil {
				t.Logf("block %d: %T is the session's, not the evaluator's", i+1, st.Stmt.Node)
				continue
			}
			selects++
			if i < len(expected) && len(res.Stmts) == 1 {
				if p, err := Prepare(context.Background(), st.Stmt, env, nil); err == nil {
					var names []string
					for _, c := range p.Columns() {
						names = append(names, c.Name)
					}
					if got := strings.Join(names, ","); got != expected[i] {
						t.Errorf("block %d: columns %s, PostgreSQL says %s", i+1, got, expected[i])
					}
				}
			}
			if n, err := runStmt(env, st.Stmt); err != nil {
				t.Errorf("block %d (%s): %v", i+1, firstLine(b), err)
			} else {
				t.Logf("block %d: %d rows", i+1, n)
			}
		}
	}
	if selects < 50 {
		t.Fatalf("only %d SELECTs found in the BI corpus", selects)
	}
}

func firstLine(b string) string {
	for _, l := range strings.Split(strings.TrimSpace(b), "\n") {
		return l
	}
	return ""
}

func runStmt(env *Env, n *pg.Node) (int, error) {
	ctx := context.Background()
	p, err := Prepare(ctx, n, env, nil)
	if err != nil {
		return 0, fmt.Errorf("prepare: %w", err)
	}
	args := make([]any, len(p.Params()))
	rows, err := p.Run(ctx, env, args)
	if err != nil {
		return 0, fmt.Errorf("run: %w", err)
	}
	defer rows.Close()
	count := 0
	for {
		_, err := rows.Next(ctx)
		if err == io.EOF {
			return count, nil
		}
		if err != nil {
			return count, fmt.Errorf("next: %w", err)
		}
		count++
	}
}

// biExpected returns, per block, the column names PostgreSQL answered.
func biExpected(t *testing.T) []string {
	data, err := os.ReadFile(filepath.Join("..", "..", "tests", "clients", "corpus", "bi", "expected.txt"))
	if err != nil {
		t.Fatalf("the BI expectations are missing: %v", err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		i := strings.LastIndex(l, "| cols=")
		if i < 0 {
			out = append(out, "")
			continue
		}
		out = append(out, l[i+len("| cols="):])
	}
	return out
}
