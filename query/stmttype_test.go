package query

import (
	"strings"
	"testing"
)

// TestStatementType: Parse classifies each statement of a query string
// for metrics, before any is planned.
func TestStatementType(t *testing.T) {
	s, err := NewSession(SessionOptions{User: "cellar", Database: "cellar"})
	if err != nil {
		t.Fatal(err)
	}
	for sql, want := range map[string]string{
		"SELECT * FROM users WHERE _key = 'a'": TypeSelect,
		"select 1":                             TypeSelect,
		"SELECT typname FROM pg_type":          TypeCatalog,
		"SELECT * FROM pg_catalog.pg_class c JOIN pg_namespace n ON true": TypeCatalog,
		"SELECT table_name FROM information_schema.tables":                TypeCatalog,
		"SELECT * FROM users u JOIN pg_type t ON true":                    TypeSelect,
		"INSERT INTO users (_key) VALUES ('a')":                           TypeInsert,
		"UPSERT INTO users (_key) VALUES ('a')":                           TypeUpsert,
		"UPDATE users SET \"profile:name\" = 'x' WHERE _key = 'a'":        TypeUpdate,
		"DELETE FROM users WHERE _key = 'a'":                              TypeDelete,
		"CREATE TABLE t (FAMILY f)":                                       TypeDDL,
		"DROP TABLE t":                                                    TypeDDL,
		"SHOW TABLES":                                                     TypeCatalog,
		"BEGIN":                                                           TypeOther,
		"SET application_name = 'x'":                                      TypeOther,
		"SHOW server_version":                                             TypeOther,
	} {
		stmts, err := s.Parse(sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if len(stmts) != 1 || stmts[0].Type() != want {
			t.Errorf("%s: type %s, want %s", sql, stmts[0].Type(), want)
		}
	}
	stmts, err := s.Parse("BEGIN; INSERT INTO t (_key) VALUES ('a'); COMMIT")
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, st := range stmts {
		types = append(types, st.Type())
	}
	if got := strings.Join(types, ","); got != "OTHER,INSERT,OTHER" {
		t.Fatalf("a transaction's statements: %s", got)
	}
}
