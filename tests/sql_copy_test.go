package tests

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestCopyFromBinary: pgx's CopyFrom sends COPY … FROM STDIN in the binary
// format; every type arrives, and a duplicate key fails the COPY with
// 23505.
func TestCopyFromBinary(t *testing.T) {
	ctx, _, c := pgxOnDemo(t)
	if _, err := c.Exec(ctx, `CREATE TABLE copy_bin (id BIGINT PRIMARY KEY, name TEXT, score DOUBLE PRECISION, ok BOOLEAN, at TIMESTAMPTZ, raw BYTEA)`); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	var rows [][]any
	for i := range 1000 {
		var name any = fmt.Sprintf("n%d", i)
		if i%100 == 0 {
			name = nil
		}
		rows = append(rows, []any{int64(i), name, float64(i) / 4, i%2 == 0, at.Add(time.Duration(i) * time.Second), []byte{byte(i), 0}})
	}
	cols := []string{"id", "name", "score", "ok", "at", "raw"}
	n, err := c.CopyFrom(ctx, pgx.Identifier{"copy_bin"}, cols, pgx.CopyFromRows(rows))
	if err != nil || n != 1000 {
		t.Fatalf("CopyFrom: %d %v", n, err)
	}
	var count, nulls int64
	var sum float64
	if err := c.QueryRow(ctx, `SELECT count(*), count(*) - count(name), sum(score) FROM copy_bin`).Scan(&count, &nulls, &sum); err != nil || count != 1000 || nulls != 10 || sum != 124875 {
		t.Fatalf("after CopyFrom: %d rows, %d NULL names, sum %v, %v", count, nulls, sum, err)
	}
	var name string
	var ok bool
	var got time.Time
	var raw []byte
	if err := c.QueryRow(ctx, `SELECT name, ok, at, raw FROM copy_bin WHERE id = 7`).Scan(&name, &ok, &got, &raw); err != nil ||
		name != "n7" || ok || !got.Equal(at.Add(7*time.Second)) || string(raw) != "\x07\x00" {
		t.Fatalf("row 7: %q %v %v %x %v", name, ok, got, raw, err)
	}
	var pe *pgconn.PgError
	if _, err := c.CopyFrom(ctx, pgx.Identifier{"copy_bin"}, cols, pgx.CopyFromRows(rows[:1])); !errors.As(err, &pe) || pe.Code != "23505" {
		t.Fatalf("a duplicate row: %v", err)
	}
}
