package tests

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestBIToolQueries sends the 58 connect-time and schema-browse queries of
// Metabase, Grafana, Superset/SQLAlchemy, DBeaver, Npgsql and pgAdmin
// (clients/corpus/bi, a copy of /work/shared/clients/bi) to cellar demo, through the simple and the
// extended protocol, for the table they were written for, and checks each
// answer's columns against PostgreSQL 15's, and its row count where that
// does not depend on what else the database holds.
func TestBIToolQueries(t *testing.T) {
	qs, err := os.ReadFile("clients/corpus/bi/queries.sql")
	if err != nil {
		t.Fatalf("the BI queries are missing (%v): clients/corpus/bi holds them", err)
	}
	exp, err := os.ReadFile("clients/corpus/bi/expected.txt")
	if err != nil {
		t.Fatalf("the BI queries' expected results are missing: %v", err)
	}
	blocks := strings.Split(string(qs), "\n;;\n")
	want := strings.Split(strings.TrimSpace(string(exp)), "\n")
	if len(blocks) != len(want) {
		t.Fatalf("%d query blocks but %d expected results", len(blocks), len(want))
	}
	bin := buildCellar(t)
	d := startDemo(t, bin, t.TempDir())
	defer d.stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, d.pg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, `CREATE TABLE hx_bi (_key text primary key, "info:rank" bigint, "anchor:x" text)`); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `INSERT INTO hx_bi VALUES ('a', 1, 'x'), ('b', 2, 'y')`); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeDescribeExec} {
		for i, block := range blocks {
			header, sql, _ := strings.Cut(strings.TrimLeft(block, "\n"), "\n")
			f := strings.Split(want[i], " | ")
			rows, _ := strconv.Atoi(strings.TrimPrefix(f[1], "rows="))
			cols := strings.TrimPrefix(f[2], "cols=")
			sql = strings.TrimSuffix(strings.TrimSpace(sql), ";")
			if strings.HasPrefix(strings.ToUpper(sql), "SET ") {
				if _, err := c.Exec(ctx, sql, mode); err != nil {
					t.Errorf("%v %s: %v", mode, header, err)
				}
				continue
			}
			r, err := c.Query(ctx, sql, mode)
			if err != nil {
				t.Errorf("%v %s: %v", mode, header, err)
				continue
			}
			var names []string
			for _, fd := range r.FieldDescriptions() {
				names = append(names, fd.Name)
			}
			n := 0
			for r.Next() {
				n++
			}
			if err := r.Err(); err != nil {
				t.Errorf("%v %s: %v", mode, header, err)
				continue
			}
			if got := strings.Join(names, ","); got != cols {
				t.Errorf("%v %s: columns %q, PostgreSQL's %q", mode, header, got, cols)
			}
			if !strings.Contains(f[0], "(catalog-wide") && n != rows {
				t.Errorf("%v %s: %d rows, PostgreSQL's %d", mode, header, n, rows)
			}
		}
	}
}
