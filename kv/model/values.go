package model

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"time"
	"unicode/utf8"
)

// Value encodings (DESIGN.md section 4). SQL and the native API store
// typed values in cells the same way, so that an SQL BIGINT column and a
// native Increment work on the same cell:
//
//	BIGINT, INTEGER, SMALLINT   8-byte big-endian two's complement
//	                            (INTEGER and SMALLINT range-checked)
//	DOUBLE PRECISION            IEEE-754 big-endian, 8 bytes
//	REAL                        IEEE-754 big-endian, 4 bytes
//	BOOLEAN                     one byte, 0x00 or 0x01
//	TIMESTAMPTZ                 int64 µs since the Unix epoch, big-endian
//	DATE                        int32 days since the Unix epoch, big-endian
//	UUID                        16 raw bytes
//	NUMERIC                     its canonical decimal text
//	TEXT                        UTF-8
//	BYTEA                       raw
//	JSONB                       JSON text
//
// Go values: int64, float64, bool, time.Time, [16]byte, string (NUMERIC,
// TEXT, JSONB) and []byte.

// ValueType is the type of a typed column.
type ValueType uint8

const (
	TypeBytea ValueType = iota
	TypeText
	TypeInt8
	TypeInt4
	TypeInt2
	TypeFloat8
	TypeFloat4
	TypeBool
	TypeTimestamptz
	TypeDate
	TypeUUID
	TypeNumeric
	TypeJSONB
)

var typeNames = [...]string{"bytea", "text", "bigint", "integer", "smallint", "double precision", "real",
	"boolean", "timestamptz", "date", "uuid", "numeric", "jsonb"}

func (t ValueType) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", t)
}

// ParseValueType reads a type name as String writes it.
func ParseValueType(name string) (ValueType, bool) {
	for i, n := range typeNames {
		if n == name {
			return ValueType(i), true
		}
	}
	return 0, false
}

var unixDay = 24 * time.Hour

// EncodeValue writes a value of type t as a cell value.
func EncodeValue(t ValueType, v any) ([]byte, error) {
	bad := func() error {
		return fmt.Errorf("%w: a %T cannot be stored as %s", ErrInvalidArgument, v, t)
	}
	switch t {
	case TypeInt8, TypeInt4, TypeInt2:
		n, ok := v.(int64)
		if !ok {
			return nil, bad()
		}
		if (t == TypeInt4 && (n > math.MaxInt32 || n < math.MinInt32)) || (t == TypeInt2 && (n > math.MaxInt16 || n < math.MinInt16)) {
			return nil, fmt.Errorf("%w: %d is out of range for %s", ErrInvalidArgument, n, t)
		}
		return binary.BigEndian.AppendUint64(nil, uint64(n)), nil
	case TypeFloat8, TypeFloat4:
		f, ok := v.(float64)
		if !ok {
			return nil, bad()
		}
		if t == TypeFloat4 {
			return binary.BigEndian.AppendUint32(nil, math.Float32bits(float32(f))), nil
		}
		return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)), nil
	case TypeBool:
		b, ok := v.(bool)
		if !ok {
			return nil, bad()
		}
		if b {
			return []byte{1}, nil
		}
		return []byte{0}, nil
	case TypeTimestamptz:
		ts, ok := v.(time.Time)
		if !ok {
			return nil, bad()
		}
		return binary.BigEndian.AppendUint64(nil, uint64(ts.UnixMicro())), nil
	case TypeDate:
		d, ok := v.(time.Time)
		if !ok {
			return nil, bad()
		}
		days := int64(math.Floor(float64(d.UTC().Unix()) / unixDay.Seconds()))
		return binary.BigEndian.AppendUint32(nil, uint32(int32(days))), nil
	case TypeUUID:
		u, ok := v.([16]byte)
		if !ok {
			return nil, bad()
		}
		return u[:], nil
	case TypeNumeric:
		s, ok := v.(string)
		if !ok {
			return nil, bad()
		}
		// Written as it is read (parseNumeric): NaN and the infinities
		// are values too.
		if _, err := parseNumeric(s); err != nil {
			return nil, fmt.Errorf("%w: %q is not a number", ErrInvalidArgument, s)
		}
		return []byte(s), nil
	case TypeText, TypeJSONB:
		s, ok := v.(string)
		if !ok {
			return nil, bad()
		}
		if !utf8.ValidString(s) {
			return nil, fmt.Errorf("%w: %s value is not valid UTF-8", ErrInvalidArgument, t)
		}
		return []byte(s), nil
	case TypeBytea:
		b, ok := v.([]byte)
		if !ok {
			return nil, bad()
		}
		return b, nil
	}
	return nil, fmt.Errorf("%w: unknown type %s", ErrInvalidArgument, t)
}

