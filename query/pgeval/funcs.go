package pgeval

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// Pseudo parameter types of the function table.
const (
	pAny      uint32 = OIDAny
	pAnyArray uint32 = 2277
	pAnyNum   uint32 = 0xffff0001 // any number type; the result follows it
	pAnyElem  uint32 = 2283
)

// ServerVersion is what version() reports when the session has no
// server_version setting.
const ServerVersion = "15.0"

// builtin is one function of the table.
type builtin struct {
	args     []uint32 // parameter types; with variadic, the last repeats
	min      int      // fewest arguments (default: len(args))
	variadic bool
	// names are the parameters' names, for calls in named notation
	// (make_interval(days => 1)); defaults are the values of parameters
	// from min on that a named call leaves out.
	names    []string
	defaults []any
	// ret is the result type; retf, if set, computes it from the
	// (coerced) argument types.
	ret  uint32
	retf func(args []uint32) uint32
	// lenient functions are called with NULL arguments; others return
	// NULL for any NULL argument.
	lenient bool
	fn      func(ec *evalCtx, a []any, t []uint32) (any, error)
	// srf functions return rows of cols.
	srf  func(ec *evalCtx, a []any, t []uint32) ([][]any, error)
	cols func(t []uint32) []pgtypes.Column
}

func (b *builtin) minArgs() int {
	if b.min > 0 || b.variadic {
		return b.min
	}
	if b.min < 0 {
		return 0
	}
	return len(b.args)
}

var (
	tText = pgtypes.OIDText
	tInt4 = pgtypes.OIDInt4
	tInt8 = pgtypes.OIDInt8
	tBool = pgtypes.OIDBool
	tName = pgtypes.OIDName
	tF8   = pgtypes.OIDFloat8
	tNum  = pgtypes.OIDNumeric
	tTS   = pgtypes.OIDTimestamptz
	tTSo  = pgtypes.OIDTimestamp
	tIv   = OIDInterval
)

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}

func sameAsFirst(t []uint32) uint32 { return t[0] }

// funcs is the function table: built once, never written after.
var funcs map[string][]*builtin

func init() { funcs = buildFuncs() }

func textFn(f func(s string) any) *builtin {
	return &builtin{args: []uint32{tText}, ret: tText, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) { return f(str(a[0])), nil }}
}

