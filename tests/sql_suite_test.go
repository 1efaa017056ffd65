package tests

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// startSQLDemo starts "cellar demo" and waits until its master is active,
// so that the gateway can create tables.
func startSQLDemo(t *testing.T) (bin string, d *demo) {
	t.Helper()
	bin = buildCellar(t)
	d = startDemo(t, bin, t.TempDir())
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, body := d.get(t, "/readyz")
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz after 60s: %d %q", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return bin, d
}

// TestSQLSuite runs the SQL regression suite, every tests/sql/*.slt file,
// through `cellar sqltest` against a live demo cluster. Each file makes
// and drops its own tables; the files run one after another, each on its
// own connection. The files' PostgreSQL-compatible records pass against
// PostgreSQL 15 as well:
//
//	cellar sqltest -endpoint postgresql -url postgresql://postgres@127.0.0.1:5432/DB tests/sql/*.slt
func TestSQLSuite(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(moduleRoot(t), "tests", "sql", "*.slt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no tests/sql/*.slt files: %v", err)
	}
	bin, d := startSQLDemo(t)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin, "sqltest", "-url", d.pg, f).CombinedOutput()
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			summary := lines[len(lines)-1]
			if err != nil || !strings.Contains(summary, " 0 failed") {
				t.Fatalf("cellar sqltest %s: %v\n%s", filepath.Base(f), err, out)
			}
			t.Log(summary)
		})
	}
	// sqltest checks results, not command tags; these are checked here.
	t.Run("command tags", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, d.pg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		steps := []struct{ sql, tag string }{
			{`CREATE TABLE tags_t (_key TEXT PRIMARY KEY, "c:n" BIGINT)`, "CREATE TABLE"},
			{`UPSERT INTO tags_t (_key, "c:n") VALUES ('a', 1), ('b', 2)`, "INSERT 0 2"},
			{`INSERT INTO tags_t (_key, "c:n") VALUES ('c', 3)`, "INSERT 0 1"},
			{`INSERT INTO tags_t (_key) VALUES ('c') ON CONFLICT (_key) DO NOTHING`, "INSERT 0 0"},
			{`INSERT INTO tags_t (_key, "c:n") VALUES ('c', 4), ('d', 5) ON CONFLICT (_key) DO UPDATE SET "c:n" = excluded."c:n"`, "INSERT 0 2"},
			{`UPDATE tags_t SET "c:n" = "c:n" + 1 WHERE _key = 'a'`, "UPDATE 1"},
			{`UPDATE tags_t SET "c:n" = 0 WHERE _key = 'missing'`, "UPDATE 0"},
			{`UPDATE tags_t SET "c:n" = 0 WHERE _key >= 'a' AND _key < 'c'`, "UPDATE 2"},
			{`DELETE FROM tags_t WHERE _key = 'missing'`, "DELETE 0"},
			{`DELETE FROM tags_t WHERE _key >= 'c'`, "DELETE 2"},
			{`SELECT _key FROM tags_t`, "SELECT 2"},
			{`BEGIN`, "BEGIN"},
			{`INSERT INTO tags_t (_key) VALUES ('e')`, "INSERT 0 1"},
			{`COMMIT`, "COMMIT"},
			{`BEGIN`, "BEGIN"},
			{`ROLLBACK`, "ROLLBACK"},
			{`ALTER TABLE tags_t ADD COLUMN "c:s" TEXT`, "ALTER TABLE"},
			{`DROP TABLE tags_t`, "DROP TABLE"},
		}
		for _, s := range steps {
			tag, err := conn.Exec(ctx, s.sql, pgx.QueryExecModeSimpleProtocol)
			if err != nil {
				t.Fatalf("%s: %v", s.sql, err)
			}
			if tag.String() != s.tag {
				t.Errorf("%s: tag %q, want %q", s.sql, tag.String(), s.tag)
			}
		}
		// COMMIT of a failed block rolls back, and says so.
		if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "SELECT 1/0", pgx.QueryExecModeSimpleProtocol); err == nil {
			t.Fatal("SELECT 1/0 succeeded")
		}
		tag, err := conn.Exec(ctx, "COMMIT", pgx.QueryExecModeSimpleProtocol)
		if err != nil || tag.String() != "ROLLBACK" {
			t.Errorf("COMMIT of a failed block: %q, %v; want ROLLBACK", tag.String(), err)
		}
	})
	// sqltest uses the simple protocol; prepared statements with
	// parameters (the extended protocol) are checked here.
	t.Run("prepared", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, d.pg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, `CREATE TABLE prep_t (_key TEXT PRIMARY KEY, "c:n" BIGINT, "c:s" TEXT)`); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			if _, err := conn.Exec(ctx, `INSERT INTO prep_t (_key, "c:n", "c:s") VALUES ($1, $2, $3)`, fmt.Sprintf("k%d", i), int64(i*10), fmt.Sprintf("s%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		var n int64
		var s string
		for i := 0; i < 5; i++ {
			if err := conn.QueryRow(ctx, `SELECT "c:n", "c:s" FROM prep_t WHERE _key = $1`, fmt.Sprintf("k%d", i)).Scan(&n, &s); err != nil || n != int64(i*10) || s != fmt.Sprintf("s%d", i) {
				t.Fatalf("point read k%d: %d %q %v", i, n, s, err)
			}
		}
		// $1 twice, a range with parameters, an UPDATE with a parameter.
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM prep_t WHERE _key >= $1 AND _key < $2 AND "c:n" <> $3`, "k1", "k4", int64(20)).Scan(&n); err != nil || n != 2 {
			t.Fatalf("range count: %d %v", n, err)
		}
		if err := conn.QueryRow(ctx, `SELECT "c:n" + $1 FROM prep_t WHERE _key = 'k1' AND "c:n" < $1`, int64(100)).Scan(&n); err != nil || n != 110 {
			t.Fatalf("$1 twice: %d %v", n, err)
		}
		tag, err := conn.Exec(ctx, `UPDATE prep_t SET "c:n" = "c:n" + $1 WHERE _key = $2`, int64(5), "k2")
		if err != nil || tag.String() != "UPDATE 1" {
			t.Fatalf("UPDATE with parameters: %q %v", tag.String(), err)
		}
		if err := conn.QueryRow(ctx, `SELECT "c:n" FROM prep_t WHERE _key = $1`, "k2").Scan(&n); err != nil || n != 25 {
			t.Fatalf("after UPDATE: %d %v", n, err)
		}
		if _, err := conn.Exec(ctx, `DROP TABLE prep_t`); err != nil {
			t.Fatal(err)
		}
	})
}

// TestConcurrentIncrements: many connections increment one cell through
// UPDATE; every acknowledged increment is in the final value, and none
// is lost or applied twice. A serialization failure (40001) is allowed
// and not counted.
func TestConcurrentIncrements(t *testing.T) {
	_, d := startSQLDemo(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, d.pg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	for _, sql := range []string{
		`CREATE TABLE incr_t (_key TEXT PRIMARY KEY, "c:n" BIGINT)`,
		`INSERT INTO incr_t (_key, "c:n") VALUES ('r', 0)`,
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	const workers, each = 8, 25
	var acked, conflicts atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := pgx.Connect(ctx, d.pg)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close(context.Background())
			for i := 0; i < each; i++ {
				tag, err := conn.Exec(ctx, `UPDATE incr_t SET "c:n" = "c:n" + 1 WHERE _key = 'r'`)
				var pgErr *pgconn.PgError
				switch {
				case err == nil && tag.RowsAffected() == 1:
					acked.Add(1)
				case err == nil:
					errs <- fmt.Errorf("UPDATE of an existing row: tag %q", tag.String())
					return
				case errors.As(err, &pgErr) && pgErr.Code == "40001":
					conflicts.Add(1)
				default:
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var n int64
	if err := admin.QueryRow(ctx, `SELECT "c:n" FROM incr_t WHERE _key = 'r'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d acknowledged, %d serialization failures, final value %d", acked.Load(), conflicts.Load(), n)
	if n != acked.Load() {
		t.Fatalf("final value %d, but %d increments were acknowledged", n, acked.Load())
	}
	if acked.Load() == 0 {
		t.Fatal("no increment was acknowledged")
	}
	if _, err := admin.Exec(ctx, `DROP TABLE incr_t`); err != nil {
		t.Fatal(err)
	}
}
