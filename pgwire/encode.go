package pgwire

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// Values on the wire: text format is pgtypes.FormatText; binary format is
// PostgreSQL's send/recv format for each type.

// pgEpoch is the zero of PostgreSQL's binary dates and timestamps.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// encodeBinary appends v in PostgreSQL's binary format for type oid.
func encodeBinary(oid uint32, v any) ([]byte, error) {
	switch x := v.(type) {
	case bool:
		if x {
			return []byte{1}, nil
		}
		return []byte{0}, nil
	case int64:
		switch oid {
		case pgtypes.OIDInt2:
			return binary.BigEndian.AppendUint16(nil, uint16(x)), nil
		case pgtypes.OIDInt4:
			return binary.BigEndian.AppendUint32(nil, uint32(x)), nil
		}
		return binary.BigEndian.AppendUint64(nil, uint64(x)), nil
	case float64:
		if oid == pgtypes.OIDFloat4 {
			return binary.BigEndian.AppendUint32(nil, math.Float32bits(float32(x))), nil
		}
		return binary.BigEndian.AppendUint64(nil, math.Float64bits(x)), nil
	case string:
		if oid == pgtypes.OIDJSONB {
			return append([]byte{1}, x...), nil
		}
		return []byte(x), nil
	case []byte:
		return x, nil
	case [16]byte:
		return x[:], nil
	case pgtypes.Numeric:
		return encodeNumeric(string(x))
	case time.Time:
		if oid == pgtypes.OIDDate {
			days := int32(x.UTC().Sub(pgEpoch).Hours() / 24)
			if x.UTC().Before(pgEpoch) && x.UTC().Sub(pgEpoch)%(24*time.Hour) != 0 {
				days--
			}
			return binary.BigEndian.AppendUint32(nil, uint32(days)), nil
		}
		us := x.UTC().Sub(pgEpoch).Microseconds()
		return binary.BigEndian.AppendUint64(nil, uint64(us)), nil
	}
	return nil, fmt.Errorf("no binary format for %T as %s", v, pgtypes.TypeName(oid))
}

// decodeBinary reads a parameter sent in binary format.
func decodeBinary(oid uint32, b []byte) (any, error) {
	size := func(n int) error {
		if len(b) != n {
			return sqlstate.Errorf(sqlstate.CodeProtocolViolation, "incorrect binary data format in a %s parameter: %d bytes", pgtypes.TypeName(oid), len(b))
		}
		return nil
	}
	switch oid {
	case pgtypes.OIDBool:
		if err := size(1); err != nil {
			return nil, err
		}
		return b[0] != 0, nil
	case pgtypes.OIDInt2:
		if err := size(2); err != nil {
			return nil, err
		}
		return int64(int16(binary.BigEndian.Uint16(b))), nil
	case pgtypes.OIDInt4:
		if err := size(4); err != nil {
			return nil, err
		}
		return int64(int32(binary.BigEndian.Uint32(b))), nil
	case pgtypes.OIDInt8:
		if err := size(8); err != nil {
			return nil, err
		}
		return int64(binary.BigEndian.Uint64(b)), nil
	case pgtypes.OIDFloat4:
		if err := size(4); err != nil {
			return nil, err
		}
		return float64(math.Float32frombits(binary.BigEndian.Uint32(b))), nil
	case pgtypes.OIDFloat8:
		if err := size(8); err != nil {
			return nil, err
		}
		return math.Float64frombits(binary.BigEndian.Uint64(b)), nil
	case pgtypes.OIDText, pgtypes.OIDVarchar, pgtypes.OIDName, pgtypes.OIDUnknown, pgtypes.OIDJSON:
		return string(b), nil
	case pgtypes.OIDJSONB:
		if len(b) == 0 || b[0] != 1 {
			return nil, sqlstate.Errorf(sqlstate.CodeProtocolViolation, "unsupported jsonb version")
		}
		return string(b[1:]), nil
	case pgtypes.OIDBytea:
		return append([]byte(nil), b...), nil
	case pgtypes.OIDUUID:
		if err := size(16); err != nil {
			return nil, err
		}
		var u [16]byte
		copy(u[:], b)
		return u, nil
	case pgtypes.OIDDate:
		if err := size(4); err != nil {
			return nil, err
		}
		return pgEpoch.AddDate(0, 0, int(int32(binary.BigEndian.Uint32(b)))), nil
	case pgtypes.OIDTimestamp, pgtypes.OIDTimestamptz:
		if err := size(8); err != nil {
			return nil, err
		}
		return pgEpoch.Add(time.Duration(int64(binary.BigEndian.Uint64(b))) * time.Microsecond), nil
	case pgtypes.OIDNumeric:
		return decodeNumeric(b)
	}
	return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "binary format of type %s is not supported", pgtypes.TypeName(oid))
}

