package pgcatalog

import (
	"fmt"
	"sort"

	"github.com/cellardb/cellar/query/pgtypes"
)

// sqlTypeName is information_schema's data_type for a type.
func sqlTypeName(oid uint32) string {
	switch oid {
	case pgtypes.OIDBool:
		return "boolean"
	case pgtypes.OIDInt2:
		return "smallint"
	case pgtypes.OIDInt4:
		return "integer"
	case pgtypes.OIDInt8:
		return "bigint"
	case pgtypes.OIDFloat4:
		return "real"
	case pgtypes.OIDFloat8:
		return "double precision"
	case pgtypes.OIDVarchar:
		return "character varying"
	case 1042:
		return "character"
	case pgtypes.OIDTimestamptz:
		return "timestamp with time zone"
	case pgtypes.OIDTimestamp:
		return "timestamp without time zone"
	case 1083:
		return "time without time zone"
	case 1266:
		return "time with time zone"
	case 1560:
		return "bit"
	case 1562:
		return "bit varying"
	case oidChar:
		return `"char"`
	}
	t, ok := data.types[oid]
	switch {
	case !ok:
		return "USER-DEFINED"
	case t.category == "A" && t.elem != 0 && t.len == -1:
		return "ARRAY"
	case t.namespace != NamespacePgCatalog:
		return "USER-DEFINED"
	}
	return t.name
}

func isSchemata(s *snapshot, d *relDef) [][]any {
	var rows [][]any
	for _, ns := range []uint32{NamespaceInformationSchema, NamespacePgCatalog, NamespacePgToast, NamespacePublic} {
		owner := s.user
		if ns == NamespacePublic {
			owner = "pg_database_owner"
		}
		rows = append(rows, s.row(d, "catalog_name", s.db, "schema_name", nsName(ns), "schema_owner", owner))
	}
	return rows
}

func yesNo(b bool) string {
	if b {
		return "YES"
	}
	return "NO"
}

func isTables(s *snapshot, d *relDef) [][]any {
	var rows [][]any
	for _, c := range s.classes {
		if c.kind != 'r' && c.kind != 'v' {
			continue
		}
		typ := "BASE TABLE"
		if c.kind == 'v' {
			typ = "VIEW"
		}
		rows = append(rows, s.row(d, "table_catalog", s.db, "table_schema", c.schema(), "table_name", c.name,
			"table_type", typ, "is_insertable_into", yesNo(c.kind == 'r'), "is_typed", "NO"))
	}
	return rows
}

func collationName(oid uint32) string {
	d := data.rels["pg_catalog.pg_collation"]
	for _, r := range data.static["pg_collation"] {
		if r[d.index["oid"]] == int64(oid) {
			name, _ := r[d.index["collname"]].(string)
			return name
		}
	}
	return ""
}

func isColumns(s *snapshot, d *relDef) [][]any {
	var rows [][]any
	for _, c := range s.classes {
		if c.kind != 'r' && c.kind != 'v' {
			continue
		}
		for i, col := range c.cols {
			num := int64(i + 1)
			typ, typmod := col.typ, col.typmod
			kv := []any{"table_catalog", s.db, "table_schema", c.schema(), "table_name", c.name, "column_name", col.name,
				"ordinal_position", num, "is_nullable", yesNo(!col.notNull), "dtd_identifier", itoa(num),
				"is_self_referencing", "NO", "is_identity", "NO", "identity_cycle", "NO", "is_generated", "NEVER",
				"is_updatable", yesNo(c.kind == 'r')}
			if t, ok := data.types[typ]; ok && t.typtype == "d" {
				kv = append(kv, "domain_catalog", s.db, "domain_schema", nsName(t.namespace), "domain_name", t.name)
				typ, typmod = t.basetype, t.typmod
			}
			udt := data.types[typ]
			if udt != nil {
				kv = append(kv, "udt_catalog", s.db, "udt_schema", nsName(udt.namespace), "udt_name", udt.name)
			}
			kv = append(kv, "data_type", sqlTypeName(typ))
			switch typ {
			case pgtypes.OIDText, pgtypes.OIDVarchar, 1042:
				if typmod > 4 {
					kv = append(kv, "character_maximum_length", typmod-4, "character_octet_length", 4*(typmod-4))
				} else {
					kv = append(kv, "character_octet_length", 1073741824)
				}
			case pgtypes.OIDInt2:
				kv = append(kv, "numeric_precision", 16, "numeric_precision_radix", 2, "numeric_scale", 0)
			case pgtypes.OIDInt4:
				kv = append(kv, "numeric_precision", 32, "numeric_precision_radix", 2, "numeric_scale", 0)
			case pgtypes.OIDInt8:
				kv = append(kv, "numeric_precision", 64, "numeric_precision_radix", 2, "numeric_scale", 0)
			case pgtypes.OIDFloat4:
				kv = append(kv, "numeric_precision", 24, "numeric_precision_radix", 2)
			case pgtypes.OIDFloat8:
				kv = append(kv, "numeric_precision", 53, "numeric_precision_radix", 2)
			case pgtypes.OIDNumeric:
				kv = append(kv, "numeric_precision_radix", 10)
				if typmod > 4 {
					kv = append(kv, "numeric_precision", (typmod-4)>>16, "numeric_scale", (typmod-4)&0xffff)
				}
			case pgtypes.OIDDate:
				kv = append(kv, "datetime_precision", 0)
			case pgtypes.OIDTimestamptz, pgtypes.OIDTimestamp, 1083, 1266, oidInterval:
				prec := int64(6)
				if typmod >= 0 {
					prec = typmod
				}
				kv = append(kv, "datetime_precision", prec)
			}
			if col.coll != 0 && col.coll != 100 {
				kv = append(kv, "collation_catalog", s.db, "collation_schema", "pg_catalog", "collation_name", collationName(col.coll))
			}
			rows = append(rows, s.row(d, kv...))
		}
	}
	return rows
}

