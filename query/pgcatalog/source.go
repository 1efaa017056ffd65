package pgcatalog

import (
	"context"
	"hash/fnv"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cellardb/cellar/query/catalog"
	"github.com/cellardb/cellar/query/pgeval"
	"github.com/cellardb/cellar/query/pgtypes"
)

// Source is what the emulated catalog shows: cellar's tables and the
// session's view of the server. Every field may be zero.
type Source struct {
	// Tables are the database's tables, all in schema public.
	Tables []*catalog.Table
	// User is the session's user: a superuser with OID 10.
	User string
	// Database is the session's database; Databases lists the others
	// pg_database shows besides it and the templates.
	Database  string
	Databases []string
	// Setting returns a session setting's value; pg_settings lists every
	// PostgreSQL setting it knows, with PostgreSQL's descriptions.
	Setting func(name string) (string, bool)
	// Settings, if set, lists the session's settings instead (including
	// cellar's own, which PostgreSQL does not describe).
	Settings func() []Setting
	// Sessions lists the server's sessions for pg_stat_activity; nil
	// means only this one (BackendPID, User, Database).
	Sessions   func() []Session
	BackendPID uint32
	// CatalogColumns lists the emulated relations' own columns in
	// pg_attribute, as PostgreSQL does. Off, pg_attribute holds only
	// cellar's tables and indexes: clients join pg_attribute several
	// times in one query (pgjdbc's getImportedKeys six ways), and the
	// catalog's thousand-odd columns make those joins slow without
	// PostgreSQL's indexes. information_schema.columns lists them
	// either way.
	CatalogColumns bool
	// Prepared lists the session's prepared statements
	// (pg_prepared_statements).
	Prepared func() []PreparedStatement
}

// Setting is a run-time parameter as pg_settings shows it.
type Setting struct {
	Name, Value string
	// Description is used for a setting PostgreSQL does not have.
	Description string
	ReadOnly    bool
}

// Session is a backend as pg_stat_activity shows it.
type Session struct {
	PID                                          uint32
	User, Database, ApplicationName, ClientAddr  string
	ClientPort                                   int
	BackendStart, XactStart, QueryStart, Changed time.Time
	// State: "active", "idle", "idle in transaction" ...
	State, Query string
}

// PreparedStatement is a row of pg_prepared_statements.
type PreparedStatement struct {
	Name, Statement string
	PrepareTime     time.Time
	ParameterTypes  []uint32
	FromSQL         bool
}

// SuperuserOID is the OID of the session's user, the bootstrap
// superuser's in PostgreSQL.
const SuperuserOID uint32 = 10

// hashOID is an OID for a cellar object: at least 16384 (PostgreSQL's
// FirstNormalObjectId) and below 2^31, from the object's kind and name.
func hashOID(kind, name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write([]byte(name))
	return 16384 + h.Sum32()%(1<<31-16384)
}

// TableOID is the OID of table name's pg_class row.
func TableOID(name string) uint32 { return hashOID("table", name) }

// RowTypeOID is the OID of table name's row type.
func RowTypeOID(name string) uint32 { return hashOID("rowtype", name) }

// ArrayTypeOID is the OID of the array type of table name's row type.
func ArrayTypeOID(name string) uint32 { return hashOID("arraytype", name) }

// IndexOID is the OID of table name's primary-key index, <name>_pkey.
func IndexOID(name string) uint32 { return hashOID("pkey", name) }

// ConstraintOID is the OID of table name's primary-key constraint.
func ConstraintOID(name string) uint32 { return hashOID("pkeycon", name) }

// DatabaseOID is the OID of database name.
func DatabaseOID(name string) uint32 {
	if name == "postgres" {
		return 5
	}
	return hashOID("database", name)
}

// SourceFunc gives the catalog's contents as a statement's execution
// finds them.
type SourceFunc func(ctx context.Context) (Source, error)

// Static is a SourceFunc of a Source that does not change.
func Static(src Source) SourceFunc {
	return func(context.Context) (Source, error) { return src, nil }
}

// Relation returns the emulated relation schema.name: schema is
// "pg_catalog", "information_schema", or "" for a pg_catalog relation
// named without its schema. Its rows are read from src once per execution
// of the statement that scans it (each execution has its own Env), so a
// prepared statement sees the tables and sessions of when it runs, and a
// subquery that scans the relation per outer row reads it once.
func Relation(schema, name string, src SourceFunc) (pgeval.Relation, bool) {
	if schema == "" {
		schema = "pg_catalog"
	}
	d, ok := data.rels[schema+"."+name]
	if !ok {
		return nil, false
	}
	return &relation{d: d, src: src}, true
}

