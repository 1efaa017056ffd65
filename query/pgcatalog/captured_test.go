package pgcatalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/query/catalog"
	"github.com/cellardb/cellar/query/pgeval"
	"github.com/cellardb/cellar/query/pgtypes"
)

const captured = "../../tests/clients/corpus/captured-sql.txt"

// capturedCatalogQueries returns the distinct SELECTs over the catalog
// that real clients sent (psql's \d commands, pgjdbc's
// DatabaseMetaData, SQLAlchemy's inspector, pgx's type loading ...),
// with the OID stock PostgreSQL gave their table t1 replaced by cellar's.
func capturedCatalogQueries(t *testing.T) (clients, texts []string) {
	t.Helper()
	raw, err := os.ReadFile(captured)
	if err != nil {
		t.Fatalf("the captured client SQL is missing (%v): tests/clients/corpus holds a copy of /work/shared/clients", err)
	}
	var names []string
	for _, r := range Relations() {
		names = append(names, regexp.QuoteMeta(r[strings.IndexByte(r, '.')+1:]))
	}
	catalogRef := regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\b`)
	header := regexp.MustCompile(`^\[([^\]]*\]?)\] ?`)
	seen := map[string]bool{}
	for _, e := range strings.Split("\n"+string(raw), "\n---")[1:] {
		m := header.FindStringSubmatch(e)
		if m == nil {
			continue
		}
		sql := strings.TrimSpace(e[len(m[0]):])
		if seen[sql] || !catalogRef.MatchString(sql) {
			continue
		}
		tree, err := pg.Parse(sql)
		if err != nil || len(tree.Stmts) != 1 || tree.Stmts[0].Stmt.GetSelectStmt() == nil {
			continue
		}
		seen[sql] = true
		clients = append(clients, m[1])
		texts = append(texts, strings.ReplaceAll(sql, "16384", strconv.FormatUint(uint64(TableOID("t1")), 10)))
	}
	return clients, texts
}

// TestCapturedCatalogQueries runs each of them over the emulated catalog
// holding the clients' table t1 (id int primary key, name text, v
// numeric): each must evaluate.
func TestCapturedCatalogQueries(t *testing.T) {
	env := biEnv()
	t1 := &catalog.Table{Name: "t1", Plain: true, Columns: []catalog.Column{
		{Name: "id", Type: model.TypeInt4, Key: true, NotNull: true},
		{Name: "name", Family: "d", Qualifier: "name", Type: model.TypeText},
		{Name: "v", Family: "d", Qualifier: "v", Type: model.TypeNumeric},
	}, Families: []catalog.Family{{Name: "d", DefaultType: model.TypeBytea}}}
	cat := env.Catalog.(*testCatalog)
	cat.src.Tables = append(cat.src.Tables, t1)
	clients, texts := capturedCatalogQueries(t)
	if len(texts) < 40 {
		t.Fatalf("only %d catalog queries found in %s", len(texts), captured)
	}
	for i, sql := range texts {
		short := sql
		if len(short) > 70 {
			short = short[:70]
		}
		t.Run(fmt.Sprintf("%02d", i+1), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := runCaptured(ctx, env, sql); err != nil {
				t.Errorf("[%s] %s...: %v", clients[i], short, err)
			}
		})
	}
}

// runCaptured prepares and runs sql, binding each parameter to t1's OID,
// name or type as its type asks.
func runCaptured(ctx context.Context, env *pgeval.Env, sql string) error {
	tree, err := pg.Parse(sql)
	if err != nil {
		return err
	}
	plan, err := pgeval.Prepare(ctx, tree.Stmts[0].Stmt, env, nil)
	if err != nil {
		return err
	}
	var args []any
	for _, p := range plan.Params() {
		switch p {
		case pgtypes.OIDInt2, pgtypes.OIDInt4, pgtypes.OIDInt8, oidOid:
			args = append(args, int64(TableOID("t1")))
		case oidTextArray:
			args = append(args, pgeval.Array{Elem: pgtypes.OIDText, Vals: []any{"t1", "public.t1"}})
		default:
			args = append(args, "t1")
		}
	}
	rows, err := plan.Run(ctx, env, args)
	if err != nil {
		return err
	}
	defer rows.Close()
	for {
		if _, err := rows.Next(ctx); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