// DecodeValue reads a cell value of type t. A value of the wrong size for
// a fixed-size type is an error that says so (it was written as another
// type, through the native API say).
func DecodeValue(t ValueType, b []byte) (any, error) {
	size := func(n int) error {
		if len(b) != n {
			return fmt.Errorf("%w: a %s cell holds %d bytes, not %d", ErrFailedPrecondition, t, len(b), n)
		}
		return nil
	}
	switch t {
	case TypeInt8, TypeInt4, TypeInt2:
		if err := size(8); err != nil {
			return nil, err
		}
		return int64(binary.BigEndian.Uint64(b)), nil
	case TypeFloat8:
		if err := size(8); err != nil {
			return nil, err
		}
		return math.Float64frombits(binary.BigEndian.Uint64(b)), nil
	case TypeFloat4:
		if err := size(4); err != nil {
			return nil, err
		}
		return float64(math.Float32frombits(binary.BigEndian.Uint32(b))), nil
	case TypeBool:
		if err := size(1); err != nil {
			return nil, err
		}
		return b[0] != 0, nil
	case TypeTimestamptz:
		if err := size(8); err != nil {
			return nil, err
		}
		return time.UnixMicro(int64(binary.BigEndian.Uint64(b))).UTC(), nil
	case TypeDate:
		if err := size(4); err != nil {
			return nil, err
		}
		return time.Unix(int64(int32(binary.BigEndian.Uint32(b)))*int64(unixDay.Seconds()), 0).UTC(), nil
	case TypeUUID:
		if err := size(16); err != nil {
			return nil, err
		}
		var u [16]byte
		copy(u[:], b)
		return u, nil
	case TypeNumeric, TypeText, TypeJSONB:
		return string(b), nil
	case TypeBytea:
		return bytes.Clone(b), nil
	}
	return nil, fmt.Errorf("%w: unknown type %s", ErrInvalidArgument, t)
}

// Row keys of tables with a primary key that is not a single TEXT or
// BYTEA column are an order-preserving encoding of the key's values, so
// that row order is the key's order and ranges of the key are row ranges:
//
//	integers      0x01 then 8 bytes big-endian with the sign bit flipped
//	floats        0x01 then the IEEE bits, all flipped if negative, else
//	              the sign bit flipped (so -0 < +0 as bits; NaN last)
//	booleans      0x01 then 0x00 or 0x01
//	timestamptz   as integers, of µs since the epoch
//	date          as integers, of days since the epoch
//	uuid          0x01 then the 16 bytes
//	text, bytea,  0x01 then the bytes with 0x00 written as 0x00 0xff, and
//	numeric       0x00 0x01 to end them (so "a" < "a\x00" < "ab")
//
// (numeric keys sort as text, which is right only for equal scales; the
// SQL layer refuses numeric key columns). A single TEXT or BYTEA key is
// the row key itself, unencoded, so that the native API sees the natural
// key.

