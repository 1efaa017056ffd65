package tests

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestSQLWritesSurviveKill: every write the gateway acknowledged — INSERT,
// UPSERT, UPDATE, DELETE, COPY and a COMMIT — is there after cellar demo
// is killed with SIGKILL and started again on its data directory.
func TestSQLWritesSurviveKill(t *testing.T) {
	bin := buildCellar(t)
	data := t.TempDir()
	d := startDemo(t, bin, data)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, d.pg)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := c.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`CREATE TABLE crash_t (_key TEXT PRIMARY KEY, "c:n" BIGINT, "c:s" TEXT)`)
	for i := range 100 {
		exec(`INSERT INTO crash_t VALUES ($1, $2, 'v')`, fmt.Sprintf("k%03d", i), int64(i))
	}
	exec(`UPSERT INTO crash_t (_key, "c:s") VALUES ('k007', 'upserted')`)
	exec(`UPDATE crash_t SET "c:n" = "c:n" + 1000 WHERE _key >= 'k050' AND _key < 'k060'`)
	exec(`DELETE FROM crash_t WHERE _key = 'k099'`)
	if _, err := c.CopyFrom(ctx, pgx.Identifier{"crash_t"}, []string{"_key", "c:n"}, pgx.CopyFromRows([][]any{{"copied", int64(5)}})); err != nil {
		t.Fatal(err)
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO crash_t VALUES ('in-tx', 1, 'tx')`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)
	d.cmd.Process.Kill() // SIGKILL: no flush, no clean close
	d.cmd.Wait()

	d = startDemo(t, bin, data)
	defer d.stop(t)
	deadline := time.Now().Add(90 * time.Second)
	for {
		c, err = pgx.Connect(ctx, d.pg)
		var n, sum int64
		var s string
		if err == nil {
			err = c.QueryRow(ctx, `SELECT count(*), sum("c:n") FROM crash_t`).Scan(&n, &sum)
		}
		if err == nil {
			err = c.QueryRow(ctx, `SELECT "c:s" FROM crash_t WHERE _key = 'k007'`).Scan(&s)
		}
		if err == nil {
			// 100 inserted, one deleted, one copied, one in the transaction;
			// 0..98 plus 10×1000 plus 5 plus 1.
			if n != 101 || sum != 4851+10000+5+1 || s != "upserted" {
				t.Fatalf("after kill -9: %d rows, sum %d, k007 %q", n, sum, s)
			}
			c.Close(ctx)
			return
		}
		if c != nil {
			c.Close(ctx)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restarted demo did not answer: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
