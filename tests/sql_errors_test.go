package tests

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestIntegrityErrorFields: 23505 and 23502 carry the schema, table,
// column and constraint fields PostgreSQL sends with them, from a
// statement and from COMMIT; drivers report them (pgx's ConstraintName,
// asyncpg's constraint_name).
func TestIntegrityErrorFields(t *testing.T) {
	ctx, d, c := pgxOnDemo(t)
	if _, err := c.Exec(ctx, `CREATE TABLE errf (id BIGINT PRIMARY KEY, name TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `INSERT INTO errf VALUES (1, 'a')`); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error, want pgconn.PgError) {
		t.Helper()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != want.Code || pe.SchemaName != want.SchemaName || pe.TableName != want.TableName ||
			pe.ColumnName != want.ColumnName || pe.ConstraintName != want.ConstraintName {
			t.Errorf("%s: %#v", what, err)
		}
	}
	unique := pgconn.PgError{Code: "23505", SchemaName: "public", TableName: "errf", ConstraintName: "errf_pkey"}
	_, err := c.Exec(ctx, `INSERT INTO errf VALUES (1, 'b')`)
	check("INSERT", err, unique)
	_, err = c.Exec(ctx, `INSERT INTO errf (name) VALUES ('b')`)
	check("a missing key", err, pgconn.PgError{Code: "23502", SchemaName: "public", TableName: "errf", ColumnName: "id"})
	_, err = c.Exec(ctx, `INSERT INTO errf VALUES (2, NULL)`)
	check("a NULL NOT NULL column", err, pgconn.PgError{Code: "23502", SchemaName: "public", TableName: "errf", ColumnName: "name"})

	// COMMIT finds the row another session wrote since the INSERT.
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO errf VALUES (3, 'mine')`); err != nil {
		t.Fatal(err)
	}
	other, err := pgx.Connect(ctx, d.pg)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	if _, err := other.Exec(ctx, `INSERT INTO errf VALUES (3, 'theirs')`); err != nil {
		t.Fatal(err)
	}
	check("COMMIT", tx.Commit(ctx), unique)
}
