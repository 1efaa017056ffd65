package pgwire

import (
	"bytes"
	"encoding/binary"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/cellardb/cellar/query/pgeval"
	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// Values on the wire: text format is pgeval.FormatTextStyle under the
// session's DateStyle, TimeZone and IntervalStyle; binary format is
// PostgreSQL's send/recv format for each type. PostgreSQL never refuses
// to send a value, so neither does encodeBinary: a value it has no
// binary form for goes as its text (the binary form of the text types).

// pgEpoch is the zero of PostgreSQL's binary dates and timestamps.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// sessionStyle is how a session writes dates, times and intervals.
func sessionStyle(s Session) pgtypes.Style {
	if s == nil {
		return pgtypes.DefaultStyle
	}
	return s.Style()
}

// encodeText writes v in PostgreSQL's text format for type oid.
func encodeText(oid uint32, v any, st pgtypes.Style) []byte {
	return []byte(pgeval.FormatTextStyle(oid, v, st))
}

// appendText appends v in PostgreSQL's text format for type oid.
func appendText(b []byte, oid uint32, v any, st pgtypes.Style) []byte {
	if x, ok := v.(string); ok && (oid == pgtypes.OIDText || oid == pgtypes.OIDVarchar) {
		return append(b, x...)
	}
	return append(b, pgeval.FormatTextStyle(oid, v, st)...)
}

// encodeBinary writes v in PostgreSQL's binary format for type oid.
func encodeBinary(oid uint32, v any) ([]byte, error) {
	return appendBinary(nil, oid, v), nil
}

func appendBinary(b []byte, oid uint32, v any) []byte {
	switch x := v.(type) {
	case bool:
		if x {
			return append(b, 1)
		}
		return append(b, 0)
	case int64:
		switch oid {
		case pgtypes.OIDInt2:
			return binary.BigEndian.AppendUint16(b, uint16(x))
		case pgtypes.OIDInt4, pgeval.OIDOid, pgeval.OIDXid, pgeval.OIDRegclass, pgeval.OIDRegtype, pgeval.OIDRegproc,
			pgeval.OIDRegnamespace, pgeval.OIDRegrole:
			return binary.BigEndian.AppendUint32(b, uint32(x))
		case pgtypes.OIDInt8:
			return binary.BigEndian.AppendUint64(b, uint64(x))
		case pgtypes.OIDFloat4:
			return binary.BigEndian.AppendUint32(b, math.Float32bits(float32(x)))
		case pgtypes.OIDFloat8:
			return binary.BigEndian.AppendUint64(b, math.Float64bits(float64(x)))
		case pgtypes.OIDNumeric:
			n, _ := encodeNumeric(strconv.FormatInt(x, 10))
			return append(b, n...)
		}
		if !isTextual(oid) {
			return binary.BigEndian.AppendUint64(b, uint64(x))
		}
	case float64:
		switch oid {
		case pgtypes.OIDFloat4:
			return binary.BigEndian.AppendUint32(b, math.Float32bits(float32(x)))
		case pgtypes.OIDFloat8:
			return binary.BigEndian.AppendUint64(b, math.Float64bits(x))
		}
		if !isTextual(oid) {
			return binary.BigEndian.AppendUint64(b, math.Float64bits(x))
		}
	case string:
		switch oid {
		case pgtypes.OIDJSONB:
			return append(append(b, 1), x...)
		case pgeval.OIDChar:
			// "char" is one byte; the empty value is a zero byte.
			if x == "" {
				return append(b, 0)
			}
			return append(b, x[0])
		case pgeval.OIDInet:
			if out, ok := appendInet(b, x); ok {
				return out
			}
		}
		return append(b, x...)
	case []byte:
		if oid == pgtypes.OIDBytea || isTextual(oid) {
			return append(b, x...)
		}
	case [16]byte:
		return append(b, x[:]...)
	case pgtypes.Interval:
		if !isTextual(oid) {
			return appendInterval(b, x)
		}
	case pgtypes.Numeric:
		if oid == pgtypes.OIDNumeric || !isTextual(oid) {
			n, _ := encodeNumeric(string(x))
			return append(b, n...)
		}
	case time.Time:
		switch oid {
		case pgtypes.OIDDate:
			switch pgtypes.IsInfinite(x) {
			case 1:
				return binary.BigEndian.AppendUint32(b, math.MaxInt32)
			case -1:
				return binary.BigEndian.AppendUint32(b, 1<<31)
			}
			u := x.UTC()
			days := daysFromCivil(u.Year(), int(u.Month()), u.Day()) - daysFromCivil(2000, 1, 1)
			return binary.BigEndian.AppendUint32(b, uint32(int32(days)))
		case pgeval.OIDTime:
			return binary.BigEndian.AppendUint64(b, uint64(pgtypes.TimeOfDayMicros(x)))
		}
		if !isTextual(oid) {
			switch pgtypes.IsInfinite(x) {
			case 1:
				return binary.BigEndian.AppendUint64(b, math.MaxInt64)
			case -1:
				return binary.BigEndian.AppendUint64(b, 1<<63)
			}
			return binary.BigEndian.AppendUint64(b, uint64(timestampMicros(x)))
		}
	case pgeval.Reg:
		if !isTextual(oid) {
			return binary.BigEndian.AppendUint32(b, x.OID)
		}
	case pgeval.Array:
		if !isTextual(oid) {
			return appendArray(b, x)
		}
	case pgeval.Record:
		if !isTextual(oid) {
			b = binary.BigEndian.AppendUint32(b, uint32(len(x.Vals)))
			for i, e := range x.Vals {
				var eo uint32 = pgtypes.OIDText
				if i < len(x.Cols) {
					eo = x.Cols[i].OID
				}
				b = binary.BigEndian.AppendUint32(b, eo)
				b = appendElem(b, eo, e)
			}
			return b
		}
	}
	// The text form: what the text types send, and the fallback.
	return append(b, pgeval.FormatText(oid, v)...)
}

// isTextual reports whether a type's binary form is its text.
func isTextual(oid uint32) bool {
	switch oid {
	case pgtypes.OIDText, pgtypes.OIDVarchar, pgtypes.OIDName, pgtypes.OIDUnknown, pgtypes.OIDJSON, pgeval.OIDBpchar, pgeval.OIDPgNodeTree:
		return true
	}
	return false
}

// appendInet writes inet_send's form of an address or a network: family
// (2 for IPv4, 3 for IPv6), prefix bits, is-cidr (0), address length and
// address.
func appendInet(b []byte, s string) ([]byte, bool) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return b, false
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	a := p.Addr().Unmap()
	family := byte(2)
	if a.Is6() {
		family = 3
	}
	raw := a.AsSlice()
	return append(append(b, family, byte(p.Bits()), 0, byte(len(raw))), raw...), true
}