func buildFuncs() map[string][]*builtin {
	m := map[string][]*builtin{}
	add := func(name string, b ...*builtin) { m[name] = append(m[name], b...) }

	// Strings.
	add("lower", textFn(func(s string) any { return strings.ToLower(s) }))
	add("upper", textFn(func(s string) any { return strings.ToUpper(s) }))
	add("initcap", textFn(func(s string) any {
		rs := []rune(strings.ToLower(s))
		up := true
		for i, r := range rs {
			if up && unicode.IsLetter(r) {
				rs[i] = unicode.ToUpper(r)
			}
			up = !unicode.IsLetter(r) && !unicode.IsDigit(r)
		}
		return string(rs)
	}))
	add("reverse", textFn(func(s string) any {
		rs := []rune(s)
		for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
			rs[i], rs[j] = rs[j], rs[i]
		}
		return string(rs)
	}))
	lengthFn := &builtin{args: []uint32{tText}, ret: tInt4, fn: func(_ *evalCtx, a []any, t []uint32) (any, error) {
		if t[0] == OIDBpchar {
			return int64(len([]rune(strings.TrimRight(str(a[0]), " ")))), nil
		}
		return int64(len([]rune(str(a[0])))), nil
	}}
	byteaLen := &builtin{args: []uint32{pgtypes.OIDBytea}, ret: tInt4, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) { return int64(len(a[0].([]byte))), nil }}
	add("length", lengthFn, byteaLen)
	add("char_length", lengthFn)
	add("character_length", lengthFn)
	add("octet_length", &builtin{args: []uint32{tText}, ret: tInt4, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) { return int64(len(str(a[0]))), nil }}, byteaLen)
	substr := &builtin{args: []uint32{tText, tInt4, tInt4}, min: 2, ret: tText, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		rs := []rune(str(a[0]))
		start := a[1].(int64)
		end := int64(len(rs)) + 1
		if len(a) > 2 {
			n := a[2].(int64)
			if n < 0 {
				return nil, sqlstate.Errorf(codeSubstringError, "negative substring length not allowed")
			}
			end = start + n
		}
		start = max(start, 1)
		end = min(end, int64(len(rs))+1)
		if start >= end {
			return "", nil
		}
		return string(rs[start-1 : end-1]), nil
	}}
	add("substr", substr)
	add("substring", substr, &builtin{args: []uint32{tText, tText}, ret: tText, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		re, err := compileRegex(str(a[1]), false)
		if err != nil {
			return nil, err
		}
		m := re.FindStringSubmatch(str(a[0]))
		switch {
		case m == nil:
			return nil, nil
		case len(m) > 1:
			return m[1], nil
		}
		return m[0], nil
	}})
	strpos := &builtin{args: []uint32{tText, tText}, ret: tInt4, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		i := strings.Index(str(a[0]), str(a[1]))
		if i < 0 {
			return int64(0), nil
		}
		return int64(len([]rune(str(a[0])[:i])) + 1), nil
	}}
	add("strpos", strpos)
	add("position", strpos)
	add("starts_with", &builtin{args: []uint32{tText, tText}, ret: tBool, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		return strings.HasPrefix(str(a[0]), str(a[1])), nil
	}})
	add("replace", &builtin{args: []uint32{tText, tText, tText}, ret: tText, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		if str(a[1]) == "" {
			return str(a[0]), nil
		}
		return strings.ReplaceAll(str(a[0]), str(a[1]), str(a[2])), nil
	}})
	add("translate", &builtin{args: []uint32{tText, tText, tText}, ret: tText, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		from, to := []rune(str(a[1])), []rune(str(a[2]))
		var b strings.Builder
		for _, r := range str(a[0]) {
			k := -1
			for i, f := range from {
				if f == r {
					k = i
					break
				}
			}
			switch {
			case k < 0:
				b.WriteRune(r)
			case k < len(to):
				b.WriteRune(to[k])
			}
		}
		return b.String(), nil
	}})
	trim := func(left, right bool) *builtin {
		return &builtin{args: []uint32{tText, tText}, min: 1, ret: tText, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
			cut := " "
			if len(a) > 1 {
				cut = str(a[1])
			}
			s := str(a[0])
			if left {
				s = strings.TrimLeft(s, cut)
			}
			if right {
				s = strings.TrimRight(s, cut)
			}
			return s, nil
		}}
	}
	add("btrim", trim(true, true))
	add("trim", trim(true, true))
	add("ltrim", trim(true, false))
	add("rtrim", trim(false, true))
	add("left", &builtin{args: []uint32{tText, tInt4}, ret: tText, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		rs := []rune(str(a[0]))
		n := int(a[1].(int64))
		if n < 0 {
			n = max(len(rs)+n, 0)
		}
		return string(rs[:min(n, len(rs))]), nil
	}})
	add("right", &builtin{args: []uint32{tText, tInt4}, ret: tText, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		rs := []rune(str(a[0]))
		n := int(a[1].(int64))
		if n < 0 {
			n = max(len(rs)+n, 0)
		}
		return string(rs[len(rs)-min(n, len(rs)):]), nil
	}})
	pad := func(left bool) *builtin {
		return &builtin{args: []uint32{tText, tInt4, tText}, min: 2, ret: tText, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
			rs := []rune(str(a[0]))
			n := int(a[1].(int64))
			fill := []rune(" ")
			if len(a) > 2 {
				fill = []rune(str(a[2]))
			}
			if n <= len(rs) {
				return string(rs[:max(n, 0)]), nil
			}
			if len(fill) == 0 {
				return string(rs), nil
			}
			var p []rune
			for len(p) < n-len(rs) {
				p = append(p, fill[len(p)%len(fill)])
			}
			if left {
				return string(p) + string(rs), nil
			}
			return string(rs) + string(p), nil
		}}
	}
	add("lpad", pad(true))
	add("rpad", pad(false))
	add("repeat", &builtin{args: []uint32{tText, tInt4}, ret: tText, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		n := a[1].(int64)
		if n <= 0 {
			return "", nil
		}
		if int64(len(str(a[0])))*n > 1<<28 {
			return nil, sqlstate.Errorf(sqlstate.CodeProgramLimitExceeded, "requested length too large")
		}
		return strings.Repeat(str(a[0]), int(n)), nil
	}})
	add("concat", &builtin{args: []uint32{pAny}, variadic: true, lenient: true, ret: tText, fn: func(ec *evalCtx, a []any, t []uint32) (any, error) {
		var b strings.Builder
		for i, v := range a {
			if v != nil {
				b.WriteString(outText(ec, t[i], v))
			}
		}
		return b.String(), nil
	}})
	add("concat_ws", &builtin{args: []uint32{tText, pAny}, min: 1, variadic: true, lenient: true, ret: tText, fn: func(ec *evalCtx, a []any, t []uint32) (any, error) {
		if a[0] == nil {
			return nil, nil
		}
		var parts []string
		for i, v := range a[1:] {
			if v != nil {
				parts = append(parts, outText(ec, t[i+1], v))
			}
		}
		return strings.Join(parts, str(a[0])), nil
	}})
	add("split_part", &builtin{args: []uint32{tText, tText, tInt4}, ret: tText, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		n := a[2].(int64)
		if n == 0 {
			return nil, sqlstate.Errorf(codeInvalidParameterValue, "field position must not be zero")
		}
		var parts []string
		if str(a[1]) == "" {
			parts = []string{str(a[0])}
		} else {
			parts = strings.Split(str(a[0]), str(a[1]))
		}
		if n < 0 {
			n = int64(len(parts)) + n + 1
		}
		if n < 1 || n > int64(len(parts)) {
			return "", nil
		}
		return parts[n-1], nil
	}})
	add("string_to_array", &builtin{args: []uint32{tText, tText, tText}, min: 2, lenient: true, ret: 1009, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		if a[0] == nil {
			return nil, nil
		}
		s := str(a[0])
		out := Array{Elem: tText, Vals: []any{}}
		if s == "" {
			return out, nil
		}
		var parts []string
		switch {
		case a[1] == nil:
			for _, r := range s {
				parts = append(parts, string(r))
			}
		case str(a[1]) == "":
			parts = []string{s}
		default:
			parts = strings.Split(s, str(a[1]))
		}
		for _, p := range parts {
			if len(a) > 2 && a[2] != nil && p == str(a[2]) {
				out.Vals = append(out.Vals, nil)
			} else {
				out.Vals = append(out.Vals, p)
			}
		}
		return out, nil
	}})
	add("array_to_string", &builtin{args: []uint32{pAnyArray, tText, tText}, min: 2, ret: tText, fn: func(ec *evalCtx, a []any, t []uint32) (any, error) {
		arr := a[0].(Array)
		var parts []string
		for _, v := range arr.Vals {
			if v == nil {
				if len(a) > 2 {
					parts = append(parts, str(a[2]))
				}
				continue
			}
			parts = append(parts, textOfStyle(arr.Elem, v, styleOf(ec)))
		}
		return strings.Join(parts, str(a[1])), nil
	}})
	add("md5", textFn(func(s string) any { h := md5.Sum([]byte(s)); return hex.EncodeToString(h[:]) }),
		&builtin{args: []uint32{pgtypes.OIDBytea}, ret: tText, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
			h := md5.Sum(a[0].([]byte))
			return hex.EncodeToString(h[:]), nil
		}})
	add("encode", &builtin{args: []uint32{pgtypes.OIDBytea, tText}, ret: tText, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		b := a[0].([]byte)
		switch strings.ToLower(str(a[1])) {
		case "hex":
			return hex.EncodeToString(b), nil
		case "base64":
			s := base64.StdEncoding.EncodeToString(b)
			var out strings.Builder
			for i := 0; i < len(s); i += 76 {
				if i > 0 {
					out.WriteByte('\n')
				}
				out.WriteString(s[i:min(i+76, len(s))])
			}
			return out.String(), nil
		case "escape":
			var out strings.Builder
			for _, c := range b {
				switch {
				case c == '\\':
					out.WriteString(`\\`)
				case c == 0 || c >= 0x80:
					fmt.Fprintf(&out, `\%03o`, c)
				default:
					out.WriteByte(c)
				}
			}
			return out.String(), nil
		}
		return nil, sqlstate.Errorf(codeInvalidParameterValue, "unrecognized encoding: \"%s\"", str(a[1]))
	}})
	add("decode", &builtin{args: []uint32{tText, tText}, ret: pgtypes.OIDBytea, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		s := str(a[0])
		switch strings.ToLower(str(a[1])) {
		case "hex":
			b, err := hex.DecodeString(s)
			if err != nil {
				return nil, sqlstate.Errorf(codeInvalidParameterValue, "invalid hexadecimal data: odd number of digits")
			}
			return b, nil
		case "base64":
			b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(s), ""))
			if err != nil {
				return nil, sqlstate.Errorf(codeInvalidParameterValue, "invalid base64 end sequence")
			}
			return b, nil
		case "escape":
			var out []byte
			for i := 0; i < len(s); i++ {
				if s[i] == '\\' && i+1 < len(s) && s[i+1] == '\\' {
					out = append(out, '\\')
					i++
				} else if s[i] == '\\' && i+3 < len(s) {
					n, err := strconv.ParseUint(s[i+1:i+4], 8, 8)
					if err != nil {
						return nil, sqlstate.Errorf(sqlstate.CodeInvalidTextRepresent, "invalid input syntax for type bytea")
					}
					out = append(out, byte(n))
					i += 3
				} else {
					out = append(out, s[i])
				}
			}
			return out, nil
		}
		return nil, sqlstate.Errorf(codeInvalidParameterValue, "unrecognized encoding: \"%s\"", str(a[1]))
	}})
	add("chr", &builtin{args: []uint32{tInt4}, ret: tText, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) { return string(rune(a[0].(int64))), nil }})
	add("ascii", &builtin{args: []uint32{tText}, ret: tInt4, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		for _, r := range str(a[0]) {
			return int64(r), nil
		}
		return int64(0), nil
	}})
	add("quote_ident", textFn(func(s string) any { return quoteIdent(s) }))
	add("similar_to_escape", textFn(func(s string) any { return similarToRegex(s, "\\") }),
		&builtin{args: []uint32{tText, tText}, ret: tText, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
			if len([]rune(str(a[1]))) > 1 {
				return nil, sqlstate.Errorf("22025", "invalid escape string")
			}
			return similarToRegex(str(a[0]), str(a[1])), nil
		}})
	add("quote_literal", &builtin{args: []uint32{pAny}, ret: tText, fn: func(ec *evalCtx, a []any, t []uint32) (any, error) {
		return quoteLiteral(textOfStyle(t[0], a[0], styleOf(ec))), nil
	}})
	add("quote_nullable", &builtin{args: []uint32{pAny}, lenient: true, ret: tText, fn: func(ec *evalCtx, a []any, t []uint32) (any, error) {
		if a[0] == nil {
			return "NULL", nil
		}
		return quoteLiteral(textOfStyle(t[0], a[0], styleOf(ec))), nil
	}})
	add("format", &builtin{args: []uint32{tText, pAny}, min: 1, variadic: true, lenient: true, ret: tText, fn: formatFn})
	add("regexp_replace", &builtin{args: []uint32{tText, tText, tText, tText}, min: 3, ret: tText, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		flags := ""
		if len(a) > 3 {
			flags = str(a[3])
		}
		re, err := compileRegex(str(a[1]), strings.Contains(flags, "i"))
		if err != nil {
			return nil, err
		}
		repl := strings.NewReplacer(`\&`, "${0}", `\1`, "${1}", `\2`, "${2}", `\3`, "${3}", `$`, "$$").Replace(str(a[2]))
		if strings.Contains(flags, "g") {
			return re.ReplaceAllString(str(a[0]), repl), nil
		}
		loc := re.FindStringSubmatchIndex(str(a[0]))
		if loc == nil {
			return str(a[0]), nil
		}
		s := str(a[0])
		var dst []byte
		dst = re.ExpandString(dst, repl, s, loc)
		return s[:loc[0]] + string(dst) + s[loc[1]:], nil
	}})
	add("regexp_split_to_table", &builtin{args: []uint32{tText, tText}, cols: oneCol("regexp_split_to_table", tText), srf: func(_ *evalCtx, a []any, _ []uint32) ([][]any, error) {
		re, err := compileRegex(str(a[1]), false)
		if err != nil {
			return nil, err
		}
		var out [][]any
		for _, p := range re.Split(str(a[0]), -1) {
			out = append(out, []any{p})
		}
		return out, nil
	}})
	add("regexp_split_to_array", &builtin{args: []uint32{tText, tText}, ret: 1009, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		re, err := compileRegex(str(a[1]), false)
		if err != nil {
			return nil, err
		}
		out := Array{Elem: tText}
		for _, p := range re.Split(str(a[0]), -1) {
			out.Vals = append(out.Vals, p)
		}
		return out, nil
	}})
	add("parse_ident", &builtin{args: []uint32{tText, tBool}, min: 1, names: []string{"str", "strict"}, defaults: []any{nil, true}, ret: 1009, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		return parseIdent(str(a[0]), len(a) < 2 || a[1] == true)
	}})

	// Arrays.
	add("array_length", &builtin{args: []uint32{pAnyArray, tInt4}, ret: tInt4, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		arr := a[0].(Array)
		if a[1].(int64) != 1 || len(arr.Vals) == 0 {
			return nil, nil
		}
		return int64(len(arr.Vals)), nil
	}})
	add("array_upper", &builtin{args: []uint32{pAnyArray, tInt4}, ret: tInt4, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		arr := a[0].(Array)
		if a[1].(int64) != 1 || len(arr.Vals) == 0 {
			return nil, nil
		}
		return int64(arr.lower() + len(arr.Vals) - 1), nil
	}})
	add("array_lower", &builtin{args: []uint32{pAnyArray, tInt4}, ret: tInt4, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		arr := a[0].(Array)
		if a[1].(int64) != 1 || len(arr.Vals) == 0 {
			return nil, nil
		}
		return int64(arr.lower()), nil
	}})
	add("array_ndims", &builtin{args: []uint32{pAnyArray}, ret: tInt4, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		if len(a[0].(Array).Vals) == 0 {
			return nil, nil
		}
		return int64(1), nil
	}})
	add("cardinality", &builtin{args: []uint32{pAnyArray}, ret: tInt4, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) { return int64(len(a[0].(Array).Vals)), nil }})
	add("array_position", &builtin{args: []uint32{pAnyArray, pAnyElem}, lenient: true, ret: tInt4, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		if a[0] == nil {
			return nil, nil
		}
		arr := a[0].(Array)
		for i, v := range arr.Vals {
			if (v == nil && a[1] == nil) || (v != nil && a[1] != nil && valuesEqual(v, a[1])) {
				return int64(i + arr.lower()), nil
			}
		}
		return nil, nil
	}})
	add("array_append", &builtin{args: []uint32{pAnyArray, pAnyElem}, lenient: true, retf: sameAsFirst, fn: func(_ *evalCtx, a []any, t []uint32) (any, error) {
		out := Array{Elem: elemOf[t[0]]}
		if a[0] != nil {
			out.Vals = append(out.Vals, a[0].(Array).Vals...)
		}
		out.Vals = append(out.Vals, a[1])
		return out, nil
	}})
	add("array_cat", &builtin{args: []uint32{pAnyArray, pAnyArray}, lenient: true, retf: sameAsFirst, fn: func(_ *evalCtx, a []any, t []uint32) (any, error) {
		out := Array{Elem: elemOf[t[0]], Vals: []any{}}
		for _, v := range a {
			if v != nil {
				out.Vals = append(out.Vals, v.(Array).Vals...)
			}
		}
		return out, nil
	}})
	add("unnest", &builtin{args: []uint32{pAnyArray}, cols: func(t []uint32) []pgtypes.Column {
		return []pgtypes.Column{{Name: "unnest", OID: elemOf[t[0]]}}
	}, srf: func(_ *evalCtx, a []any, _ []uint32) ([][]any, error) {
		var out [][]any
		for _, v := range a[0].(Array).Vals {
			out = append(out, []any{v})
		}
		return out, nil
	}})
	add("generate_subscripts", &builtin{args: []uint32{pAnyArray, tInt4, tBool}, min: 2, cols: oneCol("generate_subscripts", tInt4), srf: func(_ *evalCtx, a []any, _ []uint32) ([][]any, error) {
		arr := a[0].(Array)
		if a[1].(int64) != 1 {
			return nil, nil
		}
		var out [][]any
		for i := range arr.Vals {
			out = append(out, []any{int64(i + arr.lower())})
		}
		if len(a) > 2 && a[2] == true {
			for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
				out[i], out[j] = out[j], out[i]
			}
		}
		return out, nil
	}})
	add("_pg_expandarray", &builtin{args: []uint32{pAnyArray}, cols: func(t []uint32) []pgtypes.Column {
		return []pgtypes.Column{{Name: "x", OID: elemOf[t[0]]}, {Name: "n", OID: tInt4}}
	}, srf: func(_ *evalCtx, a []any, _ []uint32) ([][]any, error) {
		var out [][]any
		for i, v := range a[0].(Array).Vals {
			out = append(out, []any{v, int64(i + 1)})
		}
		return out, nil
	}})
	genSeries := func(t uint32) *builtin {
		return &builtin{args: []uint32{t, t, t}, min: 2, cols: oneCol("generate_series", t), srf: func(ec *evalCtx, a []any, _ []uint32) ([][]any, error) {
			step := any(int64(1))
			if len(a) > 2 {
				step = a[2]
			}
			for i, what := range []string{"start value", "stop value", "step size"}[:len(a)] {
				if n, ok := a[i].(pgtypes.Numeric); ok {
					switch {
					case n == pgtypes.NumericNaN:
						return nil, sqlstate.Errorf(codeInvalidParameterValue, "%s cannot be NaN", what)
					case n.Inf() != 0:
						return nil, sqlstate.Errorf(codeInvalidParameterValue, "%s cannot be infinity", what)
					}
				}
			}
			if compareValues(step, int64(0)) == 0 {
				return nil, sqlstate.Errorf(codeInvalidParameterValue, "step size cannot equal zero")
			}
			var out [][]any
			// The series is charged while it is built, so that a huge one
			// fails cleanly, and released once built: its rows are
			// consumed at once.
			var held int64
			defer func() { ec.release(held) }()
			up := compareValues(step, int64(0)) > 0
			for v := a[0]; ; {
				c := compareValues(v, a[1])
				if (up && c > 0) || (!up && c < 0) {
					break
				}
				if err := ec.chargeN(64); err != nil {
					return nil, err
				}
				held += 64
				out = append(out, []any{v})
				next, err := arithValues("+", t, v, step)
				if err != nil {
					return out, nil
				}
				v = next
			}
			return out, nil
		}}
	}
	tsSeries := func(t uint32) *builtin {
		return &builtin{args: []uint32{t, t, tIv}, cols: oneCol("generate_series", t), srf: func(ec *evalCtx, a []any, _ []uint32) ([][]any, error) {
			var loc *time.Location
			if t == tTS {
				loc = styleOf(ec).Location()
			}
			return timestampSeries(ec, a[0].(time.Time), a[1].(time.Time), a[2].(pgtypes.Interval), loc)
		}}
	}
	add("generate_series", genSeries(tInt4), genSeries(tInt8), genSeries(tNum), tsSeries(tTS), tsSeries(tTSo))

	// Numbers.
	numFn := func(f func(x any, t uint32) (any, error)) *builtin {
		return &builtin{args: []uint32{pAnyNum}, retf: sameAsFirst, fn: func(_ *evalCtx, a []any, t []uint32) (any, error) { return f(a[0], t[0]) }}
	}
	add("abs", numFn(func(x any, t uint32) (any, error) {
		switch v := x.(type) {
		case int64:
			if v == math.MinInt64 || (t == tInt4 && v == math.MinInt32) {
				return nil, rangeError(t)
			}
			if v < 0 {
				return -v, nil
			}
			return v, nil
		case float64:
			return math.Abs(v), nil
		case pgtypes.Numeric:
			return pgtypes.Numeric(strings.TrimPrefix(string(v), "-")), nil
		}
		return x, nil
	}))
	add("sign", numFn(func(x any, t uint32) (any, error) {
		// sign(NaN) is NaN for numeric and 0 for float8, whose sign
		// compares with 0.
		switch v := x.(type) {
		case pgtypes.Numeric:
			if v == pgtypes.NumericNaN {
				return v, nil
			}
		case float64:
			if math.IsNaN(v) {
				return 0.0, nil
			}
		}
		s := compareValues(x, int64(0))
		return numCast(int64(s), t)
	}))
	roundLike := func(name string, mode func(f float64) float64, ratMode func(r *big.Rat, scale int) pgtypes.Numeric) {
		add(name, &builtin{args: []uint32{tF8}, ret: tF8, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) { return mode(a[0].(float64)), nil }},
			&builtin{args: []uint32{tNum, tInt4}, min: 1, ret: tNum, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
				if a[0].(pgtypes.Numeric).IsSpecial() {
					return a[0], nil
				}
				scale := 0
				if len(a) > 1 {
					scale = int(a[1].(int64))
				}
				return ratMode(toRat(a[0]), scale), nil
			}})
	}
	roundLike("round", func(f float64) float64 { return math.RoundToEven(f) }, roundNumeric)
	roundLike("trunc", math.Trunc, truncNumeric)
	floorFn := func(ceil bool) func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		return func(_ *evalCtx, a []any, _ []uint32) (any, error) {
			if n := a[0].(pgtypes.Numeric); n.IsSpecial() {
				return n, nil
			}
			return floorNumeric(toRat(a[0]), ceil), nil
		}
	}
	add("floor", &builtin{args: []uint32{tF8}, ret: tF8, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) { return math.Floor(a[0].(float64)), nil }},
		&builtin{args: []uint32{tNum}, ret: tNum, fn: floorFn(false)})
	ceil := []*builtin{{args: []uint32{tF8}, ret: tF8, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) { return math.Ceil(a[0].(float64)), nil }},
		{args: []uint32{tNum}, ret: tNum, fn: floorFn(true)}}
	add("ceil", ceil...)
	add("ceiling", ceil...)
	add("mod", &builtin{args: []uint32{pAnyNum, pAnyNum}, retf: func(t []uint32) uint32 { return arithType(t[0], t[1]) }, fn: func(_ *evalCtx, a []any, t []uint32) (any, error) {
		return arithValues("%", arithType(t[0], t[1]), a[0], a[1])
	}})
	floatFn := func(name string, f func(x float64) (float64, error)) {
		add(name, &builtin{args: []uint32{tF8}, ret: tF8, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) { return f(a[0].(float64)) }})
	}
	floatFn("sqrt", func(x float64) (float64, error) {
		if x < 0 {
			return 0, sqlstate.Errorf("2201F", "cannot take square root of a negative number")
		}
		return math.Sqrt(x), nil
	})
	floatFn("exp", func(x float64) (float64, error) {
		r := floatExp(x)
		switch {
		case math.IsInf(r, 0) && !math.IsInf(x, 0):
			return 0, sqlstate.Errorf(sqlstate.CodeNumericOutOfRange, "value out of range: overflow")
		case r == 0 && !math.IsInf(x, 0):
			return 0, sqlstate.Errorf(sqlstate.CodeNumericOutOfRange, "value out of range: underflow")
		}
		return r, nil
	})
	logArg := func(x float64) error {
		switch {
		case x == 0:
			return sqlstate.Errorf("2201E", "cannot take logarithm of zero")
		case x < 0:
			return sqlstate.Errorf("2201E", "cannot take logarithm of a negative number")
		}
		return nil
	}
	floatFn("ln", func(x float64) (float64, error) {
		if err := logArg(x); err != nil {
			return 0, err
		}
		return floatLog(x, false), nil
	})
	floatFn("log", func(x float64) (float64, error) {
		if err := logArg(x); err != nil {
			return 0, err
		}
		return floatLog(x, true), nil
	})
	// numeric's versions come after float8's: an integer argument takes
	// float8's, as PostgreSQL's preferred type, and a numeric one
	// numeric's.
	numFn1 := func(name string, f func(pgtypes.Numeric) (any, error)) {
		add(name, &builtin{args: []uint32{tNum}, ret: tNum, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) { return f(a[0].(pgtypes.Numeric)) }})
	}
	numFn1("sqrt", numSqrt)
	numFn1("exp", numExp)
	numFn1("ln", numLn)
	numFn1("log", func(n pgtypes.Numeric) (any, error) { return numLog("10", n) })
	add("log", &builtin{args: []uint32{tNum, tNum}, ret: tNum, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		return numLog(a[0].(pgtypes.Numeric), a[1].(pgtypes.Numeric))
	}})
	powerFn := []*builtin{{args: []uint32{tF8, tF8}, ret: tF8, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		return floatPower(a[0].(float64), a[1].(float64))
	}}, {args: []uint32{tNum, tNum}, ret: tNum, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		return numPower(a[0].(pgtypes.Numeric), a[1].(pgtypes.Numeric))
	}}}
	add("power", powerFn...)
	add("pow", powerFn...)
	add("div", &builtin{args: []uint32{tNum, tNum}, ret: tNum, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		return numDiv(a[0].(pgtypes.Numeric), a[1].(pgtypes.Numeric))
	}})
	add("pi", &builtin{ret: tF8, fn: func(*evalCtx, []any, []uint32) (any, error) { return math.Pi, nil }})
	add("random", &builtin{ret: tF8, fn: func(ec *evalCtx, _ []any, _ []uint32) (any, error) {
		if ec.env.Random == nil {
			return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "random() has no source of random numbers here")
		}
		return ec.env.Random(), nil
	}})
	add("setseed", &builtin{args: []uint32{tF8}, ret: pgtypes.OIDVoid, fn: func(ec *evalCtx, a []any, _ []uint32) (any, error) {
		x := a[0].(float64)
		if x < -1 || x > 1 || math.IsNaN(x) {
			return nil, sqlstate.Errorf(sqlstate.CodeNumericOutOfRange, "setseed parameter %s is out of allowed range [-1,1]", pgtypes.FormatText(tF8, x))
		}
		if ec.env.SetSeed != nil {
			ec.env.SetSeed(x)
		}
		return "", nil
	}})

	// Time.
	nowFn := &builtin{ret: tTS, fn: func(ec *evalCtx, _ []any, _ []uint32) (any, error) { return ec.env.Now.UTC(), nil }}
	for _, n := range []string{"now", "transaction_timestamp", "statement_timestamp"} {
		add(n, nowFn)
	}
	add("clock_timestamp", &builtin{ret: tTS, fn: func(ec *evalCtx, _ []any, _ []uint32) (any, error) {
		if ec.env.Clock == nil {
			return ec.env.Now.UTC(), nil
		}
		return ec.env.Clock().UTC(), nil
	}})
	add("timeofday", &builtin{ret: tText, fn: func(ec *evalCtx, _ []any, _ []uint32) (any, error) {
		n := ec.env.Now.In(styleOf(ec).Location())
		return n.Format("Mon Jan 02 15:04:05.000000 2006 ") + zoneAbbrev(n), nil
	}})
	add("date_trunc", &builtin{args: []uint32{tText, tTS}, ret: tTS, fn: dateTrunc}, &builtin{args: []uint32{tText, pgtypes.OIDTimestamp}, ret: pgtypes.OIDTimestamp, fn: dateTrunc},
		&builtin{args: []uint32{tText, tIv}, ret: tIv, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
			return truncInterval(str(a[0]), a[1].(pgtypes.Interval))
		}})
	// Fields of a timestamptz are those of its time in the session's zone.
	datePart := func(ec *evalCtx, a []any, t []uint32) (float64, error) {
		x := a[1].(time.Time)
		if t[1] == tTS {
			return extractField(str(a[0]), x.In(styleOf(ec).Location()), true)
		}
		return extractField(str(a[0]), x.UTC(), t[1] == tTS)
	}
	datePartF8 := func(ec *evalCtx, a []any, t []uint32) (any, error) { return datePart(ec, a, t) }
	// date_part(text, date) is date_part of the date as a timestamp.
	add("date_part", &builtin{args: []uint32{tText, pgtypes.OIDDate}, ret: tF8, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		return extractField(str(a[0]), a[1].(time.Time).UTC(), false)
	}},
		&builtin{args: []uint32{tText, tTS}, ret: tF8, fn: datePartF8}, &builtin{args: []uint32{tText, pgtypes.OIDTimestamp}, ret: tF8, fn: datePartF8},
		&builtin{args: []uint32{tText, tIv}, ret: tF8, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
			return intervalPart(str(a[0]), a[1].(pgtypes.Interval), false)
		}})
	// extract is exact: seconds with six decimals, milliseconds with
	// three, as PostgreSQL's numeric result has them.
	extractNum := func(ec *evalCtx, a []any, t []uint32) (any, error) {
		x := a[1].(time.Time)
		if pgtypes.IsInfinite(x) == 0 {
			local := x.UTC()
			if t[1] == tTS {
				local = x.In(styleOf(ec).Location())
			}
			us := int64(local.Second())*pgtypes.USecsPerSec + int64(local.Nanosecond()/1000)
			switch strings.ToLower(str(a[0])) {
			case "second":
				return scaledNumeric(us, 6), nil
			case "milliseconds":
				return scaledNumeric(us, 3), nil
			case "epoch":
				return scaledNumeric(x.UTC().UnixMicro(), 6), nil
			}
		}
		f, err := datePart(ec, a, t)
		if err != nil {
			return nil, err
		}
		return numCast(f, tNum)
	}
	// extract from a date has no time fields.
	extractDate := func(ec *evalCtx, a []any, _ []uint32) (any, error) {
		switch f := strings.ToLower(str(a[0])); f {
		case "hour", "minute", "second", "milliseconds", "microseconds", "timezone", "timezone_hour", "timezone_minute":
			return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "unit \"%s\" not supported for type date", f)
		}
		v, err := extractField(str(a[0]), a[1].(time.Time).UTC(), false)
		if err != nil {
			return nil, err
		}
		return numCast(v, tNum)
	}
	add("extract", &builtin{args: []uint32{tText, pgtypes.OIDDate}, ret: tNum, fn: extractDate},
		&builtin{args: []uint32{tText, tTS}, ret: tNum, fn: extractNum}, &builtin{args: []uint32{tText, pgtypes.OIDTimestamp}, ret: tNum, fn: extractNum},
		&builtin{args: []uint32{tText, tIv}, ret: tNum, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
			return intervalPart(str(a[0]), a[1].(pgtypes.Interval), true)
		}})
	// age(x) is age(current_date, x), current_date at midnight as x's
	// type.
	ageFn := func(withZone bool) func(ec *evalCtx, a []any, _ []uint32) (any, error) {
		return func(ec *evalCtx, a []any, _ []uint32) (any, error) {
			var loc *time.Location
			if withZone {
				loc = styleOf(ec).Location()
			}
			if len(a) == 1 {
				today := currentDate(ec)
				from := today
				if withZone {
					from = castTime(today, pgtypes.OIDDate, tTS, loc)
				}
				return age(from, a[0].(time.Time), loc)
			}
			return age(a[0].(time.Time), a[1].(time.Time), loc)
		}
	}
	add("age", &builtin{args: []uint32{tTS, tTS}, ret: tIv, fn: ageFn(true)}, &builtin{args: []uint32{tTSo, tTSo}, ret: tIv, fn: ageFn(false)},
		&builtin{args: []uint32{tTS}, ret: tIv, fn: ageFn(true)}, &builtin{args: []uint32{tTSo}, ret: tIv, fn: ageFn(false)})
	add("to_char", &builtin{args: []uint32{tTS, tText}, ret: tText, fn: func(ec *evalCtx, a []any, _ []uint32) (any, error) {
		return toChar(a[0].(time.Time).In(styleOf(ec).Location()), str(a[1])), nil
	}},
		&builtin{args: []uint32{pgtypes.OIDTimestamp, tText}, ret: tText, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
			return toChar(a[0].(time.Time).UTC(), str(a[1])), nil
		}},
		&builtin{args: []uint32{tIv, tText}, ret: tText, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
			return intervalToChar(a[0].(pgtypes.Interval), str(a[1]))
		}},
		&builtin{args: []uint32{tNum, tText}, ret: tText, fn: func(_ *evalCtx, a []any, t []uint32) (any, error) { return textOf(t[0], a[0]), nil }})
	add("to_timestamp", &builtin{args: []uint32{tF8}, ret: tTS, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		f := a[0].(float64)
		return time.Unix(0, int64(f*1e9)).UTC().Truncate(time.Microsecond), nil
	}})

	// JSON.
	add("to_json", &builtin{args: []uint32{pAny}, ret: pgtypes.OIDJSON, fn: func(ec *evalCtx, a []any, t []uint32) (any, error) { return toJSONStyle(t[0], a[0], styleOf(ec)), nil }})
	add("to_jsonb", &builtin{args: []uint32{pAny}, ret: pgtypes.OIDJSONB, fn: func(ec *evalCtx, a []any, t []uint32) (any, error) {
		return pgtypes.NormalizeJSONB(toJSONStyle(t[0], a[0], styleOf(ec)))
	}})
	add("row_to_json", &builtin{args: []uint32{OIDRecord, tBool}, min: 1, ret: pgtypes.OIDJSON, fn: func(ec *evalCtx, a []any, t []uint32) (any, error) {
		return toJSONStyle(OIDRecord, a[0], styleOf(ec)), nil
	}})
	buildObject := func(oid uint32) *builtin {
		return &builtin{args: []uint32{pAny}, variadic: true, lenient: true, ret: oid, fn: func(ec *evalCtx, a []any, t []uint32) (any, error) {
			if len(a)%2 != 0 {
				return nil, sqlstate.Errorf(codeInvalidParameterValue, "argument list must have even number of elements")
			}
			var parts []string
			for i := 0; i < len(a); i += 2 {
				if a[i] == nil {
					return nil, sqlstate.Errorf(codeInvalidParameterValue, "null value not allowed for object key")
				}
				k := pgtypes.JSONQuote(textOf(t[i], a[i]))
				if oid == pgtypes.OIDJSONB {
					parts = append(parts, k+": "+toJSONStyle(t[i+1], a[i+1], styleOf(ec)))
				} else {
					parts = append(parts, k+" : "+toJSONStyle(t[i+1], a[i+1], styleOf(ec)))
				}
			}
			if oid == pgtypes.OIDJSONB {
				return pgtypes.NormalizeJSONB("{" + strings.Join(parts, ", ") + "}")
			}
			return "{" + strings.Join(parts, ", ") + "}", nil
		}}
	}
	add("json_build_object", buildObject(pgtypes.OIDJSON))
	add("jsonb_build_object", buildObject(pgtypes.OIDJSONB))
	buildArray := func(oid uint32) *builtin {
		return &builtin{args: []uint32{pAny}, variadic: true, lenient: true, ret: oid, fn: func(ec *evalCtx, a []any, t []uint32) (any, error) {
			var parts []string
			for i, v := range a {
				parts = append(parts, toJSONStyle(t[i], v, styleOf(ec)))
			}
			if oid == pgtypes.OIDJSONB {
				return pgtypes.NormalizeJSONB("[" + strings.Join(parts, ", ") + "]")
			}
			return "[" + strings.Join(parts, ", ") + "]", nil
		}}
	}
	add("json_build_array", buildArray(pgtypes.OIDJSON))
	add("jsonb_build_array", buildArray(pgtypes.OIDJSONB))
	add("json_typeof", &builtin{args: []uint32{pgtypes.OIDJSON}, ret: tText, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) { return jsonTypeof(str(a[0])), nil }})
	add("jsonb_typeof", &builtin{args: []uint32{pgtypes.OIDJSONB}, ret: tText, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) { return jsonTypeof(str(a[0])), nil }})

	addIntervalFuncs(add)
	addSystemFuncs(add)
	return m
}