// AppendKeyValue appends one key column's value in the order-preserving
// encoding.
func AppendKeyValue(dst []byte, t ValueType, v any) ([]byte, error) {
	dst = append(dst, 0x01)
	switch t {
	case TypeInt8, TypeInt4, TypeInt2, TypeTimestamptz, TypeDate:
		var n int64
		switch x := v.(type) {
		case int64:
			n = x
		case time.Time:
			if t == TypeDate {
				n = int64(math.Floor(float64(x.UTC().Unix()) / unixDay.Seconds()))
			} else {
				n = x.UnixMicro()
			}
		default:
			return nil, fmt.Errorf("%w: a %T cannot be a %s key", ErrInvalidArgument, v, t)
		}
		return binary.BigEndian.AppendUint64(dst, uint64(n)^(1<<63)), nil
	case TypeFloat8, TypeFloat4:
		f, ok := v.(float64)
		if !ok {
			return nil, fmt.Errorf("%w: a %T cannot be a %s key", ErrInvalidArgument, v, t)
		}
		bits := math.Float64bits(f)
		if math.IsNaN(f) {
			bits = math.MaxUint64
		} else if bits>>63 == 1 {
			bits = ^bits
		} else {
			bits |= 1 << 63
		}
		return binary.BigEndian.AppendUint64(dst, bits), nil
	case TypeBool:
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("%w: a %T cannot be a %s key", ErrInvalidArgument, v, t)
		}
		if b {
			return append(dst, 1), nil
		}
		return append(dst, 0), nil
	case TypeUUID:
		u, ok := v.([16]byte)
		if !ok {
			return nil, fmt.Errorf("%w: a %T cannot be a %s key", ErrInvalidArgument, v, t)
		}
		return append(dst, u[:]...), nil
	case TypeText, TypeBytea, TypeNumeric, TypeJSONB:
		var b []byte
		switch x := v.(type) {
		case string:
			b = []byte(x)
		case []byte:
			b = x
		default:
			return nil, fmt.Errorf("%w: a %T cannot be a %s key", ErrInvalidArgument, v, t)
		}
		for _, c := range b {
			if c == 0 {
				dst = append(dst, 0, 0xff)
			} else {
				dst = append(dst, c)
			}
		}
		return append(dst, 0, 1), nil
	}
	return nil, fmt.Errorf("%w: unknown type %s", ErrInvalidArgument, t)
}

// DecodeKeyValues reads the values of an encoded key of the given column types.
func DecodeKeyValues(key []byte, types []ValueType) ([]any, error) {
	bad := func(what string) error {
		return fmt.Errorf("%w: row key %q: %s", ErrCorruption, key, what)
	}
	out := make([]any, 0, len(types))
	rest := key
	for _, t := range types {
		if len(rest) == 0 || rest[0] != 0x01 {
			return nil, bad("missing value marker")
		}
		rest = rest[1:]
		switch t {
		case TypeInt8, TypeInt4, TypeInt2, TypeTimestamptz, TypeDate:
			if len(rest) < 8 {
				return nil, bad("short integer")
			}
			n := int64(binary.BigEndian.Uint64(rest) ^ (1 << 63))
			rest = rest[8:]
			switch t {
			case TypeTimestamptz:
				out = append(out, time.UnixMicro(n).UTC())
			case TypeDate:
				out = append(out, time.Unix(n*int64(unixDay.Seconds()), 0).UTC())
			default:
				out = append(out, n)
			}
		case TypeFloat8, TypeFloat4:
			if len(rest) < 8 {
				return nil, bad("short float")
			}
			bits := binary.BigEndian.Uint64(rest)
			rest = rest[8:]
			switch {
			case bits == math.MaxUint64:
				out = append(out, math.NaN())
			case bits>>63 == 1:
				out = append(out, math.Float64frombits(bits&^(1<<63)))
			default:
				out = append(out, math.Float64frombits(^bits))
			}
		case TypeBool:
			if len(rest) < 1 {
				return nil, bad("short boolean")
			}
			out = append(out, rest[0] != 0)
			rest = rest[1:]
		case TypeUUID:
			if len(rest) < 16 {
				return nil, bad("short uuid")
			}
			var u [16]byte
			copy(u[:], rest)
			out = append(out, u)
			rest = rest[16:]
		case TypeText, TypeBytea, TypeNumeric, TypeJSONB:
			var b []byte
			for {
				i := bytes.IndexByte(rest, 0)
				if i < 0 || i+1 >= len(rest) {
					return nil, bad("unterminated string")
				}
				b = append(b, rest[:i]...)
				switch rest[i+1] {
				case 0xff:
					b = append(b, 0)
					rest = rest[i+2:]
					continue
				case 0x01:
					rest = rest[i+2:]
				default:
					return nil, bad("bad string escape")
				}
				break
			}
			if t == TypeBytea {
				out = append(out, b)
			} else {
				out = append(out, string(b))
			}
		default:
			return nil, bad("unknown type")
		}
	}
	if len(rest) > 0 {
		return nil, bad("trailing bytes")
	}
	return out, nil
}
