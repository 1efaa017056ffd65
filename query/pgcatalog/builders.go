package pgcatalog

import (
	"fmt"
	"strings"
	"time"

	"github.com/cellardb/cellar/query/pgeval"
	"github.com/cellardb/cellar/query/pgtypes"
)

type builder func(s *snapshot, d *relDef) [][]any

var builders = map[string]builder{
	"pg_catalog.pg_namespace":                    pgNamespace,
	"pg_catalog.pg_class":                        pgClass,
	"pg_catalog.pg_attribute":                    pgAttribute,
	"pg_catalog.pg_type":                         pgType,
	"pg_catalog.pg_index":                        pgIndex,
	"pg_catalog.pg_constraint":                   pgConstraint,
	"pg_catalog.pg_database":                     pgDatabase,
	"pg_catalog.pg_authid":                       pgAuthid,
	"pg_catalog.pg_roles":                        pgRoles,
	"pg_catalog.pg_user":                         pgUser,
	"pg_catalog.pg_shadow":                       pgShadow,
	"pg_catalog.pg_settings":                     pgSettings,
	"pg_catalog.pg_proc":                         func(s *snapshot, d *relDef) [][]any { return data.procRows },
	"pg_catalog.pg_am":                           staticRows("pg_am"),
	"pg_catalog.pg_opclass":                      staticRows("pg_opclass"),
	"pg_catalog.pg_collation":                    staticRows("pg_collation"),
	"pg_catalog.pg_language":                     staticRows("pg_language"),
	"pg_catalog.pg_range":                        staticRows("pg_range"),
	"pg_catalog.pg_tablespace":                   staticRows("pg_tablespace"),
	"pg_catalog.pg_description":                  staticRows("pg_description"),
	"pg_catalog.pg_extension":                    pgExtension,
	"pg_catalog.pg_available_extensions":         pgAvailableExtensions,
	"pg_catalog.pg_tables":                       pgTables,
	"pg_catalog.pg_views":                        pgViews,
	"pg_catalog.pg_indexes":                      pgIndexes,
	"pg_catalog.pg_stat_user_tables":             statTables(userRels),
	"pg_catalog.pg_stat_sys_tables":              statTables(sysRels),
	"pg_catalog.pg_stat_all_tables":              statTables(allRels),
	"pg_catalog.pg_statio_user_tables":           statTables(userRels),
	"pg_catalog.pg_statio_all_tables":            statTables(allRels),
	"pg_catalog.pg_stat_user_indexes":            statIndexes,
	"pg_catalog.pg_stat_all_indexes":             statIndexes,
	"pg_catalog.pg_statio_user_indexes":          statIndexes,
	"pg_catalog.pg_statio_all_indexes":           statIndexes,
	"pg_catalog.pg_stat_database":                pgStatDatabase,
	"pg_catalog.pg_stat_activity":                pgStatActivity,
	"pg_catalog.pg_timezone_names":               pgTimezoneNames,
	"pg_catalog.pg_timezone_abbrevs":             pgTimezoneAbbrevs,
	"pg_catalog.pg_prepared_statements":          pgPreparedStatements,
	"information_schema.schemata":                isSchemata,
	"information_schema.tables":                  isTables,
	"information_schema.columns":                 isColumns,
	"information_schema.table_constraints":       isTableConstraints,
	"information_schema.key_column_usage":        isKeyColumnUsage,
	"information_schema.constraint_column_usage": isConstraintColumnUsage,
	"information_schema.constraint_table_usage":  isConstraintTableUsage,
	"information_schema.check_constraints":       isCheckConstraints,
	"information_schema.character_sets":          isCharacterSets,
	"information_schema.table_privileges":        isTablePrivileges,
	"information_schema.enabled_roles":           isEnabledRoles,
}

func staticRows(name string) builder {
	return func(s *snapshot, d *relDef) [][]any { return data.static[name] }
}

