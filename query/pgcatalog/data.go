package pgcatalog

import (
	"embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cellardb/cellar/query/pgeval"
	"github.com/cellardb/cellar/query/pgtypes"
)

//go:generate sh gen.sh

//go:embed pg15/*.tsv
var pg15 embed.FS

// Type OIDs the catalog needs beyond pgtypes' (see the report of this
// package for the ones that could move there).
const (
	oidChar        uint32 = 18
	oidInt2Vector  uint32 = 22
	oidRegproc     uint32 = 24
	oidOid         uint32 = 26
	oidTid         uint32 = 27
	oidXid         uint32 = 28
	oidCid         uint32 = 29
	oidOidVector   uint32 = 30
	oidPgNodeTree  uint32 = 194
	oidInet        uint32 = 869
	oidAclitem     uint32 = 1033
	oidInterval    uint32 = 1186
	oidRegtype     uint32 = 2206
	oidAnyArray    uint32 = 2277
	oidPgLsn       uint32 = 3220
	oidBoolArray   uint32 = 1000
	oidCharArray   uint32 = 1002
	oidNameArray   uint32 = 1003
	oidInt2Array   uint32 = 1005
	oidTextArray   uint32 = 1009
	oidOidArray    uint32 = 1028
	oidFloat4Array uint32 = 1021
	oidAclArray    uint32 = 1034
	oidRegtypeArr  uint32 = 2211

	// information_schema's domains, as initdb numbers them in PostgreSQL 15.
	oidCardinalNumber uint32 = 13221
	oidCharacterData  uint32 = 13224
	oidSQLIdentifier  uint32 = 13226
	oidTimeStamp      uint32 = 13232
	oidYesOrNo        uint32 = 13234
)

// Namespace OIDs.
const (
	NamespacePgCatalog         uint32 = 11
	NamespacePgToast           uint32 = 99
	NamespacePublic            uint32 = 2200
	NamespaceInformationSchema uint32 = 13207
)

// baseType maps information_schema's domains to the types their values
// have.
var baseType = map[uint32]uint32{
	oidCardinalNumber: pgtypes.OIDInt4, oidCharacterData: pgtypes.OIDVarchar, oidSQLIdentifier: pgtypes.OIDName,
	oidTimeStamp: pgtypes.OIDTimestamptz, oidYesOrNo: pgtypes.OIDVarchar,
}

// arrayElem maps the array types catalog columns use to their elements.
var arrayElem = map[uint32]uint32{
	oidInt2Vector: pgtypes.OIDInt2, oidOidVector: oidOid, oidBoolArray: pgtypes.OIDBool, oidCharArray: oidChar,
	oidNameArray: pgtypes.OIDName, oidInt2Array: pgtypes.OIDInt2, oidTextArray: pgtypes.OIDText, oidOidArray: oidOid,
	oidFloat4Array: pgtypes.OIDFloat4, oidAclArray: oidAclitem, oidRegtypeArr: oidRegtype,
}

// colDef is a column of an emulated relation.
type colDef struct {
	name    string
	typ     uint32 // as PostgreSQL declares it (domains included)
	typmod  int64
	notNull bool
	coll    uint32
}

// relDef is an emulated relation.
type relDef struct {
	schema, name string
	oid          uint32
	kind         byte // 'r' table, 'v' view
	rowType      uint32
	cols         []colDef
	index        map[string]int
	pgCols       []pgtypes.Column
}

func (d *relDef) nsOID() uint32 {
	if d.schema == "information_schema" {
		return NamespaceInformationSchema
	}
	return NamespacePgCatalog
}

// typeInfo is what the catalog needs to know of a type.
type typeInfo struct {
	oid, namespace, relid, elem, array, basetype, collation uint32
	name                                                    string
	len, typmod                                             int64
	byval                                                   bool
	typtype, category, align, storage                       string
}

// builtin is PostgreSQL 15's data, loaded once from pg15/.
type builtin struct {
	rels      map[string]*relDef // "schema.name"
	relOrder  []*relDef
	types     map[uint32]*typeInfo
	typeRows  [][]any
	procRows  [][]any
	procNames map[uint32]string
	// procText is pg_get_function_result, _arguments and
	// _identity_arguments of each function in pg_proc.
	procText map[uint32][3]string
	static   map[string][][]any // relation -> builtin rows
	settings map[string][]string
	opclass  map[uint32]uint32 // type -> default btree operator class
}

var data = mustLoad()

func mustLoad() *builtin {
	b, err := load()
	if err != nil {
		// The data is embedded: this cannot fail unless the package
		// itself is broken, which its tests catch.
		return &builtin{rels: map[string]*relDef{}, types: map[uint32]*typeInfo{}, static: map[string][][]any{},
			procNames: map[uint32]string{}, settings: map[string][]string{}, opclass: map[uint32]uint32{}}
	}
	return b
}