// Relations lists the emulated relations, as "schema.name".
func Relations() []string {
	out := make([]string, 0, len(data.relOrder))
	for _, d := range data.relOrder {
		out = append(out, d.schema+"."+d.name)
	}
	return out
}

type relation struct {
	d   *relDef
	src SourceFunc

	mu   sync.Mutex
	env  *pgeval.Env // of the execution rows were read for
	rows [][]any
}

func (r *relation) Columns() []pgtypes.Column { return r.d.pgCols }

func (r *relation) Scan(ctx context.Context, req pgeval.ScanRequest) (pgeval.Rows, error) {
	r.mu.Lock()
	if r.env == nil || r.env != req.Env {
		src, err := r.src(ctx)
		if err != nil {
			r.mu.Unlock()
			return nil, err
		}
		r.rows = nil
		if build, ok := builders[r.d.schema+"."+r.d.name]; ok {
			r.rows = build(newSnapshot(src), r.d)
		}
		r.env = req.Env
	}
	rows := r.rows
	r.mu.Unlock()
	if req.Limit >= 0 && req.Limit < int64(len(rows)) && len(req.Filters) == 0 {
		rows = rows[:req.Limit]
	}
	return &rowIter{rows: rows}, nil
}

type rowIter struct {
	rows [][]any
	i    int
}

func (it *rowIter) Next(ctx context.Context) ([]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if it.i >= len(it.rows) {
		return nil, io.EOF
	}
	row := append([]any(nil), it.rows[it.i]...)
	it.i++
	return row, nil
}

func (it *rowIter) Close() {}

// class is a row of pg_class.
type class struct {
	oid, ns            uint32
	name               string
	kind               byte
	rowType, arrayType uint32
	cols               []colDef
	def                *relDef
	table              *catalog.Table
	parent             *class // an index's table
	index              *class // a table's primary-key index
	keys               []int64
}

func (c *class) schema() string { return nsName(c.ns) }

func nsName(oid uint32) string {
	switch oid {
	case NamespacePgCatalog:
		return "pg_catalog"
	case NamespaceInformationSchema:
		return "information_schema"
	case NamespacePgToast:
		return "pg_toast"
	}
	return "public"
}

// snapshot is src with everything derived from it.
type snapshot struct {
	src     Source
	user    string
	db      string
	classes []*class
	// bad lists column names builders used that a relation lacks: a bug
	// the tests report.
	bad []string
}

func newSnapshot(src Source) *snapshot {
	s := &snapshot{src: src, user: src.User, db: src.Database}
	if s.user == "" {
		s.user = "postgres"
	}
	if s.db == "" {
		s.db = "postgres"
	}
	for _, d := range data.relOrder {
		s.classes = append(s.classes, &class{oid: d.oid, ns: d.nsOID(), name: d.name, kind: d.kind, rowType: d.rowType,
			arrayType: arrayOf(d.rowType), cols: d.cols, def: d})
	}
	var tables []*catalog.Table
	for _, t := range src.Tables {
		if t != nil {
			tables = append(tables, t)
		}
	}
	sort.Slice(tables, func(i, j int) bool { return tables[i].Name < tables[j].Name })
	for _, t := range tables {
		c := &class{oid: TableOID(t.Name), ns: NamespacePublic, name: t.Name, kind: 'r', rowType: RowTypeOID(t.Name),
			arrayType: ArrayTypeOID(t.Name), table: t}
		var keyCols []colDef
		for i, col := range t.Visible() {
			typ, typmod := col.OID(), col.Typmod()
			cd := colDef{name: col.Name, typ: typ, typmod: typmod, notNull: col.Key || col.NotNull, coll: collationOf(typ)}
			c.cols = append(c.cols, cd)
			if col.Key {
				c.keys = append(c.keys, int64(i+1))
				ixCol := cd
				ixCol.notNull = false // as PostgreSQL's index attributes
				keyCols = append(keyCols, ixCol)
			}
		}
		s.classes = append(s.classes, c)
		if len(c.keys) > 0 {
			ix := &class{oid: IndexOID(t.Name), ns: NamespacePublic, name: t.Name + "_pkey", kind: 'i', cols: keyCols, parent: c}
			c.index = ix
			s.classes = append(s.classes, ix)
		}
	}
	return s
}