// parseIdent is parse_ident: dot-separated identifiers, unquoted ones
// lower-cased; without strict, what follows the last one is ignored.
func parseIdent(s string, strict bool) (any, error) {
	bad := func(detail string) error {
		e := sqlstate.Errorf(codeInvalidParameterValue, "string is not a valid identifier: \"%s\"", s)
		e.Detail = detail
		return e
	}
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }
	isStart := func(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80 }
	isCont := func(c byte) bool { return isStart(c) || c >= '0' && c <= '9' || c == '$' }
	out := Array{Elem: tText, Vals: []any{}}
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	afterDot := false
	for {
		switch {
		case i < len(s) && s[i] == '"':
			var b strings.Builder
			j := i + 1
			for {
				k := strings.IndexByte(s[j:], '"')
				if k < 0 {
					return nil, bad("String has unclosed double quotes.")
				}
				b.WriteString(s[j : j+k])
				j += k + 1
				if j < len(s) && s[j] == '"' {
					b.WriteByte('"')
					j++
					continue
				}
				break
			}
			if b.Len() == 0 {
				return nil, bad("Quoted identifier must not be empty.")
			}
			out.Vals = append(out.Vals, b.String())
			i = j
		case i < len(s) && isStart(s[i]):
			j := i + 1
			for j < len(s) && isCont(s[j]) {
				j++
			}
			out.Vals = append(out.Vals, strings.Map(func(r rune) rune {
				if r >= 'A' && r <= 'Z' {
					return r + 'a' - 'A'
				}
				return r
			}, s[i:j]))
			i = j
		case i < len(s) && s[i] == '.':
			return nil, bad("No valid identifier before \".\".")
		case afterDot:
			return nil, bad("No valid identifier after \".\".")
		default:
			return nil, bad("")
		}
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		switch {
		case i < len(s) && s[i] == '.':
			afterDot = true
			i++
			for i < len(s) && isSpace(s[i]) {
				i++
			}
		case i >= len(s):
			return out, nil
		default:
			if strict {
				return nil, bad("")
			}
			return out, nil
		}
	}
}