// loadErr reports what load failed with, for the tests.
func loadErr() error {
	_, err := load()
	return err
}

func readTSV(name string) ([][]string, error) {
	raw, err := pg15.ReadFile("pg15/" + name + ".tsv")
	if err != nil {
		return nil, err
	}
	var out [][]string
	for _, line := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		for i, s := range f {
			if s == `\N` {
				f[i] = "\x00"
				continue
			}
			f[i] = unescapeCopy(s)
		}
		out = append(out, f)
	}
	return out, nil
}

func unescapeCopy(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

const null = "\x00"

func load() (*builtin, error) {
	b := &builtin{rels: map[string]*relDef{}, types: map[uint32]*typeInfo{}, static: map[string][][]any{},
		procNames: map[uint32]string{}, settings: map[string][]string{}, opclass: map[uint32]uint32{}}
	recs, err := readTSV("relations")
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if len(r) != 11 {
			return nil, fmt.Errorf("relations.tsv: %d fields", len(r))
		}
		key := r[0] + "." + r[1]
		d := b.rels[key]
		if d == nil {
			d = &relDef{schema: r[0], name: r[1], oid: atou(r[2]), kind: r[3][0], rowType: atou(r[4]), index: map[string]int{}}
			b.rels[key] = d
			b.relOrder = append(b.relOrder, d)
		}
		c := colDef{name: r[6], typ: atou(r[7]), typmod: atoi(r[8]), notNull: r[9] == "t", coll: atou(r[10])}
		d.index[c.name] = len(d.cols)
		d.cols = append(d.cols, c)
		t := c.typ
		if bt, ok := baseType[t]; ok {
			t = bt
		}
		d.pgCols = append(d.pgCols, pgtypes.Column{Name: c.name, OID: t,
			Origin: &pgtypes.Origin{Table: d.oid, Attnum: int16(atoi(r[5])), Typmod: int32(c.typmod)}})
	}
	// Function names first: regproc values print as them.
	procs, err := readTSV("pg_proc")
	if err != nil {
		return nil, err
	}
	for _, p := range procs {
		b.procNames[atou(p[0])] = p[1]
	}
	texts, err := readTSV("pg_proc_text")
	if err != nil {
		return nil, err
	}
	b.procText = make(map[uint32][3]string, len(texts))
	for _, t := range texts {
		b.procText[atou(t[0])] = [3]string{t[1], t[2], t[3]}
	}
	types, err := readTSV("pg_type")
	if err != nil {
		return nil, err
	}
	for _, t := range types {
		b.types[atou(t[0])] = &typeInfo{name: t[1]}
	}
	if b.procRows, err = b.parseRows("pg_catalog.pg_proc", procs); err != nil {
		return nil, err
	}
	if b.typeRows, err = b.parseRows("pg_catalog.pg_type", types); err != nil {
		return nil, err
	}
	td := b.rels["pg_catalog.pg_type"]
	get := func(row []any, col string) any { return row[td.index[col]] }
	for _, row := range b.typeRows {
		ti := &typeInfo{
			oid: u32(get(row, "oid")), name: str(get(row, "typname")), namespace: u32(get(row, "typnamespace")),
			relid: u32(get(row, "typrelid")), elem: u32(get(row, "typelem")), array: u32(get(row, "typarray")),
			basetype: u32(get(row, "typbasetype")), collation: u32(get(row, "typcollation")),
			len: i64(get(row, "typlen")), typmod: i64(get(row, "typtypmod")), byval: get(row, "typbyval") == true,
			typtype: str(get(row, "typtype")), category: str(get(row, "typcategory")),
			align: str(get(row, "typalign")), storage: str(get(row, "typstorage")),
		}
		b.types[ti.oid] = ti
	}
	// A domain's column is described by its base type's modifier
	// (yes_or_no is varchar(3)), as RowDescription sends it.
	for _, d := range b.relOrder {
		for i, c := range d.cols {
			if ti := b.types[c.typ]; ti != nil && c.typmod < 0 && baseType[c.typ] != 0 {
				d.pgCols[i].Origin.Typmod = int32(ti.typmod)
			}
		}
	}
	for _, name := range []string{"pg_am", "pg_opclass", "pg_collation", "pg_language", "pg_range", "pg_tablespace", "pg_description"} {
		recs, err := readTSV(name)
		if err != nil {
			return nil, err
		}
		if b.static[name], err = b.parseRows("pg_catalog."+name, recs); err != nil {
			return nil, err
		}
	}
	od := b.rels["pg_catalog.pg_opclass"]
	for _, row := range b.static["pg_opclass"] {
		if i64(row[od.index["opcmethod"]]) == 403 {
			b.opclass[u32(row[od.index["opcintype"]])] = u32(row[od.index["oid"]])
		}
	}
	settings, err := readTSV("pg_settings")
	if err != nil {
		return nil, err
	}
	for _, s := range settings {
		b.settings[strings.ToLower(s[0])] = s
	}
	return b, nil
}

