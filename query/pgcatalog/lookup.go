package pgcatalog

import "strings"

// The evaluator's catalog functions (regclass casts, pg_get_indexdef,
// pg_get_constraintdef, pg_table_is_visible ...) can answer from these
// instead of scanning the relations.

// ClassOID returns the OID of relation schema.name (a user table, its
// primary-key index, or an emulated relation); schema "" searches
// pg_catalog, then public.
func (src Source) ClassOID(schema, name string) (uint32, bool) {
	for _, c := range newSnapshot(src).classes {
		if c.name == name && (c.schema() == schema || schema == "" && (c.ns == NamespacePgCatalog || c.ns == NamespacePublic)) {
			if schema == "" && c.ns == NamespacePublic {
				// pg_catalog comes first on the search path.
				if _, ok := data.rels["pg_catalog."+name]; ok {
					continue
				}
			}
			return c.oid, true
		}
	}
	return 0, false
}

// Class returns the schema, name and kind ('r', 'v', 'i') of the
// relation with OID oid.
func (src Source) Class(oid uint32) (schema, name string, kind byte, ok bool) {
	for _, c := range newSnapshot(src).classes {
		if c.oid == oid {
			return c.schema(), c.name, c.kind, true
		}
	}
	return "", "", 0, false
}

// RegclassName is how a regclass value prints: the name, qualified
// unless its schema is on the default search path (pg_catalog, public).
func (src Source) RegclassName(oid uint32) (string, bool) {
	schema, name, _, ok := src.Class(oid)
	if !ok {
		return "", false
	}
	if schema == "pg_catalog" || schema == "public" {
		return quoteIdent(name), true
	}
	return quoteIdent(schema) + "." + quoteIdent(name), true
}

// IndexDefinition is pg_get_indexdef(oid, column, pretty): the CREATE
// INDEX statement of a primary-key index for column 0, else the name of
// its column-th key column.
func (src Source) IndexDefinition(oid uint32, column int) (string, bool) {
	for _, c := range newSnapshot(src).classes {
		if c.index == nil || c.index.oid != oid {
			continue
		}
		keys := keyNames(c)
		if column == 0 {
			return IndexDef(c.name, keys), true
		}
		if column > 0 && column <= len(keys) {
			return quoteIdent(keys[column-1]), true
		}
		return "", true
	}
	return "", false
}

// ConstraintDefinition is pg_get_constraintdef(oid): "PRIMARY KEY (k1,
// k2)" for a table's primary-key constraint.
func (src Source) ConstraintDefinition(oid uint32) (string, bool) {
	for _, c := range newSnapshot(src).classes {
		if c.index == nil || ConstraintOID(c.name) != oid {
			continue
		}
		keys := keyNames(c)
		for i, k := range keys {
			keys[i] = quoteIdent(k)
		}
		return "PRIMARY KEY (" + strings.Join(keys, ", ") + ")", true
	}
	return "", false
}

// TypeOID returns the OID of a builtin type by its pg_type name, or of a
// table's row type by the table's name.
func (src Source) TypeOID(name string) (uint32, bool) {
	for _, t := range data.types {
		if t.name == name && t.namespace == NamespacePgCatalog {
			return t.oid, true
		}
	}
	for _, t := range src.Tables {
		if t != nil && t.Name == name {
			return RowTypeOID(name), true
		}
	}
	return 0, false
}

// TypeName returns the pg_type name of a builtin type or a table's row
// type.
func (src Source) TypeName(oid uint32) (string, bool) {
	if t, ok := data.types[oid]; ok {
		return t.name, true
	}
	for _, t := range src.Tables {
		if t != nil && RowTypeOID(t.Name) == oid {
			return t.Name, true
		}
	}
	return "", false
}

// ProcName returns the name of a function in pg_proc.
func ProcName(oid uint32) (string, bool) {
	n, ok := data.procNames[oid]
	return n, ok
}

// FunctionText returns what PostgreSQL's pg_get_function_result,
// pg_get_function_arguments and pg_get_function_identity_arguments
// print for a function in pg_proc.
func FunctionText(oid uint32) (result, args, identity string, ok bool) {
	t, ok := data.procText[oid]
	return t[0], t[1], t[2], ok
}

// ProcOID returns the OID of a function in pg_proc by its name.
func ProcOID(name string) (uint32, bool) {
	for oid, n := range data.procNames {
		if n == name {
			return oid, true
		}
	}
	return 0, false
}