// pkTables are the user tables that have a primary key.
func (s *snapshot) pkTables() []*class {
	var out []*class
	for _, c := range s.classes {
		if c.table != nil && c.index != nil {
			out = append(out, c)
		}
	}
	return out
}

func notNullName(c *class, attnum int) string {
	return fmt.Sprintf("%d_%d_%d_not_null", c.ns, c.oid, attnum)
}

func isTableConstraints(s *snapshot, d *relDef) [][]any {
	var rows [][]any
	for _, c := range s.classes {
		if c.table == nil {
			continue
		}
		base := []any{"constraint_catalog", s.db, "constraint_schema", c.schema(), "table_catalog", s.db,
			"table_schema", c.schema(), "table_name", c.name, "is_deferrable", "NO", "initially_deferred", "NO", "enforced", "YES"}
		if c.index != nil {
			rows = append(rows, s.row(d, append(base, "constraint_name", c.index.name, "constraint_type", "PRIMARY KEY")...))
		}
		for i, col := range c.cols {
			if col.notNull {
				rows = append(rows, s.row(d, append(base, "constraint_name", notNullName(c, i+1), "constraint_type", "CHECK")...))
			}
		}
	}
	return rows
}

func isCheckConstraints(s *snapshot, d *relDef) [][]any {
	var rows [][]any
	for _, c := range s.classes {
		if c.table == nil {
			continue
		}
		for i, col := range c.cols {
			if col.notNull {
				rows = append(rows, s.row(d, "constraint_catalog", s.db, "constraint_schema", c.schema(),
					"constraint_name", notNullName(c, i+1), "check_clause", quoteIdent(col.name)+" IS NOT NULL"))
			}
		}
	}
	return rows
}

func isKeyColumnUsage(s *snapshot, d *relDef) [][]any {
	var rows [][]any
	for _, c := range s.pkTables() {
		for i, col := range c.index.cols {
			rows = append(rows, s.row(d, "constraint_catalog", s.db, "constraint_schema", c.schema(),
				"constraint_name", c.index.name, "table_catalog", s.db, "table_schema", c.schema(), "table_name", c.name,
				"column_name", col.name, "ordinal_position", i+1))
		}
	}
	return rows
}

func isConstraintColumnUsage(s *snapshot, d *relDef) [][]any {
	var rows [][]any
	for _, c := range s.pkTables() {
		names := keyNames(c)
		sort.Strings(names)
		for _, n := range names {
			rows = append(rows, s.row(d, "table_catalog", s.db, "table_schema", c.schema(), "table_name", c.name,
				"column_name", n, "constraint_catalog", s.db, "constraint_schema", c.schema(), "constraint_name", c.index.name))
		}
	}
	return rows
}

func isConstraintTableUsage(s *snapshot, d *relDef) [][]any {
	var rows [][]any
	for _, c := range s.pkTables() {
		rows = append(rows, s.row(d, "table_catalog", s.db, "table_schema", c.schema(), "table_name", c.name,
			"constraint_catalog", s.db, "constraint_schema", c.schema(), "constraint_name", c.index.name))
	}
	return rows
}

func isCharacterSets(s *snapshot, d *relDef) [][]any {
	return [][]any{s.row(d, "character_set_name", "UTF8", "character_repertoire", "UCS", "form_of_use", "UTF8",
		"default_collate_catalog", s.db)}
}

func isTablePrivileges(s *snapshot, d *relDef) [][]any {
	var rows [][]any
	for _, c := range s.classes {
		if c.table == nil {
			continue
		}
		for _, p := range []string{"INSERT", "SELECT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER"} {
			rows = append(rows, s.row(d, "grantor", s.user, "grantee", s.user, "table_catalog", s.db,
				"table_schema", c.schema(), "table_name", c.name, "privilege_type", p, "is_grantable", "YES",
				"with_hierarchy", yesNo(p == "SELECT")))
		}
	}
	return rows
}

func isEnabledRoles(s *snapshot, d *relDef) [][]any {
	return [][]any{s.row(d, "role_name", s.user)}
}

func sortByFirst(rows [][]string) {
	sort.Slice(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
}