func (b *builtin) parseRows(rel string, recs [][]string) ([][]any, error) {
	d := b.rels[rel]
	if d == nil {
		return nil, fmt.Errorf("no relation %s", rel)
	}
	out := make([][]any, 0, len(recs))
	for _, r := range recs {
		if len(r) != len(d.cols) {
			return nil, fmt.Errorf("%s: %d fields, want %d", rel, len(r), len(d.cols))
		}
		row := make([]any, len(r))
		for i, s := range r {
			v, err := b.parseValue(d.cols[i].typ, s)
			if err != nil {
				return nil, fmt.Errorf("%s.%s: %v", rel, d.cols[i].name, err)
			}
			row[i] = v
		}
		out = append(out, row)
	}
	return out, nil
}

// parseValue reads a value of type oid from COPY's text form.
func (b *builtin) parseValue(oid uint32, s string) (any, error) {
	if s == null {
		return nil, nil
	}
	if bt, ok := baseType[oid]; ok {
		oid = bt
	}
	switch oid {
	case pgtypes.OIDBool:
		return s == "t", nil
	case pgtypes.OIDInt2, pgtypes.OIDInt4, pgtypes.OIDInt8, oidOid, oidXid, oidCid:
		return strconv.ParseInt(s, 10, 64)
	case pgtypes.OIDFloat4, pgtypes.OIDFloat8:
		return strconv.ParseFloat(s, 64)
	case oidRegproc:
		return b.regproc(atou(s)), nil
	case oidRegtype:
		return b.regtype(atou(s)), nil
	case pgtypes.OIDTimestamptz:
		return time.Parse("2006-01-02 15:04:05.999999-07", s)
	case pgtypes.OIDBytea:
		return pgtypes.ParseText(oid, s)
	case oidAnyArray:
		return nil, nil
	}
	if elem, ok := arrayElem[oid]; ok {
		var parts []string
		zero := oid == oidInt2Vector || oid == oidOidVector
		if zero {
			parts = strings.Fields(s)
		} else {
			parts = splitArray(s)
		}
		a := pgeval.Array{Elem: elem, Vals: make([]any, len(parts)), ZeroBased: zero}
		for i, p := range parts {
			if p == null {
				continue
			}
			v, err := b.parseValue(elem, p)
			if err != nil {
				return nil, err
			}
			a.Vals[i] = v
		}
		return a, nil
	}
	return s, nil
}

// splitArray splits a one-dimensional array's text form into its
// elements (NULL as null).
func splitArray(s string) []string {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}")
	var out []string
	if s == "" {
		return out
	}
	var cur strings.Builder
	quoted, wasQuoted := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case c == '"':
			quoted = !quoted
			wasQuoted = true
		case c == ',' && !quoted:
			out = append(out, arrayElemText(cur.String(), wasQuoted))
			cur.Reset()
			wasQuoted = false
		default:
			cur.WriteByte(c)
		}
	}
	return append(out, arrayElemText(cur.String(), wasQuoted))
}

func arrayElemText(s string, quoted bool) string {
	if !quoted && s == "NULL" {
		return null
	}
	return s
}

func (b *builtin) regproc(oid uint32) pgeval.Reg {
	if oid == 0 {
		return pgeval.Reg{Name: "-"}
	}
	if n, ok := b.procNames[oid]; ok {
		return pgeval.Reg{OID: oid, Name: n}
	}
	return pgeval.Reg{OID: oid, Name: strconv.FormatUint(uint64(oid), 10)}
}

func (b *builtin) regtype(oid uint32) pgeval.Reg {
	if oid == 0 {
		return pgeval.Reg{Name: "-"}
	}
	// A regtype prints as format_type does (bigint, not int8).
	if n := pgeval.FormatType(oid, -1); n != "???" {
		return pgeval.Reg{OID: oid, Name: n}
	}
	if t, ok := b.types[oid]; ok {
		return pgeval.Reg{OID: oid, Name: t.name}
	}
	return pgeval.Reg{OID: oid, Name: strconv.FormatUint(uint64(oid), 10)}
}

func atou(s string) uint32 {
	v, _ := strconv.ParseUint(s, 10, 32)
	return uint32(v)
}

func atoi(s string) int64 {
	v, _ := strconv.ParseInt(s, 10, 64)
	return v
}

func i64(v any) int64 {
	n, _ := v.(int64)
	return n
}

func u32(v any) uint32 { return uint32(i64(v)) }

func str(v any) string {
	s, _ := v.(string)
	return s
}
