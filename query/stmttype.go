package query

import (
	"fmt"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// Statement types, as Statement.Type names them for metrics. CATALOG is a
// read of the catalog only: a SELECT whose tables are all in pg_catalog or
// information_schema (or named pg_*), and the dialect's SHOW TABLES,
// SHOW CREATE TABLE and DESCRIBE. OTHER is the rest: transaction control,
// SET and SHOW of settings, EXPLAIN, COPY, cursors.
const (
	TypeSelect  = "SELECT"
	TypeInsert  = "INSERT"
	TypeUpsert  = "UPSERT"
	TypeUpdate  = "UPDATE"
	TypeDelete  = "DELETE"
	TypeDDL     = "DDL"
	TypeCatalog = "CATALOG"
	TypeOther   = "OTHER"
)

// Type is the statement's type, one of the Type constants; it is known
// from the parse, before planning.
func (st *Statement) Type() string {
	if st.typ == "" {
		return TypeOther
	}
	return st.typ
}

// statementType classifies a parsed statement (n is nil for the
// dialect's statements, which are read when planned).
func statementType(p piece, n *pg.Node) string {
	if n == nil {
		word, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(p.text)), " ")
		switch word {
		case "create", "alter", "drop":
			return TypeDDL
		}
		return TypeCatalog
	}
	switch n.Node.(type) {
	case *pg.Node_SelectStmt:
		if readsCatalogOnly(n) {
			return TypeCatalog
		}
		return TypeSelect
	case *pg.Node_InsertStmt:
		if p.upsert {
			return TypeUpsert
		}
		return TypeInsert
	case *pg.Node_UpdateStmt:
		return TypeUpdate
	case *pg.Node_DeleteStmt:
		return TypeDelete
	}
	name := strings.TrimPrefix(fmt.Sprintf("%T", n.Node), "*pg_query.Node_")
	for _, prefix := range []string{"Create", "Alter", "Drop", "Index", "View", "Truncate", "Rename"} {
		if strings.HasPrefix(name, prefix) {
			return TypeDDL
		}
	}
	return TypeOther
}

// readsCatalogOnly reports whether a query names tables and all of them
// are the catalog's.
func readsCatalogOnly(n *pg.Node) bool {
	catalog, user := false, false
	walk(n, func(m protoMessage) bool {
		if rv, ok := m.(*pg.RangeVar); ok {
			schema, rel := strings.ToLower(rv.Schemaname), strings.ToLower(rv.Relname)
			if schema == "pg_catalog" || schema == "information_schema" || (schema == "" && strings.HasPrefix(rel, "pg_")) {
				catalog = true
			} else {
				user = true
			}
		}
		return !user
	})
	return catalog && !user
}