func arrayOf(typ uint32) uint32 {
	if t, ok := data.types[typ]; ok {
		return t.array
	}
	return 0
}

func collationOf(typ uint32) uint32 {
	if t, ok := data.types[typ]; ok {
		return t.collation
	}
	return 0
}

// row makes a row of d from column name, value pairs; NOT NULL columns
// not given are their type's zero.
func (s *snapshot) row(d *relDef, kv ...any) []any {
	out := make([]any, len(d.cols))
	set := make([]bool, len(d.cols))
	for i := 0; i+1 < len(kv); i += 2 {
		name, _ := kv[i].(string)
		j, ok := d.index[name]
		if !ok {
			s.bad = append(s.bad, d.name+"."+name)
			continue
		}
		out[j], set[j] = normalize(kv[i+1]), true
	}
	for j, c := range d.cols {
		if !set[j] && c.notNull {
			out[j] = zeroOf(c.typ)
		}
	}
	return out
}

// normalize turns the Go values builders use into the catalog's.
func normalize(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case uint32:
		return int64(x)
	case int32:
		return int64(x)
	case byte:
		return string(rune(x))
	}
	return v
}

func zeroOf(typ uint32) any {
	if bt, ok := baseType[typ]; ok {
		typ = bt
	}
	switch typ {
	case pgtypes.OIDBool:
		return false
	case pgtypes.OIDInt2, pgtypes.OIDInt4, pgtypes.OIDInt8, oidOid, oidXid, oidCid:
		return int64(0)
	case pgtypes.OIDFloat4, pgtypes.OIDFloat8:
		return float64(0)
	case oidRegproc, oidRegtype:
		return pgeval.Reg{Name: "-"}
	}
	if elem, ok := arrayElem[typ]; ok {
		return pgeval.Array{Elem: elem, Vals: []any{}, ZeroBased: typ == oidInt2Vector || typ == oidOidVector}
	}
	return ""
}

func int2vector(v []int64) pgeval.Array {
	a := pgeval.Array{Elem: pgtypes.OIDInt2, ZeroBased: true, Vals: make([]any, len(v))}
	for i, x := range v {
		a.Vals[i] = x
	}
	return a
}

func oidvector(v []uint32) pgeval.Array {
	a := pgeval.Array{Elem: oidOid, ZeroBased: true, Vals: make([]any, len(v))}
	for i, x := range v {
		a.Vals[i] = int64(x)
	}
	return a
}

func textArray(elem uint32, v ...string) pgeval.Array {
	a := pgeval.Array{Elem: elem, Vals: make([]any, len(v))}
	for i, x := range v {
		a.Vals[i] = x
	}
	return a
}

// quoteIdent quotes an identifier where PostgreSQL would.
func quoteIdent(s string) string {
	plain := s != ""
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || i > 0 && (r >= '0' && r <= '9' || r == '$')) {
			plain = false
			break
		}
	}
	if plain && !reserved[s] {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

var reserved = map[string]bool{"all": true, "analyse": true, "analyze": true, "and": true, "any": true, "array": true,
	"as": true, "asc": true, "asymmetric": true, "both": true, "case": true, "cast": true, "check": true, "collate": true,
	"column": true, "constraint": true, "create": true, "current_catalog": true, "current_date": true, "current_role": true,
	"current_time": true, "current_timestamp": true, "current_user": true, "default": true, "deferrable": true, "desc": true,
	"distinct": true, "do": true, "else": true, "end": true, "except": true, "false": true, "fetch": true, "for": true,
	"foreign": true, "from": true, "grant": true, "group": true, "having": true, "in": true, "initially": true,
	"intersect": true, "into": true, "lateral": true, "leading": true, "limit": true, "localtime": true,
	"localtimestamp": true, "not": true, "null": true, "offset": true, "on": true, "only": true, "or": true, "order": true,
	"placing": true, "primary": true, "references": true, "returning": true, "select": true, "session_user": true,
	"some": true, "symmetric": true, "table": true, "then": true, "to": true, "trailing": true, "true": true, "union": true,
	"unique": true, "user": true, "using": true, "variadic": true, "when": true, "where": true, "window": true, "with": true}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
