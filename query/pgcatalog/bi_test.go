package pgcatalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/query/catalog"
	"github.com/cellardb/cellar/query/pgeval"
	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// The BI tools' connect-time and schema-browse queries, with what stock
// PostgreSQL 15 returned for them (see ../../tests/clients/corpus/README.md).
const (
	biQueries  = "../../tests/clients/corpus/bi/queries.sql"
	biExpected = "../../tests/clients/corpus/bi/expected.txt"
)

// hxBI is the table the queries were instantiated for: hx_bi (_key text
// primary key, "info:rank" bigint, "anchor:x" text).
func hxBI() *catalog.Table {
	return &catalog.Table{Name: "hx_bi", Columns: []catalog.Column{
		{Name: "_key", Type: model.TypeText, Key: true, NotNull: true},
		{Name: "info:rank", Family: "info", Qualifier: "rank", Type: model.TypeInt8},
		{Name: "anchor:x", Family: "anchor", Qualifier: "x", Type: model.TypeText},
	}, Families: []catalog.Family{{Name: "info", DefaultType: model.TypeBytea}, {Name: "anchor", DefaultType: model.TypeBytea}}}
}

// memTable is a user table held in memory: hx_bi with the two rows the
// reference database had.
type memTable struct {
	cols []pgtypes.Column
	rows [][]any
}

func (m *memTable) Columns() []pgtypes.Column { return m.cols }

func (m *memTable) Scan(ctx context.Context, req pgeval.ScanRequest) (pgeval.Rows, error) {
	return &rowIter{rows: m.rows}, nil
}

// testCatalog resolves names as the gateway does: pg_catalog first, then
// public's tables; information_schema only when named.
type testCatalog struct {
	src  Source
	user map[string]pgeval.Relation
}

func (c *testCatalog) Relation(ctx context.Context, schema, name string) (pgeval.Relation, error) {
	switch schema {
	case "", "pg_catalog", "information_schema":
		if r, ok := Relation(schema, name, Static(c.src)); ok {
			return r, nil
		}
	}
	if schema == "" || schema == "public" {
		if r, ok := c.user[name]; ok {
			return r, nil
		}
	}
	full := name
	if schema != "" {
		full = schema + "." + name
	}
	return nil, sqlstate.Errorf(sqlstate.CodeUndefinedTable, "relation %q does not exist", full)
}

var biSettings = map[string]string{
	"server_version": "15.4", "server_version_num": "150004", "server_encoding": "UTF8", "client_encoding": "UTF8",
	"DateStyle": "ISO, MDY", "TimeZone": "UTC", "integer_datetimes": "on", "standard_conforming_strings": "on",
	"IntervalStyle": "postgres", "application_name": "", "is_superuser": "on", "session_authorization": "postgres",
	"default_transaction_read_only": "off", "in_hot_standby": "off", "search_path": `"$user", public`,
	"statement_timeout": "0", "idle_session_timeout": "0", "idle_in_transaction_session_timeout": "0",
	"lock_timeout": "0", "extra_float_digits": "1", "bytea_output": "hex",
	"default_transaction_isolation": "read committed", "transaction_isolation": "read committed",
	"transaction_read_only": "off", "max_identifier_length": "63", "client_min_messages": "notice",
	"timezone_abbreviations": "Default", "max_index_keys": "32",
}