func pgNamespace(s *snapshot, d *relDef) [][]any {
	acl := textArray(oidAclitem, s.user+"=UC/"+s.user, "=U/"+s.user)
	return [][]any{
		s.row(d, "oid", NamespacePgToast, "nspname", "pg_toast", "nspowner", SuperuserOID),
		s.row(d, "oid", NamespacePgCatalog, "nspname", "pg_catalog", "nspowner", SuperuserOID, "nspacl", acl),
		s.row(d, "oid", NamespacePublic, "nspname", "public", "nspowner", pgDatabaseOwner,
			"nspacl", textArray(oidAclitem, "pg_database_owner=UC/pg_database_owner", "=U/pg_database_owner")),
		s.row(d, "oid", NamespaceInformationSchema, "nspname", "information_schema", "nspowner", SuperuserOID, "nspacl", acl),
	}
}

const pgDatabaseOwner uint32 = 6171

var sharedCatalogs = map[string]bool{"pg_authid": true, "pg_auth_members": true, "pg_database": true, "pg_tablespace": true,
	"pg_shdescription": true, "pg_shdepend": true, "pg_shseclabel": true, "pg_subscription": true}

func pgClass(s *snapshot, d *relDef) [][]any {
	var rows [][]any
	for _, c := range s.classes {
		kv := []any{"oid", c.oid, "relname", c.name, "relnamespace", c.ns, "reltype", c.rowType, "reloftype", 0,
			"relowner", SuperuserOID, "relkind", c.kind, "relnatts", len(c.cols), "relpersistence", "p",
			"relispopulated", true, "relreplident", "n", "relpages", 0, "reltuples", float64(-1)}
		switch {
		case c.table != nil:
			kv = append(kv, "relam", 2, "relfilenode", c.oid, "relhasindex", c.index != nil, "relreplident", "d", "relminmxid", 1)
		case c.kind == 'i':
			kv = append(kv, "relam", 403, "relfilenode", c.oid, "relpages", 1, "reltuples", float64(0))
		case c.kind == 'r':
			kv = append(kv, "relam", 2, "relisshared", sharedCatalogs[c.name], "relminmxid", 1, "relacl", catalogACL(s.user))
		case c.kind == 'v':
			kv = append(kv, "relhasrules", true, "relacl", catalogACL(s.user))
		}
		rows = append(rows, s.row(d, kv...))
	}
	return rows
}

// catalogACL is the privileges on a catalog relation: its owner has
// all, everyone may read.
func catalogACL(owner string) pgeval.Array {
	return textArray(oidAclitem, owner+"=arwdDxt/"+owner, "=r/"+owner)
}

// systemColumns are the system columns of every table, attnum -6 to -1.
var systemColumns = []colDef{
	{name: "tableoid", typ: oidOid, typmod: -1}, {name: "cmax", typ: oidCid, typmod: -1},
	{name: "xmax", typ: oidXid, typmod: -1}, {name: "cmin", typ: oidCid, typmod: -1},
	{name: "xmin", typ: oidXid, typmod: -1}, {name: "ctid", typ: oidTid, typmod: -1},
}

func pgAttribute(s *snapshot, d *relDef) [][]any {
	var rows [][]any
	add := func(c *class, col colDef, num int64, system bool) {
		t := data.types[col.typ]
		kv := []any{"attrelid", c.oid, "attname", col.name, "atttypid", col.typ, "attstattarget", -1, "attnum", num,
			"attcacheoff", -1, "atttypmod", col.typmod, "attnotnull", col.notNull || system, "attcollation", col.coll,
			"attislocal", true, "attcompression", "", "attidentity", "", "attgenerated", ""}
		if system {
			kv = append(kv, "attstattarget", 0)
		}
		if t != nil {
			kv = append(kv, "attlen", t.len, "attbyval", t.byval, "attalign", t.align, "attstorage", t.storage)
			if t.category == "A" && t.len == -1 {
				kv = append(kv, "attndims", 1)
			}
		}
		rows = append(rows, s.row(d, kv...))
	}
	for _, c := range s.classes {
		if c.def != nil && !s.src.CatalogColumns {
			continue
		}
		if c.kind == 'r' {
			for i, col := range systemColumns {
				add(c, col, int64(i-len(systemColumns)), true)
			}
		}
		for i, col := range c.cols {
			add(c, col, int64(i+1), false)
		}
	}
	return rows
}