func oneCol(name string, oid uint32) func([]uint32) []pgtypes.Column {
	return func([]uint32) []pgtypes.Column { return []pgtypes.Column{{Name: name, OID: oid}} }
}

const codeSubstringError = "22011"

func roundNumeric(r *big.Rat, scale int) pgtypes.Numeric {
	// Half away from zero at scale digits.
	p := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(absInt(scale))), nil))
	x := new(big.Rat).Set(r)
	if scale >= 0 {
		x.Mul(x, p)
	} else {
		x.Quo(x, p)
	}
	half := big.NewRat(1, 2)
	if x.Sign() < 0 {
		x.Sub(x, half)
	} else {
		x.Add(x, half)
	}
	i := new(big.Int).Quo(x.Num(), x.Denom())
	out := new(big.Rat).SetInt(i)
	if scale >= 0 {
		out.Quo(out, p)
		return pgtypes.Numeric(out.FloatString(scale))
	}
	out.Mul(out, p)
	return pgtypes.Numeric(out.FloatString(0))
}

func truncNumeric(r *big.Rat, scale int) pgtypes.Numeric {
	p := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(absInt(scale))), nil))
	x := new(big.Rat).Set(r)
	if scale >= 0 {
		x.Mul(x, p)
	} else {
		x.Quo(x, p)
	}
	i := new(big.Int).Quo(x.Num(), x.Denom())
	out := new(big.Rat).SetInt(i)
	if scale >= 0 {
		out.Quo(out, p)
		return pgtypes.Numeric(out.FloatString(scale))
	}
	out.Mul(out, p)
	return pgtypes.Numeric(out.FloatString(0))
}

