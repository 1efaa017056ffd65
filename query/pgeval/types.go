package pgeval

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// Type OIDs this package needs beyond those in pgtypes.
const (
	OIDChar         uint32 = 18 // "char", one byte
	OIDInt2Vector   uint32 = 22
	OIDRegproc      uint32 = 24
	OIDOid          uint32 = 26
	OIDOidVector    uint32 = 30
	OIDBpchar       uint32 = 1042
	OIDRecord       uint32 = 2249
	OIDRegclass     uint32 = 2205
	OIDRegtype      uint32 = 2206
	OIDRegnamespace uint32 = 4089
	OIDAny          uint32 = 2276 // pseudo type for polymorphic function arguments
	OIDInterval     uint32 = pgtypes.OIDInterval
	OIDRegrole      uint32 = 4096
	OIDXid          uint32 = 28
	OIDTime         uint32 = 1083
	OIDAclitem      uint32 = 1033
	OIDPgNodeTree   uint32 = 194
	// OIDInet is only a catalog column's type (pg_stat_activity's
	// client_addr), held as its text: no value can be cast to it.
	OIDInet uint32 = 869
)

// arrayOf maps element type OIDs to their array type OIDs.
var arrayOf = map[uint32]uint32{
	pgtypes.OIDBool: 1000, pgtypes.OIDBytea: 1001, OIDChar: 1002, pgtypes.OIDName: 1003,
	pgtypes.OIDInt2: 1005, OIDInt2Vector: 1006, pgtypes.OIDInt4: 1007, OIDRegproc: 1008, pgtypes.OIDText: 1009,
	OIDOid: 1028, OIDXid: 1011, OIDOidVector: 1013, OIDBpchar: 1014, pgtypes.OIDVarchar: 1015, pgtypes.OIDInt8: 1016,
	pgtypes.OIDFloat4: 1021, pgtypes.OIDFloat8: 1022, OIDAclitem: 1034, pgtypes.OIDTimestamp: 1115, pgtypes.OIDDate: 1182,
	pgtypes.OIDTimestamptz: 1185, pgtypes.OIDNumeric: 1231, OIDRegclass: 2210, OIDRegtype: 2211, OIDRecord: 2287,
	pgtypes.OIDUUID: 2951, pgtypes.OIDJSONB: 3807, pgtypes.OIDJSON: 199, OIDRegnamespace: 4090, OIDInterval: 1187,
	OIDRegrole: 4097, OIDTime: 1183,
}

// elemOf is arrayOf reversed, plus the vector types (arrays with their own
// OIDs).
var elemOf = func() map[uint32]uint32 {
	m := map[uint32]uint32{OIDInt2Vector: pgtypes.OIDInt2, OIDOidVector: OIDOid}
	for e, a := range arrayOf {
		m[a] = e
	}
	return m
}()

// ArrayOID returns the array type of element type elem, 0 if none.
func ArrayOID(elem uint32) uint32 { return arrayOf[elem] }

// ElemOID returns the element type of array type oid, 0 if oid is not an
// array type.
func ElemOID(oid uint32) uint32 { return elemOf[oid] }

func isArray(oid uint32) bool { return elemOf[oid] != 0 }

// Array is the value of every array type, and of int2vector and
// oidvector. Only one-dimensional arrays exist here.
type Array struct {
	Elem uint32
	Vals []any
	// ZeroBased arrays (int2vector, oidvector) subscript from 0, as
	// PostgreSQL's do; others from 1.
	ZeroBased bool
}

func (a Array) lower() int {
	if a.ZeroBased {
		return 0
	}
	return 1
}

// Reg is the value of the OID alias types (regclass, regtype, regproc,
// regnamespace, regrole): the OID, and the name it prints as.
type Reg struct {
	OID  uint32
	Name string
}

// Record is a composite value, such as a row of _pg_expandarray.
type Record struct {
	Cols []pgtypes.Column
	Vals []any
}