func pgType(s *snapshot, d *relDef) [][]any {
	rows := append([][]any(nil), data.typeRows...)
	// A user table's row type and its array type, made like pg_class's.
	var comp, arr []any
	for _, r := range data.typeRows {
		switch i64(r[d.index["oid"]]) {
		case 83: // pg_class
			comp = r
		case 273: // _pg_class
			arr = r
		}
	}
	if comp == nil || arr == nil {
		return rows
	}
	patch := func(base []any, kv ...any) []any {
		out := append([]any(nil), base...)
		for i := 0; i+1 < len(kv); i += 2 {
			name, _ := kv[i].(string)
			out[d.index[name]] = normalize(kv[i+1])
		}
		return out
	}
	for _, c := range s.classes {
		if c.table == nil {
			continue
		}
		rows = append(rows,
			patch(comp, "oid", c.rowType, "typname", c.name, "typnamespace", c.ns, "typrelid", c.oid, "typarray", c.arrayType),
			patch(arr, "oid", c.arrayType, "typname", "_"+c.name, "typnamespace", c.ns, "typelem", c.rowType))
	}
	return rows
}

func keyInfo(c *class) (colls, opclasses []uint32) {
	for _, col := range c.index.cols {
		colls = append(colls, col.coll)
		opclasses = append(opclasses, data.opclass[col.typ])
	}
	return
}

func pgIndex(s *snapshot, d *relDef) [][]any {
	var rows [][]any
	for _, c := range s.classes {
		if c.table == nil || c.index == nil {
			continue
		}
		colls, ops := keyInfo(c)
		rows = append(rows, s.row(d, "indexrelid", c.index.oid, "indrelid", c.oid, "indnatts", len(c.keys),
			"indnkeyatts", len(c.keys), "indisunique", true, "indisprimary", true, "indimmediate", true,
			"indisvalid", true, "indisready", true, "indislive", true, "indkey", int2vector(c.keys),
			"indcollation", oidvector(colls), "indclass", oidvector(ops), "indoption", int2vector(make([]int64, len(c.keys)))))
	}
	return rows
}

func pgConstraint(s *snapshot, d *relDef) [][]any {
	var rows [][]any
	for _, c := range s.classes {
		if c.table == nil || c.index == nil {
			continue
		}
		key := pgeval.Array{Elem: pgtypes.OIDInt2}
		for _, k := range c.keys {
			key.Vals = append(key.Vals, k)
		}
		rows = append(rows, s.row(d, "oid", ConstraintOID(c.name), "conname", c.index.name, "connamespace", c.ns,
			"contype", "p", "convalidated", true, "conrelid", c.oid, "conindid", c.index.oid, "confupdtype", " ",
			"confdeltype", " ", "confmatchtype", " ", "conislocal", true, "connoinherit", true, "conkey", key))
	}
	return rows
}

func (s *snapshot) databases() []string {
	out := []string{s.db}
	for _, n := range s.src.Databases {
		if n != s.db {
			out = append(out, n)
		}
	}
	return out
}

func pgDatabase(s *snapshot, d *relDef) [][]any {
	acl := textArray(oidAclitem, "=c/"+s.user, s.user+"=CTc/"+s.user)
	mk := func(oid uint32, name string, template bool) []any {
		kv := []any{"oid", oid, "datname", name, "datdba", SuperuserOID, "encoding", 6, "datlocprovider", "c",
			"datistemplate", template, "datallowconn", name != "template0", "datconnlimit", -1, "datfrozenxid", 716,
			"datminmxid", 1, "dattablespace", 1663, "datcollate", "C.UTF-8", "datctype", "C.UTF-8"}
		if template {
			kv = append(kv, "datacl", acl)
		}
		return s.row(d, kv...)
	}
	var rows [][]any
	for _, n := range s.databases() {
		rows = append(rows, mk(DatabaseOID(n), n, false))
	}
	return append(rows, mk(1, "template1", true), mk(4, "template0", true))
}

