package pgtypes

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"time"
)

// FormatText writes a value in PostgreSQL's text output format for its
// type: what psql prints and what the wire layer sends in text format.
func FormatText(oid uint32, v any) string {
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
		case OIDDate:
			return x.UTC().Format("2006-01-02")
		case OIDTimestamp:
			return x.UTC().Format("2006-01-02 15:04:05.999999")
		}
		return x.UTC().Format("2006-01-02 15:04:05.999999") + "+00"
	}
	return fmt.Sprint(v)
}

// formatFloat writes the shortest text that reads back exactly, as
// PostgreSQL 12 and later do.
func formatFloat(f float64, single bool) string {
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
		bits = 32
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}
