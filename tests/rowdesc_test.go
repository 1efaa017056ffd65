package tests

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestRowDescriptionOrigin: a result column that reads a user table's
// column as it is carries the table's OID (its pg_class row, what
// 'table'::regclass gives) and the column's attnum and atttypmod (what
// pg_attribute says), in the simple protocol, in the extended one
// (Describe of the statement and of the portal) and for RETURNING;
// expressions carry 0 and 0, with the type modifier of a cast. The same
// checks run against PostgreSQL 15 when CELLAR_PGEVAL_AGAINST names one
// (host:port), which is how the expectations were made.
func TestRowDescriptionOrigin(t *testing.T) {
	bin := buildCellar(t)
	d := startDemo(t, bin, t.TempDir())
	defer d.stop(t)
	t.Run("cellar", func(t *testing.T) { checkRowDescriptions(t, d.pg) })
	if addr := os.Getenv("CELLAR_PGEVAL_AGAINST"); addr != "" {
		t.Run("postgresql", func(t *testing.T) {
			checkRowDescriptions(t, fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", addr))
		})
	}
}

func checkRowDescriptions(t *testing.T, url string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	for _, sql := range []string{
		`DROP TABLE IF EXISTS rowdesc_t`,
		// The key is declared last: attnums are what pg_attribute says,
		// whatever order the server keeps the columns in.
		`CREATE TABLE rowdesc_t (name VARCHAR(12), price NUMERIC(10,2), qty INTEGER, note TEXT, id BIGINT PRIMARY KEY)`,
		`INSERT INTO rowdesc_t (id, name, price, qty) VALUES (1, 'a', 1.5, 2)`,
	} {
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	defer c.Exec(context.Background(), `DROP TABLE rowdesc_t`)
	var table uint32
	if err := c.QueryRow(ctx, `SELECT 'rowdesc_t'::regclass::oid`).Scan(&table); err != nil {
		t.Fatal(err)
	}
	type attr struct {
		num    int16
		typmod int32
	}
	attrs := map[string]attr{}
	rows, err := c.Query(ctx, `SELECT attname::text, attnum, atttypmod FROM pg_attribute WHERE attrelid = 'rowdesc_t'::regclass AND attnum > 0`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		var a attr
		if err := rows.Scan(&name, &a.num, &a.typmod); err != nil {
			t.Fatal(err)
		}
		attrs[name] = a
	}
	if err := rows.Err(); err != nil || len(attrs) != 5 {
		t.Fatalf("pg_attribute: %v %v", attrs, err)
	}
	if attrs["name"].typmod != 16 || attrs["price"].typmod != 655366 {
		t.Fatalf("pg_attribute's typmods: %v", attrs)
	}
	// want lists each result column: a table column's name, or "=N" for
	// an expression with type modifier N.
	for _, tc := range []struct {
		sql  string
		want []string
	}{
		{`SELECT * FROM rowdesc_t`, nil},
		{`SELECT name, price AS p, t.qty, t.id FROM rowdesc_t t WHERE id = 1`, []string{"name", "price", "qty", "id"}},
		{`SELECT price::numeric(10,2), price::numeric(5,1), price::numeric, name::varchar(3), name::text, qty::int4, upper(name), qty + 1 FROM rowdesc_t`,
			[]string{"price", "=327685", "=-1", "=7", "=-1", "qty", "=-1", "=-1"}},
		{`SELECT name, count(*), max(price) FROM rowdesc_t GROUP BY name ORDER BY name`, []string{"name", "=-1", "=-1"}},
		{`SELECT DISTINCT price FROM rowdesc_t`, []string{"price"}},
		{`SELECT name FROM rowdesc_t WHERE price > $1`, []string{"name"}},
		{`UPDATE rowdesc_t SET qty = qty + 1 WHERE id = 1 RETURNING name, price, qty * 2, id`, []string{"name", "price", "=-1", "id"}},
		{`INSERT INTO rowdesc_t (id, name) VALUES (2, 'b') ON CONFLICT (id) DO UPDATE SET note = 'x' RETURNING *`, nil},
	} {
		check := func(how string, fields []pgconn.FieldDescription) {
			t.Helper()
			want := tc.want
			if want == nil {
				for _, f := range fields {
					want = append(want, f.Name)
				}
			}
			if len(fields) != len(want) {
				t.Errorf("%s, %s: %d columns, want %d", tc.sql, how, len(fields), len(want))
				return
			}
			for i, f := range fields {
				var wt uint32
				var wn int16
				var wm int32
				if _, err := fmt.Sscanf(want[i], "=%d", &wm); err != nil {
					a, ok := attrs[want[i]]
					if !ok {
						t.Fatalf("no column %s", want[i])
					}
					wt, wn, wm = table, a.num, a.typmod
				}
				if f.TableOID != wt || int16(f.TableAttributeNumber) != wn || f.TypeModifier != wm {
					t.Errorf("%s, %s: column %s is table %d attnum %d typmod %d, want %d %d %d", tc.sql, how, f.Name,
						f.TableOID, f.TableAttributeNumber, f.TypeModifier, wt, wn, wm)
				}
			}
		}
		sd, err := c.PgConn().Prepare(ctx, "", tc.sql, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		check("Describe statement", sd.Fields)
		var args [][]byte
		for range sd.ParamOIDs {
			args = append(args, []byte("0"))
		}
		res := c.PgConn().ExecParams(ctx, tc.sql, args, sd.ParamOIDs, nil, nil).Read()
		if res.Err != nil {
			t.Fatalf("%s: %v", tc.sql, res.Err)
		}
		check("extended", res.FieldDescriptions)
		if len(sd.ParamOIDs) == 0 {
			rs, err := c.PgConn().Exec(ctx, tc.sql).ReadAll()
			if err != nil {
				t.Fatalf("%s: %v", tc.sql, err)
			}
			check("simple", rs[0].FieldDescriptions)
		}
	}
}