// appendElem writes a length-prefixed value, -1 for NULL.
func appendElem(b []byte, oid uint32, v any) []byte {
	if v == nil {
		return binary.BigEndian.AppendUint32(b, 0xffffffff)
	}
	at := len(b)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = appendBinary(b, oid, v)
	binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return b
}

// appendArray writes array_send's format: ndim, has-nulls flag, element
// type, then each dimension's size and lower bound, then the elements.
func appendArray(b []byte, a pgeval.Array) []byte {
	if len(a.Vals) == 0 {
		b = binary.BigEndian.AppendUint32(b, 0)
		b = binary.BigEndian.AppendUint32(b, 0)
		return binary.BigEndian.AppendUint32(b, a.Elem)
	}
	hasNull := uint32(0)
	for _, e := range a.Vals {
		if e == nil {
			hasNull = 1
		}
	}
	lower := uint32(1)
	if a.ZeroBased {
		lower = 0
	}
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint32(b, hasNull)
	b = binary.BigEndian.AppendUint32(b, a.Elem)
	b = binary.BigEndian.AppendUint32(b, uint32(len(a.Vals)))
	b = binary.BigEndian.AppendUint32(b, lower)
	for _, e := range a.Vals {
		b = appendElem(b, a.Elem, e)
	}
	return b
}

// appendInterval writes interval_send's format: microseconds, days,
// months.
func appendInterval(b []byte, iv pgtypes.Interval) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(iv.Micros))
	b = binary.BigEndian.AppendUint32(b, uint32(iv.Days))
	return binary.BigEndian.AppendUint32(b, uint32(iv.Months))
}

// timestampMicros is microseconds since 2000-01-01 UTC, without
// time.Duration's ±292-year limit.
func timestampMicros(t time.Time) int64 {
	u := t.UTC()
	days := daysFromCivil(u.Year(), int(u.Month()), u.Day()) - daysFromCivil(2000, 1, 1)
	return days*86400e6 + int64(u.Hour())*3600e6 + int64(u.Minute())*60e6 + int64(u.Second())*1e6 + int64(u.Nanosecond()/1000)
}