func floorNumeric(r *big.Rat, ceil bool) pgtypes.Numeric {
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
	if ceil && m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return pgtypes.Numeric(q.String())
}

func absInt(i int) int {
	if i < 0 {
		return -i
	}
	return i
}

func truncDay(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// dateTrunc truncates a timestamp, or a timestamptz in the session's
// zone (the result is that local time's instant).
func dateTrunc(ec *evalCtx, a []any, types []uint32) (any, error) {
	t := a[1].(time.Time).UTC()
	if types[1] != tTS {
		return truncTime(t, str(a[0]))
	}
	loc := styleOf(ec).Location()
	l := t.In(loc)
	wall := time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
	r, err := truncTime(wall, str(a[0]))
	if err != nil {
		return nil, err
	}
	w := r.(time.Time)
	if strings.EqualFold(str(a[0]), "hour") || strings.EqualFold(str(a[0]), "minute") || strings.EqualFold(str(a[0]), "second") ||
		strings.EqualFold(str(a[0]), "milliseconds") || strings.EqualFold(str(a[0]), "microseconds") {
		// Below a day the offset is kept, so an hour repeated by a
		// daylight saving change stays where it was.
		return t.Add(-wall.Sub(w)), nil
	}
	return time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), loc).UTC(), nil
}

func truncTime(t time.Time, unit string) (any, error) {
	switch strings.ToLower(unit) {
	case "microseconds":
		return t.Truncate(time.Microsecond), nil
	case "milliseconds":
		return t.Truncate(time.Millisecond), nil
	case "second":
		return t.Truncate(time.Second), nil
	case "minute":
		return t.Truncate(time.Minute), nil
	case "hour":
		return t.Truncate(time.Hour), nil
	case "day":
		return truncDay(t), nil
	case "week":
		d := truncDay(t)
		wd := (int(d.Weekday()) + 6) % 7
		return d.AddDate(0, 0, -wd), nil
	case "month":
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC), nil
	case "quarter":
		m := (int(t.Month())-1)/3*3 + 1
		return time.Date(t.Year(), time.Month(m), 1, 0, 0, 0, 0, time.UTC), nil
	case "year":
		return time.Date(t.Year(), 1, 1, 0, 0, 0, 0, time.UTC), nil
	case "decade":
		return time.Date(t.Year()/10*10, 1, 1, 0, 0, 0, 0, time.UTC), nil
	case "century":
		return time.Date((t.Year()-1)/100*100+1, 1, 1, 0, 0, 0, 0, time.UTC), nil
	}
	return nil, sqlstate.Errorf(sqlstate.CodeInvalidParameterValue, "unit \"%s\" not recognized for type timestamp with time zone", unit)
}

