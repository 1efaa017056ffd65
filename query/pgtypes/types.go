// Package pgtypes is how cellar's SQL layer holds PostgreSQL values: the
// type OIDs it exposes, the Go value of each type, the text forms, and
// the calendar rules the date/time types share with PostgreSQL
// (interval's fields and justification, Julian days, time zone offsets
// at daylight-saving changes).
package pgtypes

import (
	"encoding/hex"
	"fmt"
	"github.com/cellardb/cellar/query/sqlstate"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// PostgreSQL type OIDs of the types cellar exposes.
const (
	OIDBool        uint32 = 16
	OIDBytea       uint32 = 17
	OIDName        uint32 = 19
	OIDInt8        uint32 = 20
	OIDInt2        uint32 = 21
	OIDInt4        uint32 = 23
	OIDText        uint32 = 25
	OIDJSON        uint32 = 114
	OIDFloat4      uint32 = 700
	OIDFloat8      uint32 = 701
	OIDUnknown     uint32 = 705
	OIDVarchar     uint32 = 1043
	OIDDate        uint32 = 1082
	OIDTimestamp   uint32 = 1114
	OIDTimestamptz uint32 = 1184
	OIDInterval    uint32 = 1186
	OIDNumeric     uint32 = 1700
	OIDUUID        uint32 = 2950
	OIDJSONB       uint32 = 3802
	OIDVoid        uint32 = 2278
)

// Values are Go values by type:
//
//	bool                         bool
//	int2, int4, int8             int64
//	float4, float8               float64
//	text, varchar, name, json(b) string
//	bytea                        []byte
//	numeric                      Numeric
//	date, timestamp(tz)          time.Time (UTC; infinity is TimeInfinity)
//	interval                     Interval
//	uuid                         [16]byte
//
// and nil is NULL.

// Numeric is a decimal number in canonical text form ("-12.50"), or
// one of numeric's special values NaN, Infinity and -Infinity.
type Numeric string

// numeric's special values, as numeric_out writes them.
const (
	NumericNaN    Numeric = "NaN"
	NumericPosInf Numeric = "Infinity"
	NumericNegInf Numeric = "-Infinity"
)

// IsSpecial reports whether n is NaN or an infinity.
func (n Numeric) IsSpecial() bool { return n == NumericNaN || n == NumericPosInf || n == NumericNegInf }

// Inf is 1 for Infinity, -1 for -Infinity and 0 otherwise.
func (n Numeric) Inf() int {
	switch n {
	case NumericPosInf:
		return 1
	case NumericNegInf:
		return -1
	}
	return 0
}

// Column describes a result column.
type Column struct {
	Name string
	OID  uint32
	// Origin is what PostgreSQL's RowDescription says of the column
	// besides its type; nil for an expression without a type modifier.
	Origin *Origin
}

// Origin is a result column's source and type modifier.
type Origin struct {
	// Table and Attnum name the table (or view) column the result column
	// reads as it is: its pg_class OID and pg_attribute.attnum; 0 for
	// an expression.
	Table  uint32
	Attnum int16
	// Typmod is the type modifier in atttypmod's form (varchar(12) is
	// 16, numeric(10,2) 655366); -1 for none.
	Typmod int32
}

// TableOID is the OID of the table the column reads, or 0.
func (c Column) TableOID() uint32 {
	if c.Origin == nil {
		return 0
	}
	return c.Origin.Table
}

// Attnum is the number of the table column the column reads, or 0.
func (c Column) Attnum() int16 {
	if c.Origin == nil {
		return 0
	}
	return c.Origin.Attnum
}

// Typmod is the column's type modifier, or -1.
func (c Column) Typmod() int32 {
	if c.Origin == nil {
		return -1
	}
	return c.Origin.Typmod
}

// typeNames maps PostgreSQL type names (as casts and pg_catalog spell
// them) to OIDs.
var TypeNames = map[string]uint32{
	"bool": OIDBool, "boolean": OIDBool,
	"bytea": OIDBytea, "name": OIDName,
	"int8": OIDInt8, "bigint": OIDInt8, "int2": OIDInt2, "smallint": OIDInt2,
	"int4": OIDInt4, "int": OIDInt4, "integer": OIDInt4,
	"text": OIDText, "varchar": OIDVarchar, "character varying": OIDVarchar,
	"json": OIDJSON, "jsonb": OIDJSONB,
	"float4": OIDFloat4, "real": OIDFloat4, "float8": OIDFloat8, "double precision": OIDFloat8,
	"date": OIDDate, "timestamp": OIDTimestamp, "timestamptz": OIDTimestamptz, "interval": OIDInterval,
	"numeric": OIDNumeric, "decimal": OIDNumeric, "uuid": OIDUUID,
}

// TypeName returns a type's name as PostgreSQL prints it.
func TypeName(oid uint32) string {
	if name, ok := typeName(oid); ok {
		return name
	}
	return fmt.Sprintf("type %d", oid)
}

// typeName is the name of a type cellar knows.
func typeName(oid uint32) (string, bool) {
	switch oid {
	case OIDBool:
		return "boolean", true
	case OIDBytea:
		return "bytea", true
	case OIDName:
		return "name", true
	case OIDInt8:
		return "bigint", true
	case OIDInt2:
		return "smallint", true
	case OIDInt4:
		return "integer", true
	case OIDText:
		return "text", true
	case OIDJSON:
		return "json", true
	case OIDFloat4:
		return "real", true
	case OIDFloat8:
		return "double precision", true
	case OIDUnknown:
		return "unknown", true
	case OIDVarchar:
		return "character varying", true
	case OIDDate:
		return "date", true
	case OIDTimestamp:
		return "timestamp without time zone", true
	case OIDTimestamptz:
		return "timestamp with time zone", true
	case OIDInterval:
		return "interval", true
	case OIDNumeric:
		return "numeric", true
	case OIDUUID:
		return "uuid", true
	case OIDJSONB:
		return "jsonb", true
	case OIDVoid:
		return "void", true
	}
	return "", false
}

// Supported reports whether cellar knows type oid.
func Supported(oid uint32) bool {
	_, ok := typeName(oid)
	return ok
}

// ParseText reads a value of type oid from its text form, as a client
// sends a parameter or a cast converts a string, with PostgreSQL's
// default settings (DateStyle ISO, MDY; TimeZone UTC).
func ParseText(oid uint32, s string) (any, error) {
	return ParseTextStyle(oid, s, DefaultStyle)
}

// ParseTextStyle is ParseText under a session's DateStyle (the field
// order of ambiguous dates), TimeZone (of timestamptz input without a
// zone) and IntervalStyle (sql_standard's leading minus). jsonb is
// stored in its canonical form.
func ParseTextStyle(oid uint32, s string, st Style) (any, error) {
	bad := func(err error) error {
		return sqlstate.Errorf(sqlstate.CodeInvalidTextRepresent, "invalid input syntax for type %s: %q", TypeName(oid), s)
	}
	switch oid {
	case OIDBool:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "t", "true", "yes", "y", "on", "1":
			return true, nil
		case "f", "false", "no", "n", "off", "0":
			return false, nil
		}
		return nil, bad(nil)
	case OIDInt2, OIDInt4, OIDInt8:
		bits := map[uint32]int{OIDInt2: 16, OIDInt4: 32, OIDInt8: 64}[oid]
		v, err := strconv.ParseInt(strings.TrimSpace(s), 10, bits)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return nil, sqlstate.Errorf(sqlstate.CodeNumericOutOfRange, "value %q is out of range for type %s", s, TypeName(oid))
			}
			return nil, bad(err)
		}
		return v, nil
	case OIDFloat4, OIDFloat8:
		t := strings.TrimSpace(s)
		switch strings.ToLower(t) {
		case "nan":
			return math.NaN(), nil
		case "infinity", "+infinity", "inf", "+inf":
			return math.Inf(1), nil
		case "-infinity", "-inf":
			return math.Inf(-1), nil
		}
		v, err := strconv.ParseFloat(t, 64)
		if err != nil {
			return nil, bad(err)
		}
		if oid == OIDFloat4 {
			v = float64(float32(v))
		}
		return v, nil
	case OIDNumeric:
		n, err := ParseNumeric(s)
		if err != nil {
			if se, ok := err.(*sqlstate.Error); ok {
				return nil, se
			}
			return nil, bad(err)
		}
		return n, nil
	case OIDText, OIDVarchar, OIDName, OIDUnknown:
		return s, nil
	case OIDJSON:
		if err := ValidateJSON(s); err != nil {
			return nil, err
		}
		return s, nil
	case OIDJSONB:
		return NormalizeJSONB(s)
	case OIDBytea:
		if h, ok := strings.CutPrefix(s, `\x`); ok {
			b, err := hex.DecodeString(h)
			if err != nil {
				return nil, bad(err)
			}
			return b, nil
		}
		return []byte(s), nil
	case OIDUUID:
		h := strings.ReplaceAll(strings.Trim(strings.TrimSpace(s), "{}"), "-", "")
		b, err := hex.DecodeString(h)
		if err != nil || len(b) != 16 {
			return nil, bad(err)
		}
		var u [16]byte
		copy(u[:], b)
		return u, nil
	case OIDDate, OIDTimestamp, OIDTimestamptz:
		t, err := ParseDateTime(oid, s, st, time.Time{})
		if err != nil {
			return nil, err
		}
		return t, nil
	case OIDInterval:
		iv, err := ParseInterval(s, st, -1)
		if err != nil {
			return nil, err
		}
		return iv, nil
	}
	return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "type %s is not supported", TypeName(oid))
}

