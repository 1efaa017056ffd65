package pgwire

import (
	"encoding/binary"

	"github.com/cellardb/cellar/query/pgeval"
	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// paramSupported reports whether a Bind can carry a parameter of type
// oid: cellar's column types, the catalog's oid, xid and "char", time
// and bpchar, and one-dimensional arrays of these (asyncpg's type
// introspection binds an oid[]).
func paramSupported(oid uint32) bool {
	if e := pgeval.ElemOID(oid); e != 0 && oid != pgeval.OIDInt2Vector && oid != pgeval.OIDOidVector {
		return paramScalar(e)
	}
	return paramScalar(oid)
}

func paramScalar(oid uint32) bool {
	switch oid {
	case pgeval.OIDOid, pgeval.OIDXid, pgeval.OIDChar, pgeval.OIDTime, pgeval.OIDBpchar:
		return true
	}
	return pgtypes.Supported(oid)
}

// decodeText reads a parameter sent in text format.
func decodeText(oid uint32, s string, st pgtypes.Style) (any, error) {
	if pgtypes.Supported(oid) {
		return pgtypes.ParseTextStyle(oid, s, st)
	}
	return pgeval.Cast(s, pgtypes.OIDText, oid)
}

// decodeBinaryParam reads a parameter sent in binary format: the types
// decodeBinary knows, oid and xid (uint32), "char" (one byte), time
// (µs since midnight), bpchar (its text) and arrays in array_recv's
// format.
func decodeBinaryParam(oid uint32, b []byte) (any, error) {
	switch oid {
	case pgeval.OIDBpchar:
		return string(b), nil
	case pgeval.OIDTime:
		if len(b) < 8 {
			return nil, sqlstate.Errorf(sqlstate.CodeProtocolViolation, "insufficient data left in message")
		}
		if len(b) > 8 {
			return nil, sqlstate.Errorf("22P03", "incorrect binary data format in a time parameter")
		}
		us := int64(binary.BigEndian.Uint64(b))
		if us < 0 || us > pgtypes.USecsPerDay {
			return nil, sqlstate.Errorf("22008", "time out of range")
		}
		return pgtypes.TimeFromMicros(us), nil
	case pgeval.OIDOid, pgeval.OIDXid:
		if len(b) != 4 {
			return nil, sqlstate.Errorf(sqlstate.CodeProtocolViolation, "incorrect binary data format in a %s parameter: %d bytes", pgeval.TypeName(oid), len(b))
		}
		return int64(binary.BigEndian.Uint32(b)), nil
	case pgeval.OIDChar:
		if len(b) > 1 {
			return nil, sqlstate.Errorf(sqlstate.CodeProtocolViolation, "incorrect binary data format in a \"char\" parameter: %d bytes", len(b))
		}
		return string(b), nil
	}
	if e := pgeval.ElemOID(oid); e != 0 {
		return decodeArray(oid, e, b)
	}
	return decodeBinary(oid, b)
}

// decodeArray reads array_recv's format: ndim, a has-nulls flag, the
// element type, each dimension's size and lower bound, then each element
// with its length (-1 for NULL).
func decodeArray(oid, elem uint32, b []byte) (any, error) {
	bad := func() error {
		return sqlstate.Errorf(sqlstate.CodeProtocolViolation, "incorrect binary data format in a %s parameter", pgeval.TypeName(oid))
	}
	if len(b) < 12 {
		return nil, bad()
	}
	ndim := int32(binary.BigEndian.Uint32(b))
	if got := binary.BigEndian.Uint32(b[8:]); got != elem {
		return nil, sqlstate.Errorf(sqlstate.CodeDatatypeMismatch, "binary data has array element type %d (%s) instead of expected %d (%s)",
			got, pgeval.TypeName(got), elem, pgeval.TypeName(elem))
	}
	a := pgeval.Array{Elem: elem, Vals: []any{}}
	switch {
	case ndim == 0:
		if len(b) != 12 {
			return nil, bad()
		}
		return a, nil
	case ndim != 1:
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "arrays of %d dimensions are not supported", ndim)
	case len(b) < 20:
		return nil, bad()
	}
	n := int64(int32(binary.BigEndian.Uint32(b[12:])))
	rest := b[20:]
	if n < 0 || n > int64(len(rest)/4) {
		return nil, bad()
	}
	for i := int64(0); i < n; i++ {
		if len(rest) < 4 {
			return nil, bad()
		}
		size := int32(binary.BigEndian.Uint32(rest))
		rest = rest[4:]
		if size == -1 {
			a.Vals = append(a.Vals, nil)
			continue
		}
		if size < 0 || int(size) > len(rest) {
			return nil, bad()
		}
		v, err := decodeBinaryParam(elem, rest[:size])
		if err != nil {
			return nil, err
		}
		a.Vals = append(a.Vals, v)
		rest = rest[size:]
	}
	if len(rest) != 0 {
		return nil, bad()
	}
	return a, nil
}
