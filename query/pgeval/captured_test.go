package pgeval

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/query/sqlstate"
)

// TestCapturedCatalogQueries runs every SELECT that real clients sent
// (psql \d, JDBC DatabaseMetaData, SQLAlchemy, psycopg ...) whose
// relations are all catalog relations or CTEs, against the fixture
// catalog. SELECTs over user tables belong to the dialect's tests and
// are counted, not run.
func TestCapturedCatalogQueries(t *testing.T) {
	path := filepath.Join("..", "..", "tests", "clients", "corpus", "captured-sql.txt")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the captured client SQL is missing at %s: %v", path, err)
	}
	cat := &memCatalog{rels: map[string]Relation{}}
	loadFixture(t, cat)
	env := testEnv(cat)
	env.SortBudget = 0
	var entries []string
	for _, e := range strings.Split("\n"+string(data), "\n---[") {
		if i := strings.Index(e, "] "); i >= 0 {
			entries = append(entries, e[i+2:])
		}
	}
	ran, user, exprs := 0, 0, 0
	for _, e := range entries {
		res, err := pg.Parse(e)
		if err != nil {
			continue // not PostgreSQL syntax (COPY data, client junk)
		}
		for _, st := range res.Stmts {
			if st.Stmt.GetSelectStmt() == nil {
				continue
			}
			if !catalogOnly(st.Stmt, cat) {
				user++
				continue
			}
			if !readsRelations(st.Stmt) {
				// The drivers' expression tests (casts to their own types,
				// 1/0 ...) may fail, but only with a proper SQLSTATE.
				exprs++
				if err := runQuick(env, st.Stmt); err != nil && sqlstate.AsError(err).Code == sqlstate.CodeInternal {
					t.Errorf("%s\n  -> internal error %v", strings.TrimSpace(firstN(e, 300)), err)
				}
				continue
			}
			ran++
			start := time.Now()
			if _, err := runStmt(env, st.Stmt); err != nil {
				t.Errorf("%s\n  -> %v", strings.TrimSpace(firstN(e, 300)), err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("%s\n  -> took %v", strings.TrimSpace(firstN(e, 300)), d)
			}
		}
	}
	t.Logf("ran %d catalog SELECTs; %d SELECTs read user tables; %d read no relation", ran, user, exprs)
	if ran < 40 {
		t.Fatalf("only %d catalog SELECTs found", ran)
	}
}

func firstN(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// catalogOnly reports whether every relation the statement names is in
// the fixture catalog (pg_catalog, information_schema) or is a CTE.
func catalogOnly(n *pg.Node, cat *memCatalog) bool {
	ctes := map[string]bool{}
	walk(n, func(m *pg.Node) bool {
		if c := m.GetCommonTableExpr(); c != nil {
			ctes[c.Ctename] = true
		}
		return true
	})
	ok := true
	walk(n, func(m *pg.Node) bool {
		rv := m.GetRangeVar()
		if rv == nil {
			return true
		}
		if rv.Schemaname == "" && ctes[rv.Relname] {
			return true
		}
		schema := rv.Schemaname
		if schema == "public" || (schema == "" && cat.rels["pg_catalog."+rv.Relname] == nil) {
			ok = false
			return false
		}
		if schema == "" {
			schema = "pg_catalog"
		}
		if cat.rels[schema+"."+rv.Relname] == nil {
			ok = false
		}
		return ok
	})
	return ok
}

func readsRelations(n *pg.Node) bool {
	found := false
	walk(n, func(m *pg.Node) bool {
		if m.GetRangeVar() != nil {
			found = true
		}
		return !found
	})
	return found
}

// runQuick runs a statement for at most 100ms (pg_sleep) and reads at
// most 1000 rows.
func runQuick(env *Env, n *pg.Node) error {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	p, err := Prepare(ctx, n, env, nil)
	if err != nil {
		return err
	}
	rows, err := p.Run(ctx, env, make([]any, len(p.Params())))
	if err != nil {
		return err
	}
	defer rows.Close()
	for i := 0; i < 1000; i++ {
		if _, err := rows.Next(ctx); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
	return nil
}
