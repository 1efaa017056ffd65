package pgtypes

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// FormatText writes a value in PostgreSQL's text output format for its
// type: what psql prints and what the wire layer sends in text format,
// with PostgreSQL's default settings (DateStyle ISO, TimeZone UTC).
func FormatText(oid uint32, v any) string {
	return FormatTextStyle(oid, v, DefaultStyle)
}

// FormatTextStyle is FormatText under a session's DateStyle, TimeZone
// and IntervalStyle.
func FormatTextStyle(oid uint32, v any, st Style) string {
	switch x := v.(type) {
	case nil:
		return ""
	case bool:
		if x {
			return "t"
		}
		return "f"
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		if st.FloatDigits > 0 {
			return formatFloatDigits(x, oid == OIDFloat4, st.FloatDigits)
		}
		return formatFloat(x, oid == OIDFloat4)
	case Numeric:
		return string(x)
	case string:
		return x
	case []byte:
		return `\x` + hex.EncodeToString(x)
	case [16]byte:
		h := hex.EncodeToString(x[:])
		return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	case time.Time:
		switch oid {
		case OIDDate, OIDTimestamp, OIDTimestamptz:
			return formatDateTime(oid, x, st)
		}
		return formatDateTime(OIDTimestamptz, x, st)
	case Interval:
		return FormatInterval(x, st.IntervalStyle)
	}
	return fmt.Sprint(v)
}

// formatFloat writes the shortest text that reads back exactly, as
// PostgreSQL 12 and later do (extra_float_digits > 0): fixed notation
// for decimal exponents from -4 up to the type's DBL_DIG/FLT_DIG (15,
// 6), exponential with at least two exponent digits otherwise.
func formatFloat(f float64, single bool) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	bits, maxExp := 64, 15
	if single {
		bits, maxExp = 32, 6
	}
	if f == 0 {
		if math.Signbit(f) {
			return "-0"
		}
		return "0"
	}
	e := strconv.FormatFloat(f, 'e', -1, bits)
	i := strings.LastIndexByte(e, 'e')
	exp, _ := strconv.Atoi(e[i+1:])
	if exp < -4 || exp >= maxExp {
		return e
	}
	return strconv.FormatFloat(f, 'f', -1, bits)
}

// formatFloatDigits is float output with extra_float_digits at 0 or
// below: %.*g with 15 (float4: 6) plus the setting's digits.
func formatFloatDigits(f float64, single bool, digits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	bits := 64
	if single {
		bits, digits = 32, max(digits-9, 1)
	}
	return strconv.FormatFloat(f, 'g', digits, bits)
}