// predefinedRoles are PostgreSQL 15's.
var predefinedRoles = []struct {
	oid  uint32
	name string
}{{6171, "pg_database_owner"}, {6181, "pg_read_all_data"}, {6182, "pg_write_all_data"}, {3373, "pg_monitor"},
	{3374, "pg_read_all_settings"}, {3375, "pg_read_all_stats"}, {3377, "pg_stat_scan_tables"},
	{4569, "pg_read_server_files"}, {4570, "pg_write_server_files"}, {4571, "pg_execute_server_program"},
	{4200, "pg_signal_backend"}, {4544, "pg_checkpoint"}}

func (s *snapshot) roles(d *relDef, mk func(oid uint32, name string, super bool) []any) [][]any {
	rows := [][]any{mk(SuperuserOID, s.user, true)}
	for _, r := range predefinedRoles {
		rows = append(rows, mk(r.oid, r.name, false))
	}
	return rows
}

func pgAuthid(s *snapshot, d *relDef) [][]any {
	return s.roles(d, func(oid uint32, name string, super bool) []any {
		return s.row(d, "oid", oid, "rolname", name, "rolsuper", super, "rolinherit", true, "rolcreaterole", super,
			"rolcreatedb", super, "rolcanlogin", super, "rolreplication", super, "rolbypassrls", super, "rolconnlimit", -1)
	})
}

func pgRoles(s *snapshot, d *relDef) [][]any {
	return s.roles(d, func(oid uint32, name string, super bool) []any {
		return s.row(d, "oid", oid, "rolname", name, "rolsuper", super, "rolinherit", true, "rolcreaterole", super,
			"rolcreatedb", super, "rolcanlogin", super, "rolreplication", super, "rolbypassrls", super, "rolconnlimit", -1,
			"rolpassword", "********")
	})
}

func pgUser(s *snapshot, d *relDef) [][]any {
	return [][]any{s.row(d, "usename", s.user, "usesysid", SuperuserOID, "usecreatedb", true, "usesuper", true,
		"userepl", true, "usebypassrls", true, "passwd", "********")}
}

func pgShadow(s *snapshot, d *relDef) [][]any {
	return [][]any{s.row(d, "usename", s.user, "usesysid", SuperuserOID, "usecreatedb", true, "usesuper", true,
		"userepl", true, "usebypassrls", true)}
}

func (s *snapshot) settings() []Setting {
	if s.src.Settings != nil {
		return s.src.Settings()
	}
	var out []Setting
	if s.src.Setting == nil {
		return out
	}
	for _, meta := range data.settingList() {
		if v, ok := s.src.Setting(meta[0]); ok {
			out = append(out, Setting{Name: meta[0], Value: v})
		}
	}
	return out
}

func (b *builtin) settingList() [][]string {
	out := make([][]string, 0, len(b.settings))
	for _, m := range b.settings {
		out = append(out, m)
	}
	sortByFirst(out)
	return out
}

func pgSettings(s *snapshot, d *relDef) [][]any {
	var rows [][]any
	for _, st := range s.settings() {
		meta, ok := data.settings[strings.ToLower(st.Name)]
		name := st.Name
		kv := []any{"name", name, "setting", st.Value, "reset_val", st.Value, "boot_val", st.Value, "source", "default",
			"pending_restart", false}
		if ok {
			v := func(i int) any {
				if meta[i] == null {
					return nil
				}
				return meta[i]
			}
			enum := v(9)
			if e, ok := enum.(string); ok {
				enum = textArray(pgtypes.OIDText, splitArray(e)...)
			}
			if meta[10] != null && meta[10] != st.Value && meta[5] != "internal" {
				kv = append(kv, "source", "session")
			}
			kv = append(kv, "name", meta[0], "unit", v(1), "category", v(2), "short_desc", v(3), "extra_desc", v(4),
				"context", v(5), "vartype", v(6), "min_val", v(7), "max_val", v(8), "enumvals", enum, "boot_val", v(10))
		} else {
			ctx := "user"
			if st.ReadOnly {
				ctx = "internal"
			}
			kv = append(kv, "category", "Customized Options", "short_desc", st.Description, "context", ctx, "vartype", "string")
		}
		rows = append(rows, s.row(d, kv...))
	}
	return rows
}

