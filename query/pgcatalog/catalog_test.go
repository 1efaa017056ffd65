package pgcatalog

import (
	"context"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/query/catalog"
	"github.com/cellardb/cellar/query/pgeval"
	"github.com/cellardb/cellar/query/pgtypes"
)

// sampleTables: a Bigtable-shaped table, YCSB's plain table and a plain
// table with a composite key.
func sampleTables() []*catalog.Table {
	return []*catalog.Table{
		{Name: "webtable", Columns: []catalog.Column{
			{Name: "_key", Type: model.TypeText, Key: true, NotNull: true},
			{Name: "info:rank", Family: "info", Qualifier: "rank", Type: model.TypeInt8},
		}, Families: []catalog.Family{
			{Name: "contents", DefaultType: model.TypeBytea, Open: true},
			{Name: "anchor", DefaultType: model.TypeText, Open: true},
			{Name: "info", DefaultType: model.TypeBytea},
		}},
		{Name: "usertable", Plain: true, Columns: []catalog.Column{
			{Name: "ycsb_key", Type: model.TypeText, Key: true, NotNull: true},
			{Name: "field0", Family: "d", Qualifier: "field0", Type: model.TypeText},
			{Name: "field1", Family: "d", Qualifier: "field1", Type: model.TypeText},
		}, Families: []catalog.Family{{Name: "d", DefaultType: model.TypeBytea}}},
		{Name: "orders", Plain: true, Columns: []catalog.Column{
			{Name: "tenant", Type: model.TypeText, Key: true, NotNull: true},
			{Name: "id", Type: model.TypeInt8, Key: true, NotNull: true},
			{Name: "total", Family: "d", Qualifier: "total", Type: model.TypeNumeric},
			{Name: "placed", Family: "d", Qualifier: "placed", Type: model.TypeTimestamptz, NotNull: true},
		}, Families: []catalog.Family{{Name: "d", DefaultType: model.TypeBytea}}},
	}
}

func sampleSource() Source {
	settings := map[string]string{"standard_conforming_strings": "on", "search_path": `"$user", public`,
		"server_version_num": "150004", "application_name": "psql", "max_index_keys": "32"}
	return Source{Tables: sampleTables(), User: "alice", Database: "cellar", BackendPID: 42,
		Setting: func(n string) (string, bool) { v, ok := settings[n]; return v, ok }}
}