// typeNames extends pgtypes.TypeNames with the types this package adds.
var typeNames = func() map[string]uint32 {
	m := map[string]uint32{
		"char": OIDChar, `"char"`: OIDChar, "oid": OIDOid, "regclass": OIDRegclass, "regtype": OIDRegtype,
		"regproc": OIDRegproc, "regprocedure": OIDRegproc, "regnamespace": OIDRegnamespace, "regrole": OIDRegrole,
		"int2vector": OIDInt2Vector, "oidvector": OIDOidVector, "bpchar": OIDBpchar, "character": OIDBpchar,
		"record": OIDRecord, "interval": OIDInterval, "xid": OIDXid, "time": OIDTime, "aclitem": OIDAclitem,
		"pg_node_tree": OIDPgNodeTree, "timestamp with time zone": pgtypes.OIDTimestamptz,
		"timestamp without time zone": pgtypes.OIDTimestamp, "float": pgtypes.OIDFloat8, "anyarray": 2277,
		"void": pgtypes.OIDVoid, "unknown": pgtypes.OIDUnknown,
	}
	for k, v := range pgtypes.TypeNames {
		m[k] = v
	}
	return m
}()

// unsupportedTypes are PostgreSQL 15's built-in types that cellar's SQL
// does not have. A cast to one is 0A000, which says so, rather than
// 42704, which would say that the type does not exist.
var unsupportedTypes = map[string]bool{
	"inet": true, "cidr": true, "macaddr": true, "macaddr8": true, "money": true,
	"bit": true, "varbit": true, "bit varying": true,
	"point": true, "line": true, "lseg": true, "box": true, "path": true, "polygon": true, "circle": true,
	"timetz": true, "time with time zone": true, "xml": true, "tsvector": true, "tsquery": true,
	"pg_lsn": true, "pg_snapshot": true, "txid_snapshot": true, "jsonpath": true, "cid": true, "tid": true,
	"int4range": true, "int8range": true, "numrange": true, "tsrange": true, "tstzrange": true, "daterange": true,
	"int4multirange": true, "int8multirange": true, "nummultirange": true, "tsmultirange": true,
	"tstzmultirange": true, "datemultirange": true, "regoper": true, "regoperator": true, "regconfig": true,
	"regdictionary": true, "regcollation": true,
}

// typeName is the name PostgreSQL prints for a type (format_type without
// a modifier).
func typeName(oid uint32) string {
	switch oid {
	case OIDChar:
		return `"char"`
	case OIDInt2Vector:
		return "int2vector"
	case OIDRegproc:
		return "regproc"
	case OIDOid:
		return "oid"
	case OIDOidVector:
		return "oidvector"
	case OIDBpchar:
		return "character"
	case OIDRecord:
		return "record"
	case OIDRegclass:
		return "regclass"
	case OIDRegtype:
		return "regtype"
	case OIDRegnamespace:
		return "regnamespace"
	case OIDRegrole:
		return "regrole"
	case OIDInterval:
		return "interval"
	case OIDXid:
		return "xid"
	case OIDTime:
		return "time without time zone"
	case OIDAclitem:
		return "aclitem"
	case OIDInet:
		return "inet"
	case OIDPgNodeTree:
		return "pg_node_tree"
	case OIDAny:
		return "any"
	case 2277:
		return "anyarray"
	}
	if e := elemOf[oid]; e != 0 {
		return typeName(e) + "[]"
	}
	return pgtypes.TypeName(oid)
}