// daysFromCivil counts days from 1970-01-01 in the proleptic Gregorian
// calendar (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y
	if era < 0 {
		era -= 399
	}
	era /= 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
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
		return pgtypes.NormalizeJSONB(string(b[1:]))
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
		switch d := int32(binary.BigEndian.Uint32(b)); d {
		case math.MaxInt32:
			return pgtypes.TimeInfinity, nil
		case math.MinInt32:
			return pgtypes.TimeNegInfinity, nil
		default:
			return pgEpoch.AddDate(0, 0, int(d)), nil
		}
	case pgtypes.OIDTimestamp, pgtypes.OIDTimestamptz:
		if err := size(8); err != nil {
			return nil, err
		}
		us := int64(binary.BigEndian.Uint64(b))
		switch us {
		case math.MaxInt64:
			return pgtypes.TimeInfinity, nil
		case math.MinInt64:
			return pgtypes.TimeNegInfinity, nil
		}
		days := us / 86400e6
		us -= days * 86400e6
		if us < 0 {
			days--
			us += 86400e6
		}
		return pgEpoch.AddDate(0, 0, int(days)).Add(time.Duration(us) * time.Microsecond), nil
	case pgtypes.OIDNumeric:
		return decodeNumeric(b)
	case pgtypes.OIDInterval:
		if err := size(16); err != nil {
			return nil, err
		}
		return pgtypes.Interval{
			Micros: int64(binary.BigEndian.Uint64(b)),
			Days:   int32(binary.BigEndian.Uint32(b[8:])),
			Months: int32(binary.BigEndian.Uint32(b[12:])),
		}, nil
	}
	return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "binary format of type %s is not supported", pgtypes.TypeName(oid))
}

// Numeric's binary format: ndigits, weight, sign, dscale (int16 each),
// then ndigits base-10000 digits; weight is the power of 10000 of the
// first digit.
const (
	numericPos  = 0x0000
	numericNeg  = 0x4000
	numericNaN  = 0xC000
	numericPInf = 0xD000
	numericNInf = 0xF000
)

func encodeNumeric(s string) ([]byte, error) {
	// The special values have no digits; numeric_send writes the
	// infinities with a dscale of 32, what their short header reads as.
	switch pgtypes.Numeric(s) {
	case pgtypes.NumericNaN:
		return []byte{0, 0, 0, 0, 0xC0, 0, 0, 0}, nil
	case pgtypes.NumericPosInf:
		return []byte{0, 0, 0, 0, 0xD0, 0, 0, 0x20}, nil
	case pgtypes.NumericNegInf:
		return []byte{0, 0, 0, 0, 0xF0, 0, 0, 0x20}, nil
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

// decodeNumeric reads numeric_send's form — the number of base-10000
// digits, the weight of the first (its power of 10000), the sign word,
// the display scale, then the digits — into the decimal text it stands
// for, written group by group so that the time is linear in the number
// of digits (a Bind may carry 131072 of them). Fraction digits beyond the
// display scale are cut off, as numeric_recv truncates them.
func decodeNumeric(b []byte) (any, error) {
	bad := func(what string) error {
		return sqlstate.Errorf("22P03", "invalid %s in external \"numeric\" value", what)
	}
	if len(b) < 8 {
		return nil, sqlstate.Errorf(sqlstate.CodeProtocolViolation, "incorrect binary data format in a numeric parameter")
	}
	n := int(binary.BigEndian.Uint16(b))
	weight := int(int16(binary.BigEndian.Uint16(b[2:])))
	sign := binary.BigEndian.Uint16(b[4:])
	dscale := int(binary.BigEndian.Uint16(b[6:]))
	switch sign {
	case numericNaN:
		return pgtypes.NumericNaN, nil
	case numericPInf:
		return pgtypes.NumericPosInf, nil
	case numericNInf:
		return pgtypes.NumericNegInf, nil
	case numericPos, numericNeg:
	default:
		return nil, bad("sign")
	}
	if len(b) != 8+2*n {
		return nil, sqlstate.Errorf(sqlstate.CodeProtocolViolation, "incorrect binary data format in a numeric parameter")
	}
	if dscale > 0x3FFF {
		return nil, bad("scale")
	}
	for i := 0; i < n; i++ {
		if binary.BigEndian.Uint16(b[8+2*i:]) >= 10000 {
			return nil, bad("digit")
		}
	}
	digit := func(i int) int {
		if i < 0 || i >= n {
			return 0
		}
		return int(binary.BigEndian.Uint16(b[8+2*i:]))
	}
	out := make([]byte, 0, 4*max(weight+1, 1)+dscale+3)
	if sign == numericNeg {
		out = append(out, '-')
	}
	lead := len(out)
	for i := 0; i <= weight; i++ {
		if d := digit(i); len(out) == lead {
			if d != 0 {
				out = strconv.AppendInt(out, int64(d), 10)
			}
		} else {
			out = append(out, byte('0'+d/1000), byte('0'+d/100%10), byte('0'+d/10%10), byte('0'+d%10))
		}
	}
	if len(out) == lead {
		out = append(out, '0')
	}
	if dscale > 0 {
		out = append(out, '.')
		for k := 0; k < dscale; k += 4 {
			d := digit(weight + 1 + k/4)
			g := [4]byte{byte('0' + d/1000), byte('0' + d/100%10), byte('0' + d/10%10), byte('0' + d%10)}
			out = append(out, g[:min(4, dscale-k)]...)
		}
	}
	if sign == numericNeg && !bytes.ContainsFunc(out, func(r rune) bool { return r >= '1' && r <= '9' }) {
		out = out[1:] // zero, or all its digits cut: numeric has no -0
	}
	return pgtypes.Numeric(out), nil
}