// zoneAbbrev is a time's zone abbreviation as PostgreSQL prints it.
func zoneAbbrev(t time.Time) string {
	name, _ := t.Zone()
	return name
}

// extractField reads a field of t, a timestamp (UTC) or a timestamptz
// in the session's zone (withZone).
func extractField(field string, t time.Time, withZone bool) (float64, error) {
	_, off := t.Zone()
	switch strings.ToLower(field) {
	case "year":
		return float64(t.Year()), nil
	case "month":
		return float64(t.Month()), nil
	case "day":
		return float64(t.Day()), nil
	case "hour":
		return float64(t.Hour()), nil
	case "minute":
		return float64(t.Minute()), nil
	case "second":
		return float64(t.Second()) + float64(t.Nanosecond()/1000)/1e6, nil
	case "milliseconds":
		return float64(t.Second())*1000 + float64(t.Nanosecond()/1000)/1e3, nil
	case "microseconds":
		return float64(t.Second())*1e6 + float64(t.Nanosecond()/1000), nil
	case "dow":
		return float64(t.Weekday()), nil
	case "isodow":
		return float64((int(t.Weekday())+6)%7 + 1), nil
	case "doy":
		return float64(t.YearDay()), nil
	case "week":
		_, w := t.ISOWeek()
		return float64(w), nil
	case "quarter":
		return float64((int(t.Month())-1)/3 + 1), nil
	case "epoch":
		return float64(t.UnixMicro()) / 1e6, nil
	case "decade":
		return float64(t.Year() / 10), nil
	case "century":
		return float64((t.Year()-1)/100 + 1), nil
	case "millennium":
		return float64((t.Year()-1)/1000 + 1), nil
	case "timezone", "timezone_hour", "timezone_minute":
		if !withZone {
			return 0, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "unit \"%s\" not supported for type timestamp without time zone", field)
		}
		switch strings.ToLower(field) {
		case "timezone":
			return float64(off), nil
		case "timezone_hour":
			return float64(off / 3600), nil
		}
		return float64(off / 60 % 60), nil
	}
	return 0, sqlstate.Errorf(sqlstate.CodeInvalidParameterValue, "unit \"%s\" not recognized for type timestamp with time zone", field)
}