// typeShortName is what pg_type.typname says: the name a cast column is
// named after.
func typeShortName(oid uint32) string {
	switch oid {
	case pgtypes.OIDInt2:
		return "int2"
	case pgtypes.OIDInt4:
		return "int4"
	case pgtypes.OIDInt8:
		return "int8"
	case pgtypes.OIDFloat4:
		return "float4"
	case pgtypes.OIDFloat8:
		return "float8"
	case pgtypes.OIDBool:
		return "bool"
	case pgtypes.OIDVarchar:
		return "varchar"
	case pgtypes.OIDTimestamptz:
		return "timestamptz"
	case pgtypes.OIDTimestamp:
		return "timestamp"
	case OIDChar:
		return "char"
	case OIDBpchar:
		return "bpchar"
	case OIDTime:
		return "time"
	}
	if e := elemOf[oid]; e != 0 && oid != OIDInt2Vector && oid != OIDOidVector {
		return "_" + typeShortName(e)
	}
	return typeName(oid)
}

// FormatType is format_type(oid, typmod).
func FormatType(oid uint32, typmod int64) string {
	if e := elemOf[oid]; e != 0 && oid != OIDInt2Vector && oid != OIDOidVector {
		return FormatType(e, typmod) + "[]"
	}
	name := typeName(oid)
	if strings.HasPrefix(name, "type ") {
		return "???"
	}
	if typmod < 0 {
		return name
	}
	switch oid {
	case pgtypes.OIDVarchar, OIDBpchar:
		if typmod >= 4 {
			return fmt.Sprintf("%s(%d)", name, typmod-4)
		}
	case pgtypes.OIDNumeric:
		if typmod >= 4 {
			t := typmod - 4
			return fmt.Sprintf("numeric(%d,%d)", (t>>16)&0xffff, t&0xffff)
		}
	case pgtypes.OIDTimestamp:
		return fmt.Sprintf("timestamp(%d) without time zone", typmod)
	case pgtypes.OIDTimestamptz:
		return fmt.Sprintf("timestamp(%d) with time zone", typmod)
	case OIDInterval:
		return name + pgtypes.FormatIntervalTypmod(int32(typmod))
	}
	return name
}

// FormatText writes v, of type oid, in PostgreSQL's text output form. It
// handles this package's Array, Reg and Record values and otherwise
// defers to pgtypes.FormatText. Dates and times are written as
// PostgreSQL's defaults (DateStyle ISO, TimeZone UTC) do.
func FormatText(oid uint32, v any) string {
	return FormatTextStyle(oid, v, pgtypes.DefaultStyle)
}

