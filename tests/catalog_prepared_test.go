package tests

import "testing"

// TestPreparedCatalogSeesNewTables: pgx prepares and caches its
// statements, so a catalog query it runs again is the same prepared
// statement; it must see a table made since, as in PostgreSQL.
func TestPreparedCatalogSeesNewTables(t *testing.T) {
	ctx, _, c := pgxOnDemo(t)
	const q = `SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'`
	var before, after int
	if err := c.QueryRow(ctx, q).Scan(&before); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `CREATE TABLE prep_cat (id BIGINT PRIMARY KEY, name TEXT)`); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx, q).Scan(&after); err != nil {
		t.Fatal(err)
	}
	var cols int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_attribute WHERE attrelid = 'prep_cat'::regclass AND attnum > 0`).Scan(&cols); err != nil || cols != 2 {
		t.Fatalf("pg_attribute of the new table: %d columns, %v", cols, err)
	}
	if after != before+1 {
		t.Fatalf("information_schema.tables: %d tables before CREATE TABLE, %d after", before, after)
	}
}