func pgExtension(s *snapshot, d *relDef) [][]any {
	return [][]any{s.row(d, "oid", 13559, "extname", "plpgsql", "extowner", SuperuserOID, "extnamespace", NamespacePgCatalog,
		"extrelocatable", false, "extversion", "1.0")}
}

func pgAvailableExtensions(s *snapshot, d *relDef) [][]any {
	return [][]any{s.row(d, "name", "plpgsql", "default_version", "1.0", "installed_version", "1.0",
		"comment", "PL/pgSQL procedural language")}
}

func pgTables(s *snapshot, d *relDef) [][]any {
	var rows [][]any
	for _, c := range s.classes {
		if c.kind == 'r' {
			rows = append(rows, s.row(d, "schemaname", c.schema(), "tablename", c.name, "tableowner", s.user,
				"hasindexes", c.index != nil, "hasrules", false, "hastriggers", false, "rowsecurity", false))
		}
	}
	return rows
}

func pgViews(s *snapshot, d *relDef) [][]any {
	var rows [][]any
	for _, c := range s.classes {
		if c.kind == 'v' {
			rows = append(rows, s.row(d, "schemaname", c.schema(), "viewname", c.name, "viewowner", s.user))
		}
	}
	return rows
}

// IndexDef is pg_get_indexdef's text for table name's primary-key index
// over the key columns keys.
func IndexDef(name string, keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = quoteIdent(k)
	}
	return fmt.Sprintf("CREATE UNIQUE INDEX %s ON public.%s USING btree (%s)", quoteIdent(name+"_pkey"), quoteIdent(name),
		strings.Join(q, ", "))
}

func keyNames(c *class) []string {
	var out []string
	for _, col := range c.index.cols {
		out = append(out, col.name)
	}
	return out
}

func pgIndexes(s *snapshot, d *relDef) [][]any {
	var rows [][]any
	for _, c := range s.classes {
		if c.table != nil && c.index != nil {
			rows = append(rows, s.row(d, "schemaname", c.schema(), "tablename", c.name, "indexname", c.index.name,
				"indexdef", IndexDef(c.name, keyNames(c))))
		}
	}
	return rows
}

type relFilter func(c *class) bool

func userRels(c *class) bool { return c.kind == 'r' && c.table != nil }
func sysRels(c *class) bool  { return c.kind == 'r' && c.table == nil }
func allRels(c *class) bool  { return c.kind == 'r' }

// statRow fills a statistics view's counters with zeros.
func (s *snapshot) statRow(d *relDef, kv ...any) []any {
	row := s.row(d, kv...)
	for i, c := range d.cols {
		if row[i] == nil && (c.typ == pgtypes.OIDInt8 || c.typ == pgtypes.OIDInt4) {
			row[i] = int64(0)
		}
		if row[i] == nil && c.typ == pgtypes.OIDFloat8 {
			row[i] = float64(0)
		}
	}
	return row
}

func statTables(f relFilter) builder {
	return func(s *snapshot, d *relDef) [][]any {
		var rows [][]any
		for _, c := range s.classes {
			if f(c) {
				rows = append(rows, s.statRow(d, "relid", c.oid, "schemaname", c.schema(), "relname", c.name))
			}
		}
		return rows
	}
}

func statIndexes(s *snapshot, d *relDef) [][]any {
	var rows [][]any
	for _, c := range s.classes {
		if c.table != nil && c.index != nil {
			rows = append(rows, s.statRow(d, "relid", c.oid, "indexrelid", c.index.oid, "schemaname", c.schema(),
				"relname", c.name, "indexrelname", c.index.name))
		}
	}
	return rows
}