// ParseNumeric checks and canonicalizes a decimal number: digits with an
// optional point and exponent, as numeric_in reads them, or NaN and the
// infinities in float8in's spellings (Infinity, inf, with a sign, in any
// case), with white space around. Numbers beyond numeric's range (131072
// digits before the point, 16383 after) are 22003 "value overflows
// numeric format".
func ParseNumeric(s string) (Numeric, error) {
	t := strings.TrimFunc(s, func(r rune) bool { return r < 0x80 && isSpaceB(byte(r)) })
	for _, sp := range []struct {
		text string
		n    Numeric
	}{{"nan", NumericNaN}, {"infinity", NumericPosInf}, {"+infinity", NumericPosInf}, {"-infinity", NumericNegInf},
		{"inf", NumericPosInf}, {"+inf", NumericPosInf}, {"-inf", NumericNegInf}} {
		if len(t) == len(sp.text) && strings.EqualFold(t, sp.text) { // ASCII only, as pg_strncasecmp
			return sp.n, nil
		}
	}
	body := strings.TrimLeft(t, "+-")
	if len(t)-len(body) > 1 {
		return "", fmt.Errorf("not a number: %q", s)
	}
	mant, expText := body, ""
	if i := strings.IndexAny(body, "eE"); i >= 0 {
		mant, expText = body[:i], body[i+1:]
	}
	intPart, frac, hasPoint := strings.Cut(mant, ".")
	if intPart+frac == "" || !isAllDigits(intPart+frac) || hasPoint && strings.Contains(frac, ".") {
		return "", fmt.Errorf("not a number: %q", s)
	}
	exp := 0
	if expText != "" || strings.ContainsAny(body, "eE") {
		digits := strings.TrimLeft(expText, "+-")
		if len(expText)-len(digits) > 1 || !isAllDigits(digits) {
			return "", fmt.Errorf("not a number: %q", s)
		}
		if len(digits) > 9 {
			return "", sqlstate.Errorf(sqlstate.CodeNumericOutOfRange, "value overflows numeric format")
		}
		exp, _ = strconv.Atoi(digits)
		if expText[0] == '-' {
			exp = -exp
		}
	}
	// Keep the scale the input had, as PostgreSQL does.
	scale := max(len(frac)-exp, 0)
	all := strings.TrimLeft(intPart+frac, "0")
	if scale > 16383 || all != "" && len(intPart)+exp-(len(intPart+frac)-len(all)) > 131072 {
		return "", sqlstate.Errorf(sqlstate.CodeNumericOutOfRange, "value overflows numeric format")
	}
	r, ok := new(big.Rat).SetString(t)
	if !ok {
		return "", fmt.Errorf("not a number: %q", s)
	}
	return Numeric(r.FloatString(scale)), nil
}