// toChar supports the common template patterns; t is in the zone to
// print in.
func toChar(t time.Time, f string) string {
	r := strings.NewReplacer(
		"YYYY", fmt.Sprintf("%04d", t.Year()), "MM", fmt.Sprintf("%02d", int(t.Month())), "DD", fmt.Sprintf("%02d", t.Day()),
		"HH24", fmt.Sprintf("%02d", t.Hour()), "HH12", fmt.Sprintf("%02d", (t.Hour()+11)%12+1), "HH", fmt.Sprintf("%02d", (t.Hour()+11)%12+1),
		"MI", fmt.Sprintf("%02d", t.Minute()), "SS", fmt.Sprintf("%02d", t.Second()), "MS", fmt.Sprintf("%03d", t.Nanosecond()/1e6),
		"US", fmt.Sprintf("%06d", t.Nanosecond()/1e3), "YY", fmt.Sprintf("%02d", t.Year()%100),
		"Month", fmt.Sprintf("%-9s", t.Month().String()), "Mon", t.Month().String()[:3], "Day", fmt.Sprintf("%-9s", t.Weekday().String()),
		"Dy", t.Weekday().String()[:3], "AM", map[bool]string{true: "PM", false: "AM"}[t.Hour() >= 12], "TZ", zoneAbbrev(t))
	return r.Replace(f)
}

