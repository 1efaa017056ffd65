package tests

import (
	"context"
	"encoding/binary"
	"slices"
	"strings"
	"testing"
	"time"

	kvclient "github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/ops/querykv"
	"github.com/cellardb/cellar/query"
	"github.com/cellardb/cellar/query/sqlstate"
)

// TestSQLAndNativeShareTables: SQL and the native row API see the same
// tables and the same cells (DESIGN.md sections 4 and 5). A table made
// through the native API is queryable from SQL as _key BYTEA with BYTEA
// qualifiers; an SQL BIGINT and a native increment work on one cell; a
// table made in SQL is served to native clients.
func TestSQLAndNativeShareTables(t *testing.T) {
	c := newKVCluster(t, kvClusterConfig{servers: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	qkv := &querykv.KV{Client: c.kv, MasterAddr: c.msess.MasterAddr("")}
	defer qkv.Close()
	tables := query.NewTables(qkv)
	s, err := query.NewSession(query.SessionOptions{User: "cellar", Database: "cellar", Tables: tables})
	if err != nil {
		t.Fatal(err)
	}
	exec := func(sql string) *query.Result {
		t.Helper()
		stmts, err := s.Parse(sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		var res *query.Result
		for _, st := range stmts {
			if res, err = s.Execute(ctx, st, nil); err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
		}
		return res
	}

	// A table of the native API, seen from SQL.
	if err := qkv.CreateTable(ctx, "users", model.Schema{Families: []model.Family{{Name: "profile"}}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.kv.Apply(ctx, "users", &model.RowMutation{Row: []byte("alice"), Mutations: []model.Mutation{
		model.SetCell("profile", []byte("name"), model.ServerTimestamp, []byte("Alice"))}}); err != nil {
		t.Fatal(err)
	}
	tables.Invalidate()
	res := exec(`SELECT _key, "profile:name", profile FROM users`)
	if len(res.Rows) != 1 || string(res.Rows[0][0].([]byte)) != "alice" || string(res.Rows[0][1].([]byte)) != "Alice" ||
		res.Rows[0][2] != `{"name": "Alice"}` {
		t.Fatalf("native table in SQL: %v", res.Rows)
	}

	// One cell, two APIs: SQL writes a BIGINT, a native increment adds
	// to it, and SQL reads the sum.
	exec(`CREATE TABLE counters (_key TEXT PRIMARY KEY, "c:n" BIGINT)`)
	exec(`INSERT INTO counters VALUES ('hits', 40)`)
	cells, err := c.kv.ReadModifyWrite(ctx, "counters", []byte("hits"), []kvclient.ReadModifyWriteRule{{Family: "c", Qualifier: []byte("n"), Increment: 2}})
	if err != nil || int64(binary.BigEndian.Uint64(cells[0].Value)) != 42 {
		t.Fatalf("native increment of an SQL BIGINT: %v %v", cells, err)
	}
	res = exec(`UPDATE counters SET "c:n" = "c:n" + 1 WHERE _key = 'hits' RETURNING "c:n"`)
	if len(res.Rows) != 1 || res.Rows[0][0] != int64(43) {
		t.Fatalf("SQL after the native increment: %v", res.Rows)
	}
	// The SQL table is the native API's, with the marker cell of a row
	// SQL wrote.
	row, found, err := c.kv.ReadRow(ctx, "counters", []byte("hits"), kvclient.Filter{MaxVersions: 1})
	if err != nil || !found || len(row.Cells) != 2 || row.Cells[0].Family != "_" || row.Cells[1].Family != "c" {
		t.Fatalf("the SQL row through the native API: %v %v %v", row, found, err)
	}
	sc := c.kv.Scan(ctx, "counters", model.RowRange{}, kvclient.Filter{}, 0)
	n := 0
	for sc.Next() {
		n++
	}
	if sc.Err() != nil || n != 1 {
		t.Fatalf("native scan of an SQL table: %d rows, %v", n, sc.Err())
	}
	// Aggregates and conditions run on the tablet servers of this
	// cluster too.
	for i := range 50 {
		exec(`UPSERT INTO counters VALUES ('k` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `', ` + string(rune('0'+i%10)) + `)`)
	}
	res = exec(`SELECT count(*), sum("c:n"), max("c:n") FROM counters WHERE "c:n" >= 5`)
	if len(res.Rows) != 1 || res.Rows[0][0] != int64(26) {
		t.Fatalf("aggregate: %v", res.Rows)
	}
	// EXPLAIN ANALYZE reports what the tablet servers read.
	var plan []string
	for _, r := range exec(`EXPLAIN ANALYZE SELECT "c:n" FROM counters WHERE _key = 'hits'`).Rows {
		plan = append(plan, r[0].(string))
	}
	if !strings.Contains(strings.Join(plan, "\n"), "Tablet servers read: 1 rows, 2 cells") {
		t.Fatalf("EXPLAIN ANALYZE:\n%s", strings.Join(plan, "\n"))
	}

	// A gateway whose schema cache is stale (its clock stands still, so
	// it never reloads) while the native API changes tables: its CREATE
	// of a table made meanwhile is 42P07 (the master says it exists), and
	// its ALTER, made from the old schema, is refused with 40001 instead
	// of undoing the native change.
	stale := query.NewTables(qkv)
	frozen := time.Now()
	stale.Now = func() time.Time { return frozen }
	s2, err := query.NewSession(query.SessionOptions{User: "cellar", Database: "cellar", Tables: stale})
	if err != nil {
		t.Fatal(err)
	}
	run := func(sql string) error {
		stmts, err := s2.Parse(sql)
		if err != nil {
			return err
		}
		_, err = s2.Execute(ctx, stmts[0], nil)
		return err
	}
	if err := run(`SELECT count(*) FROM counters`); err != nil {
		t.Fatal(err)
	}
	all, err := qkv.Tables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cur := all["counters"]
	next := cur
	next.Families = append(slices.Clone(cur.Families), model.Family{Name: "native"})
	if err := qkv.UpdateSchema(ctx, "counters", &cur, next); err != nil {
		t.Fatal(err)
	}
	if err := run(`ALTER TABLE counters ADD COLUMN "d:x" TEXT`); err == nil || sqlstate.AsError(err).Code != "40001" {
		t.Fatalf("ALTER from a stale schema: %v, want 40001", err)
	}
	all, err = qkv.Tables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after := all["counters"]; !slices.ContainsFunc(after.Families, func(f model.Family) bool { return f.Name == "native" }) {
		t.Fatal("the native family was undone by a stale ALTER")
	}
	// (A failed DDL statement drops the cache: make it stale again.)
	if err := run(`SELECT count(*) FROM counters`); err != nil {
		t.Fatal(err)
	}
	if err := qkv.CreateTable(ctx, "made_natively", model.Schema{Families: []model.Family{{Name: "f"}}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := run(`CREATE TABLE made_natively (_key TEXT PRIMARY KEY, "f:" TEXT)`); err == nil || sqlstate.AsError(err).Code != "42P07" {
		t.Fatalf("CREATE TABLE of a table made meanwhile: %v, want 42P07", err)
	}
	// Once the cache is fresh, the ALTER goes through.
	stale.Invalidate()
	if err := run(`ALTER TABLE counters ADD COLUMN "d:x" TEXT`); err != nil {
		t.Fatalf("ALTER after a reload: %v", err)
	}
}