// FormatTextStyle is FormatText under a session's DateStyle, TimeZone
// and IntervalStyle (pgtypes.StyleFrom(env.Setting)).
func FormatTextStyle(oid uint32, v any, st pgtypes.Style) string {
	switch x := v.(type) {
	case Array:
		var b strings.Builder
		if oid == OIDInt2Vector || oid == OIDOidVector {
			for i, e := range x.Vals {
				if i > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(FormatTextStyle(x.Elem, e, st))
			}
			return b.String()
		}
		if lo := x.lower(); lo != 1 && len(x.Vals) > 0 {
			fmt.Fprintf(&b, "[%d:%d]=", lo, lo+len(x.Vals)-1)
		}
		b.WriteByte('{')
		for i, e := range x.Vals {
			if i > 0 {
				b.WriteByte(',')
			}
			if e == nil {
				b.WriteString("NULL")
				continue
			}
			b.WriteString(quoteArrayElem(FormatTextStyle(x.Elem, e, st)))
		}
		b.WriteByte('}')
		return b.String()
	case Reg:
		if x.Name == "" {
			return strconv.FormatUint(uint64(x.OID), 10)
		}
		return x.Name
	case Record:
		var b strings.Builder
		b.WriteByte('(')
		for i, e := range x.Vals {
			if i > 0 {
				b.WriteByte(',')
			}
			if e == nil {
				continue
			}
			var s string
			if i < len(x.Cols) {
				s = FormatTextStyle(x.Cols[i].OID, e, st)
			} else {
				s = FormatTextStyle(0, e, st)
			}
			if s == "" || strings.ContainsAny(s, "(),\"\\ \t\n\r") {
				s = `"` + strings.NewReplacer(`\`, `\\`, `"`, `""`).Replace(s) + `"`
			}
			b.WriteString(s)
		}
		b.WriteByte(')')
		return b.String()
	case time.Time:
		if oid == OIDTime {
			return pgtypes.FormatTime(x)
		}
	}
	return pgtypes.FormatTextStyle(oid, v, st)
}

func quoteArrayElem(s string) string {
	if s == "" || strings.EqualFold(s, "null") || strings.ContainsAny(s, "{},\"\\ \t\n") {
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
	}
	return s
}

// parseArray reads an array's text form ('{a,"b c",NULL}').
func parseArray(elem uint32, s string, ec *evalCtx) (any, error) {
	bad := sqlstate.Errorf(sqlstate.CodeInvalidTextRepresent, "malformed array literal: %q", s)
	t := strings.TrimSpace(s)
	if len(t) < 2 || t[0] != '{' || t[len(t)-1] != '}' {
		return nil, bad
	}
	t = t[1 : len(t)-1]
	arr := Array{Elem: elem, Vals: []any{}}
	if strings.TrimSpace(t) == "" {
		return arr, nil
	}
	i := 0
	for {
		for i < len(t) && t[i] == ' ' {
			i++
		}
		var b strings.Builder
		quoted := false
		if i < len(t) && t[i] == '"' {
			quoted = true
			i++
			for i < len(t) && t[i] != '"' {
				if t[i] == '\\' && i+1 < len(t) {
					i++
				}
				b.WriteByte(t[i])
				i++
			}
			if i >= len(t) {
				return nil, bad
			}
			i++
		} else {
			for i < len(t) && t[i] != ',' {
				if t[i] == '{' || t[i] == '"' {
					return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "multidimensional arrays are not supported")
				}
				if t[i] == '\\' && i+1 < len(t) {
					i++
				}
				b.WriteByte(t[i])
				i++
			}
		}
		e := b.String()
		if !quoted {
			e = strings.TrimSpace(e)
		}
		if !quoted && strings.EqualFold(e, "null") {
			arr.Vals = append(arr.Vals, nil)
		} else {
			v, err := castText(e, elem, ec)
			if err != nil {
				return nil, err
			}
			arr.Vals = append(arr.Vals, v)
		}
		for i < len(t) && t[i] == ' ' {
			i++
		}
		if i >= len(t) {
			break
		}
		if t[i] != ',' {
			return nil, bad
		}
		i++
	}
	return arr, nil
}

// Category helpers.
func isInt(oid uint32) bool {
	return oid == pgtypes.OIDInt2 || oid == pgtypes.OIDInt4 || oid == pgtypes.OIDInt8
}
func isFloat(oid uint32) bool { return oid == pgtypes.OIDFloat4 || oid == pgtypes.OIDFloat8 }
func isNumber(oid uint32) bool {
	return isInt(oid) || isFloat(oid) || oid == pgtypes.OIDNumeric
}
func isText(oid uint32) bool {
	switch oid {
	case pgtypes.OIDText, pgtypes.OIDVarchar, pgtypes.OIDName, OIDBpchar, OIDChar:
		return true
	}
	return false
}
func isOIDLike(oid uint32) bool {
	switch oid {
	case OIDOid, OIDRegclass, OIDRegtype, OIDRegproc, OIDRegnamespace, OIDRegrole, OIDXid:
		return true
	}
	return false
}
func isTime(oid uint32) bool {
	return oid == pgtypes.OIDDate || oid == pgtypes.OIDTimestamp || oid == pgtypes.OIDTimestamptz
}

func intRange(oid uint32) (int64, int64) {
	switch oid {
	case pgtypes.OIDInt2:
		return math.MinInt16, math.MaxInt16
	case pgtypes.OIDInt4:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

func rangeError(oid uint32) error {
	return sqlstate.Errorf(sqlstate.CodeNumericOutOfRange, "%s out of range", typeName(oid))
}