func quoteIdent(s string) string {
	safe := s != ""
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r == '_' || (i > 0 && (r >= '0' && r <= '9' || r == '$'))) {
			safe = false
		}
	}
	if safe && isKeyword(s) {
		safe = false
	}
	if safe {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

func quoteLiteral(s string) string {
	q := "'" + strings.ReplaceAll(s, "'", "''") + "'"
	if strings.Contains(s, `\`) {
		return "E" + strings.ReplaceAll(q, `\`, `\\`)
	}
	return q
}

// formatFn is format(): %s, %I, %L, %%, with positions (%1$s).
func formatFn(ec *evalCtx, a []any, t []uint32) (any, error) {
	if a[0] == nil {
		return nil, nil
	}
	f := str(a[0])
	var b strings.Builder
	next := 1
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			b.WriteByte(f[i])
			continue
		}
		i++
		if i >= len(f) {
			return nil, sqlstate.Errorf(codeInvalidParameterValue, "unterminated format() type specifier")
		}
		if f[i] == '%' {
			b.WriteByte('%')
			continue
		}
		argn := next
		j := i
		for j < len(f) && f[j] >= '0' && f[j] <= '9' {
			j++
		}
		if j < len(f) && f[j] == '$' && j > i {
			argn, _ = strconv.Atoi(f[i:j])
			i = j + 1
		}
		if i >= len(f) {
			return nil, sqlstate.Errorf(codeInvalidParameterValue, "unterminated format() type specifier")
		}
		if argn >= len(a) {
			return nil, sqlstate.Errorf(codeInvalidParameterValue, "too few arguments for format()")
		}
		v := a[argn]
		next = argn + 1
		switch f[i] {
		case 's':
			if v != nil {
				b.WriteString(outText(ec, t[argn], v))
			}
		case 'I':
			if v == nil {
				return nil, sqlstate.Errorf("22004", "null values cannot be formatted as an SQL identifier")
			}
			b.WriteString(quoteIdent(textOf(t[argn], v)))
		case 'L':
			if v == nil {
				b.WriteString("NULL")
			} else {
				b.WriteString(quoteLiteral(textOfStyle(t[argn], v, styleOf(ec))))
			}
		default:
			return nil, sqlstate.Errorf(codeInvalidParameterValue, "unrecognized format() type specifier \"%c\"", f[i])
		}
	}
	return b.String(), nil
}

// toJSON writes a value as PostgreSQL's to_json does with the default
// settings.
func toJSON(oid uint32, v any) string { return toJSONStyle(oid, v, pgtypes.DefaultStyle) }

// toJSONStyle is toJSON in a session: timestamptz in its TimeZone,
// intervals in its IntervalStyle, floats by its extra_float_digits.
func toJSONStyle(oid uint32, v any, st pgtypes.Style) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		if x {
			return "true"
		}
		return "false"
	case int64:
		if isOIDLike(oid) {
			return pgtypes.JSONQuote(FormatTextStyle(oid, v, st))
		}
		return strconv.FormatInt(x, 10)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return pgtypes.JSONQuote(FormatTextStyle(oid, v, st))
		}
		return FormatTextStyle(oid, v, st)
	case pgtypes.Numeric:
		if x.IsSpecial() {
			return `"` + string(x) + `"`
		}
		return string(x)
	case string:
		if oid == pgtypes.OIDJSON || oid == pgtypes.OIDJSONB {
			return x
		}
		return pgtypes.JSONQuote(textOf(oid, x))
	case time.Time:
		switch oid {
		case pgtypes.OIDDate, pgtypes.OIDTimestamp, pgtypes.OIDTimestamptz:
			return pgtypes.JSONQuote(pgtypes.FormatXSD(oid, x, st))
		}
		return pgtypes.JSONQuote(FormatTextStyle(oid, v, st))
	case Array:
		parts := make([]string, len(x.Vals))
		for i, e := range x.Vals {
			parts[i] = toJSONStyle(x.Elem, e, st)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case Record:
		parts := make([]string, len(x.Vals))
		for i, e := range x.Vals {
			parts[i] = pgtypes.JSONQuote(x.Cols[i].Name) + ":" + toJSONStyle(x.Cols[i].OID, e, st)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	return pgtypes.JSONQuote(FormatTextStyle(oid, v, st))
}

func jsonTypeof(s string) string {
	t := strings.TrimSpace(s)
	switch {
	case t == "":
		return "null"
	case t[0] == '{':
		return "object"
	case t[0] == '[':
		return "array"
	case t[0] == '"':
		return "string"
	case t == "true" || t == "false":
		return "boolean"
	case t == "null":
		return "null"
	}
	return "number"
}

// funcCall compiles a function call in an expression.
func (c *compiler) funcCall(f *pg.FuncCall, sc *scope) (*Expr, error) {
	return c.funcCallSRF(f, sc, false)
}

// funcCallSRF compiles a call; inFrom says it is a FROM item, where a
// set-returning function yields rows instead of being hoisted into the
// select list's projection.
func (c *compiler) funcCallSRF(f *pg.FuncCall, sc *scope, inFrom bool) (*Expr, error) {
	parts := strs(f.Funcname)
	schema := ""
	if len(parts) > 1 {
		schema = parts[len(parts)-2]
	}
	name := strings.ToLower(parts[len(parts)-1])
	if schema != "" && schema != "pg_catalog" && !(schema == "information_schema" && name == "_pg_expandarray") {
		return nil, errAt(f.Location, sqlstate.CodeUndefinedFunction, "function %s(%s) does not exist", strings.Join(parts, "."), "")
	}
	if f.AggWithinGroup {
		return c.withinGroup(name, f, sc)
	}
	if f.Over != nil {
		return c.window(name, f, sc)
	}
	if aggNames[name] {
		return c.aggregate(name, f, sc)
	}
	if f.AggStar || f.AggDistinct || len(f.AggOrder) > 0 || f.AggFilter != nil {
		return nil, errAt(f.Location, codeWrongObjectType, "%s is not an aggregate function", name)
	}
	args, argNames, err := c.namedArgs(f.Args, sc)
	if err != nil {
		return nil, err
	}
	var e *Expr
	switch {
	case name == "pg_sleep":
		return c.pgSleep(args, f.Location)
	case slices.ContainsFunc(argNames, func(n string) bool { return n != "" }):
		e, err = c.resolveNamedCall(name, args, argNames, f.Location)
	default:
		e, err = c.resolveCall(name, args, f.Location)
	}
	if err != nil {
		return nil, err
	}
	if e.srf != nil && !inFrom {
		if len(c.srfSinks) == 0 {
			return nil, errAt(f.Location, sqlstate.CodeFeatureNotSupported, "set-returning functions are not allowed in WHERE")
		}
		return c.hoist(e, c.srfSinks[len(c.srfSinks)-1]), nil
	}
	return e, nil
}

// callBuiltin compiles a call of a table function by name.
func (c *compiler) callBuiltin(name string, args []*Expr, loc int32) (*Expr, error) {
	return c.resolveCall(name, args, loc)
}

func noFunction(name string, args []*Expr, loc int32) error {
	var ts []string
	for _, a := range args {
		ts = append(ts, typeName(a.oid))
	}
	e := errAt(loc, sqlstate.CodeUndefinedFunction, "function %s(%s) does not exist", name, strings.Join(ts, ", "))
	e.(*sqlstate.Error).Hint = "No function matches the given name and argument types. You might need to add explicit type casts."
	return e
}

// resolveCall picks the overload the arguments fit and compiles it.
func (c *compiler) resolveCall(name string, args []*Expr, loc int32) (*Expr, error) {
	defs, ok := funcs[name]
	if !ok {
		return nil, noFunction(name, args, loc)
	}
	// Prefer an overload the arguments fit without casting away from
	// their category, then, of those they fit, the first with the most
	// arguments of its exact types (power(numeric, integer) is numeric's).
	for _, b := range defs {
		if coerced, types, ok := c.fitArgs(b, args, true, loc); ok {
			return c.compileBuiltin(name, b, coerced, types), nil
		}
	}
	best, bestExact := (*builtin)(nil), -1
	for _, b := range defs {
		saved := append([]uint32(nil), c.params...)
		if _, _, ok := c.fitArgs(b, args, false, loc); ok {
			if n := exactArgs(b, args); n > bestExact {
				best, bestExact = b, n
			}
		}
		c.params = saved
	}
	if best != nil {
		coerced, types, _ := c.fitArgs(best, args, false, loc)
		return c.compileBuiltin(name, best, coerced, types), nil
	}
	return nil, noFunction(name, args, loc)
}

// exactArgs counts the arguments whose type is the one b declares.
func exactArgs(b *builtin, args []*Expr) int {
	n := 0
	for i, a := range args {
		if len(b.args) > 0 && a.oid == b.args[min(i, len(b.args)-1)] {
			n++
		}
	}
	return n
}

// resolveNamedCall is resolveCall for a call with named arguments: only
// functions with parameter names take them.
func (c *compiler) resolveNamedCall(name string, args []*Expr, names []string, loc int32) (*Expr, error) {
	for pass := 0; pass < 2; pass++ {
		for _, b := range funcs[name] {
			placed, ok := placeNamed(b, args, names)
			if !ok {
				continue
			}
			coerced, types, ok := c.fitArgs(b, placed, pass == 0, loc)
			if !ok {
				continue
			}
			return c.compileBuiltin(name, b, coerced, types), nil
		}
	}
	var ts []string
	for i, a := range args {
		t := typeName(a.oid)
		if names[i] != "" {
			t = names[i] + " => " + t
		}
		ts = append(ts, t)
	}
	e := errAt(loc, sqlstate.CodeUndefinedFunction, "function %s(%s) does not exist", name, strings.Join(ts, ", "))
	e.(*sqlstate.Error).Hint = "No function matches the given name and argument types. You might need to add explicit type casts."
	return nil, e
}

func (c *compiler) fitArgs(b *builtin, args []*Expr, exact bool, loc int32) ([]*Expr, []uint32, bool) {
	if len(args) < b.minArgs() || (!b.variadic && len(args) > len(b.args)) {
		return nil, nil, false
	}
	out := make([]*Expr, len(args))
	types := make([]uint32, len(args))
	saved := append([]uint32(nil), c.params...)
	fail := func() ([]*Expr, []uint32, bool) {
		c.params = saved
		return nil, nil, false
	}
	var elemType uint32
	for i, a := range args {
		p := b.args[min(i, len(b.args)-1)]
		var err error
		switch p {
		case pAny:
			out[i] = c.settle(a)
		case pAnyNum:
			if a.oid == pgtypes.OIDUnknown {
				out[i], err = c.coerce(a, tNum, loc)
			} else if isNumber(a.oid) {
				out[i] = a
			} else {
				return fail()
			}
		case pAnyArray:
			switch {
			case isArray(a.oid):
				out[i] = a
			case a.oid == pgtypes.OIDUnknown && a.param == 0:
				out[i], err = c.coerce(a, 1009, loc)
			default:
				return fail()
			}
			elemType = elemOf[out[i].oid]
		case pAnyElem:
			if elemType != 0 {
				out[i], err = c.coerce(a, elemType, loc)
			} else {
				out[i] = c.settle(a)
			}
		default:
			if exact && a.oid != p && a.oid != pgtypes.OIDUnknown && !(isText(a.oid) && isText(p)) &&
				!(isInt(a.oid) && isInt(p) && numRank(a.oid) <= numRank(p)) && !(isOIDLike(a.oid) && isOIDLike(p)) {
				return fail()
			}
			out[i], err = c.coerce(a, p, loc)
		}
		if err != nil {
			return fail()
		}
		types[i] = out[i].oid
	}
	return out, types, true
}

func (c *compiler) compileBuiltin(name string, b *builtin, args []*Expr, types []uint32) *Expr {
	desc := name + "(" + descs(args) + ")"
	evalArgs := func(ec *evalCtx, row []any) ([]any, bool, error) {
		vals := make([]any, len(args))
		for i, a := range args {
			v, err := a.eval(ec, row)
			if err != nil {
				return nil, false, err
			}
			if v == nil && !b.lenient {
				return nil, true, nil
			}
			vals[i] = v
		}
		return vals, false, nil
	}
	if b.srf != nil {
		cols := b.cols(types)
		if len(cols) == 1 {
			cols[0].Name = name
		}
		oid := cols[0].OID
		if len(cols) > 1 {
			oid = OIDRecord
		}
		return &Expr{oid: oid, name: name, desc: desc, srfCols: cols, srf: func(ec *evalCtx, row []any) ([][]any, error) {
			vals, null, err := evalArgs(ec, row)
			if err != nil || null {
				return nil, err
			}
			return b.srf(ec, vals, types)
		}, eval: func(*evalCtx, []any) (any, error) {
			return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "set-returning function %s called in a context that cannot accept a set", name)
		}}
	}
	ret := b.ret
	if b.retf != nil {
		ret = b.retf(types)
	}
	e := &Expr{oid: ret, name: name, desc: desc, eval: func(ec *evalCtx, row []any) (any, error) {
		vals, null, err := evalArgs(ec, row)
		if err != nil || null {
			return nil, err
		}
		return b.fn(ec, vals, types)
	}}
	return e
}

func (c *compiler) pgSleep(args []*Expr, loc int32) (*Expr, error) {
	if len(args) != 1 {
		return nil, noFunction("pg_sleep", args, loc)
	}
	a, err := c.coerce(args[0], tF8, loc)
	if err != nil {
		return nil, noFunction("pg_sleep", args, loc)
	}
	return &Expr{oid: pgtypes.OIDVoid, name: "pg_sleep", desc: "pg_sleep(" + a.desc + ")", eval: func(ec *evalCtx, row []any) (any, error) {
		v, err := a.eval(ec, row)
		if err != nil || v == nil {
			return "", err
		}
		d := time.Duration(v.(float64) * float64(time.Second))
		if d <= 0 {
			return "", nil
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return "", nil
		case <-ec.ctx.Done():
			return nil, sqlstate.Errorf(sqlstate.CodeQueryCanceled, "canceling statement due to user request")
		}
	}}, nil
}

// outText is a value's output-function text (concat, format): booleans
// are t and f, unlike a cast to text.
func outText(ec *evalCtx, oid uint32, v any) string {
	if _, ok := v.(bool); ok {
		return FormatText(oid, v)
	}
	return textOfStyle(oid, v, styleOf(ec))
}

// similarToRegex turns a SIMILAR TO pattern into the regular expression
// that must match all of the string, as PostgreSQL's similar_escape does:
// % and _ are .* and ., a dot and the anchors are literal, and |, *, +, ?,
// {m,n}, () and [] keep their regular-expression meaning; the escape
// character (empty: none) makes the next character literal.
func similarToRegex(pat, escape string) string {
	var b strings.Builder
	b.WriteString("^(?:")
	esc := []rune(escape)
	escaped := false
	for _, r := range pat {
		switch {
		case escaped:
			escaped = false
			if strings.ContainsRune(`\.^$|*+?{}()[]`, r) {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		case len(esc) == 1 && r == esc[0]:
			escaped = true
		case r == '%':
			b.WriteString(".*")
		case r == '_':
			b.WriteByte('.')
		case r == '.' || r == '^' || r == '$' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteString(")$")
	return b.String()
}

// FunctionNames are the names of the functions, aggregates and window
// functions the evaluator has, sorted: the emulated pg_proc lists
// PostgreSQL's entries of these (pgcatalog's functions.txt).
func FunctionNames() []string {
	seen := map[string]bool{}
	for _, m := range []map[string]bool{aggNames, orderedSetAggs, hypotheticalAggs, windowFuncs} {
		for n := range m {
			seen[n] = true
		}
	}
	for n := range funcs {
		seen[n] = true
	}
	return slices.Sorted(maps.Keys(seen))
}