func biSetting(name string) (string, bool) {
	for k, v := range biSettings {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

// canonicalSetting is a setting's name as PostgreSQL spells it (SHOW's
// column name).
func canonicalSetting(name string) string {
	for k := range biSettings {
		if strings.EqualFold(k, name) {
			return k
		}
	}
	return name
}

func biEnv(others ...*catalog.Table) *pgeval.Env {
	src := Source{Tables: append([]*catalog.Table{hxBI()}, others...), User: "postgres", Database: "cellar",
		Setting: biSetting, BackendPID: 4242}
	hx := &memTable{cols: []pgtypes.Column{{Name: "_key", OID: pgtypes.OIDText}, {Name: "info:rank", OID: pgtypes.OIDInt8},
		{Name: "anchor:x", OID: pgtypes.OIDText}}, rows: [][]any{{"a", int64(1), "x"}, {"b", int64(2), "y"}}}
	return &pgeval.Env{Catalog: &testCatalog{src: src, user: map[string]pgeval.Relation{"hx_bi": hx}},
		Setting: biSetting, User: "postgres", Database: "cellar", BackendPID: 4242, Now: time.Now()}
}

type biBlock struct {
	header, sql string
	rows        int
	cols        []string
	catalogWide bool
}

// readBI reads the blocks of queries.sql and pairs them with their lines
// of expected.txt.
func readBI(t *testing.T) []biBlock {
	t.Helper()
	qs, err := os.ReadFile(biQueries)
	if err != nil {
		t.Fatalf("the BI queries are missing (%v): tests/clients/corpus/bi holds a copy of /work/shared/clients/bi", err)
	}
	exp, err := os.ReadFile(biExpected)
	if err != nil {
		t.Fatalf("the BI queries' expected results are missing (%v): tests/clients/corpus/bi holds a copy of /work/shared/clients/bi", err)
	}
	parts := strings.Split(string(qs), "\n;;\n")
	lines := strings.Split(strings.TrimSpace(string(exp)), "\n")
	if len(parts) != len(lines) {
		t.Fatalf("%d query blocks but %d expected results", len(parts), len(lines))
	}
	var out []biBlock
	for i, p := range parts {
		header, body, _ := strings.Cut(strings.TrimLeft(p, "\n"), "\n")
		f := strings.Split(lines[i], " | ")
		if len(f) != 3 || !strings.HasPrefix(f[1], "rows=") || !strings.HasPrefix(f[2], "cols=") {
			t.Fatalf("expected.txt line %d: %q", i+1, lines[i])
		}
		if !strings.HasPrefix(header, "-- "+f[0]) {
			t.Fatalf("block %d is %q but expected.txt line %d is for %q", i+1, header, i+1, f[0])
		}
		n, err := strconv.Atoi(strings.TrimPrefix(f[1], "rows="))
		if err != nil {
			t.Fatalf("expected.txt line %d: %v", i+1, err)
		}
		var cols []string
		if c := strings.TrimPrefix(f[2], "cols="); c != "" {
			cols = strings.Split(c, ",")
		}
		out = append(out, biBlock{header: f[0], sql: body, rows: n, cols: cols, catalogWide: strings.Contains(f[0], "(catalog-wide")})
	}
	return out
}

// runBI runs one block as the gateway would: SELECTs through pgeval; SHOW
// and SET, which the session (package query) answers rather than the
// evaluator, as it does: SHOW x returns one row in column x, SET none.
func runBI(ctx context.Context, env *pgeval.Env, sql string) (cols []string, n int, err error) {
	tree, err := pg.Parse(sql)
	if err != nil {
		return nil, 0, err
	}
	for _, raw := range tree.Stmts {
		cols, n = nil, 0
		stmt := raw.Stmt
		switch {
		case stmt.GetVariableShowStmt() != nil:
			name := canonicalSetting(stmt.GetVariableShowStmt().Name)
			if _, ok := env.Setting(name); !ok {
				return nil, 0, fmt.Errorf("SHOW %s: no such setting", name)
			}
			cols, n = []string{name}, 1
			continue
		case stmt.GetVariableSetStmt() != nil:
			continue
		}
		plan, err := pgeval.Prepare(ctx, stmt, env, nil)
		if err != nil {
			return nil, 0, err
		}
		for _, c := range plan.Columns() {
			cols = append(cols, c.Name)
		}
		rows, err := plan.Run(ctx, env, nil)
		if err != nil {
			return nil, 0, err
		}
		for {
			_, err := rows.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rows.Close()
				return nil, 0, err
			}
			n++
		}
		rows.Close()
	}
	return cols, n, nil
}

// TestBIQueries runs every BI block over the emulated catalog and a
// hx_bi holding two rows, alone and among other tables, and compares the
// result's columns and, unless the block is catalog-wide, its row count
// with stock PostgreSQL 15's.
func TestBIQueries(t *testing.T) {
	blocks := readBI(t)
	for _, cfg := range []struct {
		name string
		env  *pgeval.Env
	}{{"alone", biEnv()}, {"among-others", biEnv(sampleTables()...)}} {
		t.Run(cfg.name, func(t *testing.T) { runBIBlocks(t, cfg.env, blocks) })
	}
}

func runBIBlocks(t *testing.T, env *pgeval.Env, blocks []biBlock) {
	for i, b := range blocks {
		t.Run(fmt.Sprintf("%02d", i+1), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cols, n, err := runBI(ctx, env, b.sql)
			if err != nil {
				t.Fatalf("%s: %v", b.header, err)
			}
			if strings.Join(cols, ",") != strings.Join(b.cols, ",") {
				t.Errorf("%s: columns %q, PostgreSQL's %q", b.header, cols, b.cols)
			}
			if !b.catalogWide && n != b.rows {
				t.Errorf("%s: %d rows, PostgreSQL returned %d", b.header, n, b.rows)
			}
		})
	}
}