// Numeric's binary format: ndigits, weight, sign, dscale (int16 each),
// then ndigits base-10000 digits; weight is the power of 10000 of the
// first digit.
const (
	numericPos = 0x0000
	numericNeg = 0x4000
	numericNaN = 0xC000
)

func encodeNumeric(s string) ([]byte, error) {
	if s == "NaN" {
		return []byte{0, 0, 0, 0, 0xC0, 0, 0, 0}, nil
	}
	sign := uint16(numericPos)
	if strings.HasPrefix(s, "-") {
		sign, s = numericNeg, s[1:]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	dscale := len(frac)
	intPart = strings.TrimLeft(intPart, "0")
	// Pad to whole base-10000 digits on both sides of the point.
	if pad := (4 - len(intPart)%4) % 4; pad > 0 {
		intPart = strings.Repeat("0", pad) + intPart
	}
	if pad := (4 - len(frac)%4) % 4; pad > 0 {
		frac += strings.Repeat("0", pad)
	}
	all := intPart + frac
	var digits []uint16
	for i := 0; i < len(all); i += 4 {
		var d uint16
		for _, c := range all[i : i+4] {
			d = d*10 + uint16(c-'0')
		}
		digits = append(digits, d)
	}
	weight := len(intPart)/4 - 1
	// Strip leading and trailing zero digits.
	for len(digits) > 0 && digits[0] == 0 {
		digits = digits[1:]
		weight--
	}
	for len(digits) > 0 && digits[len(digits)-1] == 0 {
		digits = digits[:len(digits)-1]
	}
	if len(digits) == 0 {
		weight, sign = 0, numericPos
	}
	out := make([]byte, 0, 8+2*len(digits))
	out = binary.BigEndian.AppendUint16(out, uint16(len(digits)))
	out = binary.BigEndian.AppendUint16(out, uint16(int16(weight)))
	out = binary.BigEndian.AppendUint16(out, sign)
	out = binary.BigEndian.AppendUint16(out, uint16(dscale))
	for _, d := range digits {
		out = binary.BigEndian.AppendUint16(out, d)
	}
	return out, nil
}

func decodeNumeric(b []byte) (any, error) {
	if len(b) < 8 {
		return nil, sqlstate.Errorf(sqlstate.CodeProtocolViolation, "incorrect binary data format in a numeric parameter")
	}
	n := int(binary.BigEndian.Uint16(b))
	weight := int(int16(binary.BigEndian.Uint16(b[2:])))
	sign := binary.BigEndian.Uint16(b[4:])
	dscale := int(binary.BigEndian.Uint16(b[6:]))
	if sign == numericNaN {
		return pgtypes.Numeric("NaN"), nil
	}
	if len(b) != 8+2*n || dscale > 16383 {
		return nil, sqlstate.Errorf(sqlstate.CodeProtocolViolation, "incorrect binary data format in a numeric parameter")
	}
	r := new(big.Rat)
	base := big.NewRat(10000, 1)
	for i := 0; i < n; i++ {
		d := int64(binary.BigEndian.Uint16(b[8+2*i:]))
		if d >= 10000 {
			return nil, sqlstate.Errorf(sqlstate.CodeProtocolViolation, "invalid digit in a numeric parameter")
		}
		term := new(big.Rat).SetInt64(d)
		exp := weight - i
		pow := new(big.Rat).SetInt64(1)
		for e := 0; e < abs(exp); e++ {
			pow.Mul(pow, base)
		}
		if exp < 0 {
			pow.Inv(pow)
		}
		r.Add(r, term.Mul(term, pow))
	}
	if sign == numericNeg {
		r.Neg(r)
	}
	return pgtypes.Numeric(r.FloatString(dscale)), nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