func (s *snapshot) sessions() []Session {
	if s.src.Sessions != nil {
		return s.src.Sessions()
	}
	app := ""
	if s.src.Setting != nil {
		app, _ = s.src.Setting("application_name")
	}
	return []Session{{PID: s.src.BackendPID, User: s.user, Database: s.db, ApplicationName: app, State: "active"}}
}

func pgStatDatabase(s *snapshot, d *relDef) [][]any {
	rows := [][]any{s.statRow(d, "datid", 0)}
	n := map[string]int{}
	for _, ss := range s.sessions() {
		n[ss.Database]++
	}
	for _, db := range s.databases() {
		rows = append(rows, s.statRow(d, "datid", DatabaseOID(db), "datname", db, "numbackends", n[db]))
	}
	return append(rows, s.statRow(d, "datid", 1, "datname", "template1"), s.statRow(d, "datid", 4, "datname", "template0"))
}

func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC()
}

func pgStatActivity(s *snapshot, d *relDef) [][]any {
	var rows [][]any
	for _, ss := range s.sessions() {
		var addr, port any
		if ss.ClientAddr != "" {
			addr, port = ss.ClientAddr, ss.ClientPort
		} else {
			port = -1
		}
		db := ss.Database
		if db == "" {
			db = s.db
		}
		rows = append(rows, s.row(d, "datid", DatabaseOID(db), "datname", db, "pid", ss.PID, "usesysid", SuperuserOID,
			"usename", ss.User, "application_name", ss.ApplicationName, "client_addr", addr, "client_port", port,
			"backend_start", timeOrNil(ss.BackendStart), "xact_start", timeOrNil(ss.XactStart),
			"query_start", timeOrNil(ss.QueryStart), "state_change", timeOrNil(ss.Changed), "state", ss.State,
			"query", ss.Query, "backend_type", "client backend"))
	}
	return rows
}

var timezones = []string{"UTC", "Etc/UTC", "GMT", "Europe/London", "Europe/Paris", "Europe/Berlin", "America/New_York",
	"America/Chicago", "America/Denver", "America/Los_Angeles", "America/Sao_Paulo", "Asia/Kolkata", "Asia/Shanghai",
	"Asia/Tokyo", "Australia/Sydney"}

// utcOffset is a zone's offset as pg_timezone_names shows it.
func utcOffset(sec int) pgtypes.Interval {
	return pgtypes.Interval{Micros: int64(sec) * pgtypes.USecsPerSec}
}

func pgTimezoneNames(s *snapshot, d *relDef) [][]any {
	var rows [][]any
	now := time.Now()
	for _, name := range timezones {
		loc, err := time.LoadLocation(name)
		if err != nil {
			continue
		}
		abbrev, off := now.In(loc).Zone()
		rows = append(rows, s.row(d, "name", name, "abbrev", abbrev, "utc_offset", utcOffset(off),
			"is_dst", now.In(loc).IsDST()))
	}
	return rows
}

func pgTimezoneAbbrevs(s *snapshot, d *relDef) [][]any {
	return [][]any{
		s.row(d, "abbrev", "GMT", "utc_offset", utcOffset(0), "is_dst", false),
		s.row(d, "abbrev", "UTC", "utc_offset", utcOffset(0), "is_dst", false),
		s.row(d, "abbrev", "Z", "utc_offset", utcOffset(0), "is_dst", false),
	}
}

func pgPreparedStatements(s *snapshot, d *relDef) [][]any {
	if s.src.Prepared == nil {
		return nil
	}
	regtypes := func(oids []uint32) pgeval.Array {
		a := pgeval.Array{Elem: oidRegtype, Vals: []any{}}
		for _, o := range oids {
			a.Vals = append(a.Vals, data.regtype(o))
		}
		return a
	}
	var rows [][]any
	for _, p := range s.src.Prepared() {
		// PostgreSQL 15 has no result_types (16 added it).
		rows = append(rows, s.row(d, "name", p.Name, "statement", p.Statement, "prepare_time", timeOrNil(p.PrepareTime),
			"parameter_types", regtypes(p.ParameterTypes), "from_sql", p.FromSQL,
			"generic_plans", 0, "custom_plans", 0))
	}
	return rows
}