// scan returns a relation's rows as maps from column name to value.
func scan(t *testing.T, schema, name string, src Source) []map[string]any {
	t.Helper()
	r, ok := Relation(schema, name, Static(src))
	if !ok {
		t.Fatalf("no relation %s.%s", schema, name)
	}
	it, err := r.Scan(context.Background(), pgeval.ScanRequest{Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []map[string]any
	for {
		row, err := it.Next(context.Background())
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]any{}
		for i, c := range r.Columns() {
			m[c.Name] = row[i]
		}
		out = append(out, m)
	}
}

func where(rows []map[string]any, col string, v any) []map[string]any {
	var out []map[string]any
	for _, r := range rows {
		if r[col] == v {
			out = append(out, r)
		}
	}
	return out
}

func TestLoad(t *testing.T) {
	if err := loadErr(); err != nil {
		t.Fatal(err)
	}
	if len(data.rels) < 100 || len(data.typeRows) < 300 || len(data.procRows) < 300 {
		t.Fatalf("too little data: %d relations, %d types, %d functions", len(data.rels), len(data.typeRows), len(data.procRows))
	}
}

// validValue reports whether v is a value of type oid as the catalog
// holds them.
func validValue(oid uint32, v any) bool {
	if v == nil {
		return true
	}
	switch oid {
	case pgtypes.OIDBool:
		_, ok := v.(bool)
		return ok
	case pgtypes.OIDInt2, pgtypes.OIDInt4, pgtypes.OIDInt8, oidOid, oidXid, oidCid:
		_, ok := v.(int64)
		return ok
	case pgtypes.OIDFloat4, pgtypes.OIDFloat8:
		_, ok := v.(float64)
		return ok
	case oidRegproc, oidRegtype:
		_, ok := v.(pgeval.Reg)
		return ok
	case pgtypes.OIDTimestamptz:
		_, ok := v.(time.Time)
		return ok
	case oidInterval:
		_, ok := v.(pgtypes.Interval)
		return ok
	case pgtypes.OIDName, pgtypes.OIDText, pgtypes.OIDVarchar, oidChar, oidPgNodeTree, oidInet, oidPgLsn, oidAclitem:
		_, ok := v.(string)
		return ok
	}
	if elem, ok := arrayElem[oid]; ok {
		a, ok := v.(pgeval.Array)
		if !ok || a.Elem != elem {
			return false
		}
		for _, x := range a.Vals {
			if !validValue(elem, x) {
				return false
			}
		}
		return true
	}
	return false
}

func TestEveryRelation(t *testing.T) {
	src := sampleSource()
	for _, name := range Relations() {
		d := data.rels[name]
		seen := map[string]bool{}
		for _, c := range d.pgCols {
			if seen[c.Name] {
				t.Errorf("%s: column %s twice", name, c.Name)
			}
			seen[c.Name] = true
		}
		s := newSnapshot(src)
		var rows [][]any
		if b, ok := builders[name]; ok {
			rows = b(s, d)
		}
		if len(s.bad) > 0 {
			t.Errorf("%s: builder sets columns the relation lacks: %v", name, s.bad)
		}
		for _, row := range rows {
			if len(row) != len(d.cols) {
				t.Fatalf("%s: row of %d values, want %d", name, len(row), len(d.cols))
			}
			for i, v := range row {
				if !validValue(d.pgCols[i].OID, v) {
					t.Errorf("%s.%s: value %#v is not a %d", name, d.cols[i].name, v, d.pgCols[i].OID)
				}
				if v == nil && d.cols[i].notNull {
					t.Errorf("%s.%s: NULL in a NOT NULL column", name, d.cols[i].name)
				}
			}
		}
	}
}

func TestColumnLists(t *testing.T) {
	for _, tc := range []struct {
		rel   string
		n     int
		col   string
		at    int
		type_ uint32
	}{
		{"pg_catalog.pg_class", 33, "relkind", 16, oidChar},
		{"pg_catalog.pg_attribute", 26, "attnotnull", 13, pgtypes.OIDBool},
		{"pg_catalog.pg_type", 32, "typreceive", 17, oidRegproc},
		{"pg_catalog.pg_index", 21, "indkey", 15, oidInt2Vector},
		{"pg_catalog.pg_constraint", 26, "conkey", 18, oidInt2Array},
		{"pg_catalog.pg_database", 16, "daticulocale", 13, pgtypes.OIDText},
		{"pg_catalog.pg_settings", 17, "enumvals", 11, oidTextArray},
		{"information_schema.columns", 44, "ordinal_position", 4, pgtypes.OIDInt4},
		{"information_schema.tables", 12, "table_name", 2, pgtypes.OIDName},
	} {
		d := data.rels[tc.rel]
		if d == nil {
			t.Errorf("no %s", tc.rel)
			continue
		}
		if len(d.pgCols) != tc.n || d.pgCols[tc.at].Name != tc.col || d.pgCols[tc.at].OID != tc.type_ {
			t.Errorf("%s: %d columns, column %d %+v; want %d, %s %d", tc.rel, len(d.pgCols), tc.at, d.pgCols[tc.at], tc.n, tc.col, tc.type_)
		}
	}
	if _, ok := Relation("", "tables", Static(sampleSource())); ok {
		t.Error(`"tables" without a schema resolved to information_schema`)
	}
	if _, ok := Relation("public", "pg_class", Static(sampleSource())); ok {
		t.Error("public.pg_class resolved")
	}
}

func TestOIDs(t *testing.T) {
	seen := map[uint32]string{}
	for _, n := range []string{"webtable", "usertable", "orders", "t1", "hx_bi"} {
		for kind, oid := range map[string]uint32{"table": TableOID(n), "type": RowTypeOID(n), "array": ArrayTypeOID(n),
			"index": IndexOID(n), "constraint": ConstraintOID(n)} {
			if oid < 16384 || oid >= 1<<31 {
				t.Errorf("%s %s: OID %d out of range", kind, n, oid)
			}
			if prev, ok := seen[oid]; ok {
				t.Errorf("%s %s: OID %d also %s", kind, n, oid, prev)
			}
			seen[oid] = kind + " " + n
		}
	}
	// Stable across processes and releases: clients cache them.
	if got := TableOID("hx_bi"); got != hashOID("table", "hx_bi") || got != TableOID("hx_bi") {
		t.Errorf("TableOID not stable: %d", got)
	}
	if DatabaseOID("postgres") != 5 || DatabaseOID("cellar") < 16384 {
		t.Error("database OIDs")
	}
}

func TestUserTables(t *testing.T) {
	src := sampleSource()
	web := int64(TableOID("webtable"))

	classes := scan(t, "pg_catalog", "pg_class", src)
	c := where(classes, "oid", web)
	if len(c) != 1 || c[0]["relname"] != "webtable" || c[0]["relkind"] != "r" || c[0]["relnamespace"] != int64(2200) ||
		c[0]["relnatts"] != int64(4) || c[0]["relhasindex"] != true || c[0]["reltype"] != int64(RowTypeOID("webtable")) {
		t.Fatalf("pg_class webtable: %v", c)
	}
	ix := where(classes, "relname", "orders_pkey")
	if len(ix) != 1 || ix[0]["relkind"] != "i" || ix[0]["relam"] != int64(403) || ix[0]["oid"] != int64(IndexOID("orders")) {
		t.Fatalf("pg_class orders_pkey: %v", ix)
	}
	if len(where(classes, "relname", "pg_class")) != 1 || len(where(where(classes, "relname", "tables"), "relnamespace", int64(NamespaceInformationSchema))) != 1 {
		t.Fatal("the catalog relations are not in pg_class")
	}

	attrs := where(scan(t, "pg_catalog", "pg_attribute", src), "attrelid", web)
	want := []struct {
		name    string
		typ     uint32
		notNull bool
	}{{"_key", 25, true}, {"info:rank", 20, false}, {"contents", 3802, false}, {"anchor", 3802, false}}
	if len(attrs) != 6+len(want) {
		t.Fatalf("webtable has %d attributes: %v", len(attrs), attrs)
	}
	for i, w := range want {
		a := where(attrs, "attnum", int64(i+1))
		if len(a) != 1 || a[0]["attname"] != w.name || a[0]["atttypid"] != int64(w.typ) || a[0]["attnotnull"] != w.notNull ||
			a[0]["attisdropped"] != false || a[0]["atthasdef"] != false {
			t.Errorf("attribute %d: %v, want %+v", i+1, a, w)
		}
	}
	if a := where(attrs, "attnum", int64(-1)); len(a) != 1 || a[0]["attname"] != "ctid" {
		t.Errorf("system column ctid: %v", a)
	}

	idx := where(scan(t, "pg_catalog", "pg_index", src), "indrelid", int64(TableOID("orders")))
	if len(idx) != 1 || idx[0]["indisprimary"] != true || idx[0]["indexrelid"] != int64(IndexOID("orders")) {
		t.Fatalf("pg_index orders: %v", idx)
	}
	key := idx[0]["indkey"].(pgeval.Array)
	if !key.ZeroBased || len(key.Vals) != 2 || key.Vals[0] != int64(1) || key.Vals[1] != int64(2) {
		t.Errorf("indkey %v", key)
	}
	if cls := idx[0]["indclass"].(pgeval.Array); cls.Vals[0] != int64(3126) || cls.Vals[1] != int64(3124) {
		t.Errorf("indclass %v, want text_ops, int8_ops", cls)
	}

	con := where(scan(t, "pg_catalog", "pg_constraint", src), "conrelid", int64(TableOID("orders")))
	if len(con) != 1 || con[0]["contype"] != "p" || con[0]["conname"] != "orders_pkey" || con[0]["conindid"] != int64(IndexOID("orders")) {
		t.Fatalf("pg_constraint orders: %v", con)
	}
	if k := con[0]["conkey"].(pgeval.Array); k.ZeroBased || len(k.Vals) != 2 || k.Vals[1] != int64(2) {
		t.Errorf("conkey %v", k)
	}

	types := scan(t, "pg_catalog", "pg_type", src)
	rt := where(types, "oid", int64(RowTypeOID("usertable")))
	if len(rt) != 1 || rt[0]["typname"] != "usertable" || rt[0]["typtype"] != "c" || rt[0]["typrelid"] != int64(TableOID("usertable")) ||
		rt[0]["typinput"] != (pgeval.Reg{OID: 2290, Name: "record_in"}) {
		t.Errorf("row type: %v", rt)
	}
	for _, name := range []string{"bool", "bytea", "char", "name", "int8", "int2", "int2vector", "int4", "regproc", "text",
		"oid", "tid", "xid", "cid", "oidvector", "json", "xml", "point", "float4", "float8", "unknown", "bpchar", "varchar",
		"date", "time", "timestamp", "timestamptz", "interval", "numeric", "uuid", "jsonb", "regclass", "regtype", "void",
		"record", "cstring", "any", "anyarray", "_bool", "_int2", "_int4", "_int8", "_text", "_varchar", "_float4",
		"_float8", "_numeric", "_bytea", "_timestamptz", "_date", "_uuid", "_jsonb", "_oid", "_name", "_char", "int4range"} {
		if len(where(types, "typname", name)) != 1 {
			t.Errorf("pg_type has no single %s", name)
		}
	}
	procs := scan(t, "pg_catalog", "pg_proc", src)
	if p := where(procs, "proname", "array_recv"); len(p) != 1 || p[0]["oid"] != int64(2400) {
		t.Errorf("pg_proc array_recv: %v", p)
	}

	cols := where(scan(t, "information_schema", "columns", src), "table_name", "orders")
	if len(cols) != 4 {
		t.Fatalf("information_schema.columns orders: %v", cols)
	}
	for i, w := range []struct{ name, dt, udt, null string }{{"tenant", "text", "text", "NO"}, {"id", "bigint", "int8", "NO"},
		{"total", "numeric", "numeric", "YES"}, {"placed", "timestamp with time zone", "timestamptz", "NO"}} {
		c := where(cols, "ordinal_position", int64(i+1))
		if len(c) != 1 || c[0]["column_name"] != w.name || c[0]["data_type"] != w.dt || c[0]["udt_name"] != w.udt ||
			c[0]["is_nullable"] != w.null || c[0]["table_schema"] != "public" || c[0]["table_catalog"] != "cellar" {
			t.Errorf("column %d: %v, want %+v", i+1, c, w)
		}
	}
	kcu := where(scan(t, "information_schema", "key_column_usage", src), "table_name", "orders")
	if len(kcu) != 2 || kcu[0]["column_name"] != "tenant" || kcu[1]["ordinal_position"] != int64(2) {
		t.Errorf("key_column_usage: %v", kcu)
	}
	tc := where(scan(t, "information_schema", "table_constraints", src), "constraint_type", "PRIMARY KEY")
	if len(tc) != 3 {
		t.Errorf("table_constraints: %v", tc)
	}
	if tabs := where(scan(t, "information_schema", "tables", src), "table_schema", "public"); len(tabs) != 3 || tabs[0]["table_type"] != "BASE TABLE" {
		t.Errorf("information_schema.tables: %v", tabs)
	}
	if ixs := where(scan(t, "pg_catalog", "pg_indexes", src), "tablename", "webtable"); len(ixs) != 1 ||
		ixs[0]["indexdef"] != "CREATE UNIQUE INDEX webtable_pkey ON public.webtable USING btree (_key)" {
		t.Errorf("pg_indexes: %v", ixs)
	}
	if IndexDef("t", []string{"info:rank", "a"}) != `CREATE UNIQUE INDEX t_pkey ON public.t USING btree ("info:rank", a)` {
		t.Error(IndexDef("t", []string{"info:rank", "a"}))
	}
}

func TestCatalogColumns(t *testing.T) {
	src := sampleSource()
	if a := where(scan(t, "", "pg_attribute", src), "attrelid", int64(1259)); len(a) != 0 {
		t.Errorf("pg_class's columns listed without CatalogColumns: %d", len(a))
	}
	src.CatalogColumns = true
	if a := where(scan(t, "", "pg_attribute", src), "attrelid", int64(1259)); len(a) != 33+6 {
		t.Errorf("pg_class has %d attributes, want 39", len(a))
	}
	if c := where(scan(t, "information_schema", "columns", sampleSource()), "table_name", "pg_class"); len(c) != 33 {
		t.Errorf("information_schema.columns lists %d columns of pg_class", len(c))
	}
}

func TestOddInput(t *testing.T) {
	src := Source{Tables: []*catalog.Table{nil, {Name: "nokey", Columns: []catalog.Column{{Name: "x", Type: model.ValueType(200)}}}, {}}}
	for _, name := range Relations() {
		schema, rel, _ := strings.Cut(name, ".")
		scan(t, schema, rel, src)
	}
	if c := where(scan(t, "", "pg_class", src), "relname", "nokey"); len(c) != 1 || c[0]["relhasindex"] != false {
		t.Errorf("table without a key: %v", c)
	}
	if a := where(scan(t, "", "pg_attribute", src), "attname", "x"); len(a) != 1 || a[0]["atttypid"] != int64(pgtypes.OIDBytea) {
		t.Errorf("column of an unknown type: %v", a)
	}
}

func TestSession(t *testing.T) {
	src := sampleSource()
	ns := scan(t, "pg_catalog", "pg_namespace", src)
	if len(ns) != 4 || len(where(ns, "nspname", "information_schema")) != 1 {
		t.Errorf("pg_namespace: %v", ns)
	}
	dbs := scan(t, "", "pg_database", src)
	if d := where(dbs, "datname", "cellar"); len(d) != 1 || d[0]["encoding"] != int64(6) || d[0]["datcollate"] != "C.UTF-8" ||
		d[0]["datistemplate"] != false || d[0]["oid"] != int64(DatabaseOID("cellar")) {
		t.Errorf("pg_database: %v", dbs)
	}
	roles := scan(t, "", "pg_roles", src)
	if r := where(roles, "rolname", "alice"); len(r) != 1 || r[0]["rolsuper"] != true || r[0]["oid"] != int64(10) {
		t.Errorf("pg_roles: %v", roles)
	}
	set := scan(t, "", "pg_settings", src)
	if s := where(set, "name", "standard_conforming_strings"); len(s) != 1 || s[0]["setting"] != "on" || s[0]["vartype"] != "bool" ||
		s[0]["context"] != "user" {
		t.Errorf("pg_settings: %v", s)
	}
	if s := where(set, "name", "max_index_keys"); len(s) != 1 || s[0]["setting"] != "32" {
		t.Errorf("pg_settings max_index_keys: %v", s)
	}
	act := scan(t, "", "pg_stat_activity", src)
	if len(act) != 1 || act[0]["pid"] != int64(42) || act[0]["usename"] != "alice" || act[0]["application_name"] != "psql" {
		t.Errorf("pg_stat_activity: %v", act)
	}
	if ext := scan(t, "", "pg_extension", src); len(ext) != 1 || ext[0]["extname"] != "plpgsql" {
		t.Errorf("pg_extension: %v", ext)
	}
	if e := scan(t, "", "pg_enum", src); len(e) != 0 {
		t.Errorf("pg_enum: %v", e)
	}
}

func TestLookups(t *testing.T) {
	src := sampleSource()
	if oid, ok := src.ClassOID("public", "orders"); !ok || oid != TableOID("orders") {
		t.Errorf("ClassOID orders: %d %v", oid, ok)
	}
	if oid, ok := src.ClassOID("", "pg_class"); !ok || oid != 1259 {
		t.Errorf("ClassOID pg_class: %d %v", oid, ok)
	}
	if oid, ok := src.ClassOID("information_schema", "tables"); !ok || oid < 13000 {
		t.Errorf("ClassOID information_schema.tables: %d %v", oid, ok)
	}
	if _, ok := src.ClassOID("", "tables"); ok {
		t.Error(`ClassOID "tables" found information_schema's`)
	}
	if s, n, k, ok := src.Class(IndexOID("orders")); !ok || s != "public" || n != "orders_pkey" || k != 'i' {
		t.Errorf("Class: %s %s %c %v", s, n, k, ok)
	}
	if n, _ := src.RegclassName(1259); n != "pg_class" {
		t.Errorf("RegclassName 1259: %s", n)
	}
	if def, ok := src.IndexDefinition(IndexOID("orders"), 0); !ok || def != "CREATE UNIQUE INDEX orders_pkey ON public.orders USING btree (tenant, id)" {
		t.Errorf("IndexDefinition: %q", def)
	}
	if def, _ := src.IndexDefinition(IndexOID("orders"), 2); def != "id" {
		t.Errorf("IndexDefinition column 2: %q", def)
	}
	if def, ok := src.ConstraintDefinition(ConstraintOID("orders")); !ok || def != "PRIMARY KEY (tenant, id)" {
		t.Errorf("ConstraintDefinition: %q", def)
	}
	if oid, ok := src.TypeOID("int4"); !ok || oid != 23 {
		t.Errorf("TypeOID int4: %d", oid)
	}
	if n, ok := ProcName(2400); !ok || n != "array_recv" {
		t.Errorf("ProcName 2400: %s", n)
	}
	if oid, ok := ProcOID("array_in"); !ok || oid != 750 {
		t.Errorf("ProcOID array_in: %d", oid)
	}
}

// TestFunctionsListed: functions.txt, which gen.sh takes the functions
// of pg_proc from, names the functions the evaluator has, so that psql's
// \df and a BI tool's function browser list what cellar can call.
func TestFunctionsListed(t *testing.T) {
	raw, err := os.ReadFile("functions.txt")
	if err != nil {
		t.Fatal(err)
	}
	listed := strings.Fields(string(raw))
	if want := pgeval.FunctionNames(); !slices.Equal(listed, want) {
		t.Errorf("functions.txt is not pgeval.FunctionNames(); rewrite it and run gen.sh:\nlisted %q\nwant   %q", listed, want)
	}
	// Every name PostgreSQL has a pg_proc entry for is in pg_proc.
	for _, n := range listed {
		switch n {
		case "current_catalog", "trim": // syntax, not functions, in PostgreSQL too
			continue
		}
		if _, ok := ProcOID(n); !ok {
			t.Errorf("pg_proc has no %s", n)
		}
	}
}
