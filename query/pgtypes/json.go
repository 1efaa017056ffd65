package pgtypes

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/cellardb/cellar/query/sqlstate"
)

// JSON is a parsed json or jsonb document.
type JSON struct {
	// Kind is 'o' object, 'a' array, 's' string, 'n' number, 't' true,
	// 'f' false or 'z' null.
	Kind byte
	// Str is a string's value or a number's text.
	Str string
	// Keys and Vals are an object's members (in input order until
	// Canonical) or an array's elements (Vals only).
	Keys []string
	Vals []*JSON
	// Raw is the value's text in the input, as json (not jsonb) keeps it.
	Raw string
}

// ParseJSON reads a JSON document with PostgreSQL's errors: 22P02
// "invalid input syntax for type json". jsonb reports \u0000 as 22P05
// (PostgreSQL's jsonb cannot hold it).
func ParseJSON(s string, jsonb bool) (*JSON, error) {
	p := &jsonParser{s: s, jsonb: jsonb}
	p.ws()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.i < len(s) {
		return nil, p.bad("Expected end of input, but found \"" + p.token() + "\".")
	}
	return v, nil
}

// NormalizeJSONB parses s and returns jsonb's canonical text: keys
// deduplicated (the last wins) and sorted shorter first then bytewise,
// numbers as numeric prints them, ", " and ": " between members.
func NormalizeJSONB(s string) (string, error) {
	v, err := ParseJSON(s, true)
	if err != nil {
		return "", err
	}
	return v.Canonical().String(), nil
}

// ValidateJSON checks s as json's input function does; json keeps the
// text as given.
func ValidateJSON(s string) error {
	_, err := ParseJSON(s, false)
	return err
}

type jsonParser struct {
	s     string
	i     int
	jsonb bool
}

func (p *jsonParser) bad(detail string) error {
	e := sqlstate.Errorf(sqlstate.CodeInvalidTextRepresent, "invalid input syntax for type json")
	e.Detail = detail
	return e
}

// token is the text of the token at p.i, for error details.
func (p *jsonParser) token() string {
	if p.i >= len(p.s) {
		return ""
	}
	j := p.i
	c := p.s[j]
	if strings.IndexByte("{}[],:", c) >= 0 {
		return string(c)
	}
	for j < len(p.s) && strings.IndexByte(" \t\n\r{}[],:\"", p.s[j]) < 0 {
		j++
	}
	if j == p.i {
		_, n := utf8.DecodeRuneInString(p.s[j:])
		j += n
	}
	return p.s[p.i:j]
}

func (p *jsonParser) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (*JSON, error) {
	if depth > 6400 {
		return nil, sqlstate.Errorf("54001", "stack depth limit exceeded")
	}
	if p.i >= len(p.s) {
		return nil, p.bad("The input string ended unexpectedly.")
	}
	start := p.i
	switch c := p.s[p.i]; {
	case c == '{':
		p.i++
		v := &JSON{Kind: 'o'}
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			v.Raw = p.s[start:p.i]
			return v, nil
		}
		for {
			p.ws()
			if p.i >= len(p.s) {
				return nil, p.bad("The input string ended unexpectedly.")
			}
			if p.s[p.i] != '"' {
				return nil, p.bad("Expected string or \"}\", but found \"" + p.token() + "\".")
			}
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			p.ws()
			if p.i >= len(p.s) {
				return nil, p.bad("The input string ended unexpectedly.")
			}
			if p.s[p.i] != ':' {
				return nil, p.bad("Expected \":\", but found \"" + p.token() + "\".")
			}
			p.i++
			p.ws()
			e, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			v.Keys = append(v.Keys, k)
			v.Vals = append(v.Vals, e)
			p.ws()
			if p.i >= len(p.s) {
				return nil, p.bad("The input string ended unexpectedly.")
			}
			if p.s[p.i] == '}' {
				p.i++
				v.Raw = p.s[start:p.i]
				return v, nil
			}
			if p.s[p.i] != ',' {
				return nil, p.bad("Expected \",\" or \"}\", but found \"" + p.token() + "\".")
			}
			p.i++
		}
	case c == '[':
		p.i++
		v := &JSON{Kind: 'a', Vals: []*JSON{}}
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			v.Raw = p.s[start:p.i]
			return v, nil
		}
		for {
			p.ws()
			e, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			v.Vals = append(v.Vals, e)
			p.ws()
			if p.i >= len(p.s) {
				return nil, p.bad("The input string ended unexpectedly.")
			}
			if p.s[p.i] == ']' {
				p.i++
				v.Raw = p.s[start:p.i]
				return v, nil
			}
			if p.s[p.i] != ',' {
				return nil, p.bad("Expected \",\" or \"]\", but found \"" + p.token() + "\".")
			}
			p.i++
		}
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return &JSON{Kind: 's', Str: s, Raw: p.s[start:p.i]}, nil
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	default:
		tok := p.token()
		switch tok {
		case "true":
			p.i += 4
			return &JSON{Kind: 't', Raw: tok}, nil
		case "false":
			p.i += 5
			return &JSON{Kind: 'f', Raw: tok}, nil
		case "null":
			p.i += 4
			return &JSON{Kind: 'z', Raw: tok}, nil
		}
		if strings.IndexByte("{}[],:", c) >= 0 {
			return nil, p.bad("Expected JSON value, but found \"" + tok + "\".")
		}
		return nil, p.bad("Token \"" + tok + "\" is invalid.")
	}
}

func (p *jsonParser) number() (*JSON, error) {
	start := p.i
	s := p.s
	i := p.i
	if s[i] == '-' {
		i++
	}
	ok := true
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		ok = false
	}
	if ok && i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || !isDigit(s[i]) {
			ok = false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if ok && i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			ok = false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	// A number runs into letters or digits: the whole token is invalid.
	if !ok || i < len(s) && strings.IndexByte(" \t\n\r{}[],:\"", s[i]) < 0 {
		p.i = start
		return nil, p.bad("Token \"" + p.token() + "\" is invalid.")
	}
	p.i = i
	if p.jsonb {
		// jsonb holds numbers as numeric, with its limits.
		if _, err := ParseNumeric(s[start:i]); err != nil {
			return nil, err
		}
	}
	return &JSON{Kind: 'n', Str: s[start:i], Raw: s[start:i]}, nil
}

// str reads a string literal at p.i.
func (p *jsonParser) str() (string, error) {
	p.i++ // the opening quote
	var b strings.Builder
	for {
		if p.i >= len(p.s) {
			return "", p.bad("The input string ended unexpectedly.")
		}
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return b.String(), nil
		case c < 0x20:
			return "", p.bad("Character with value 0x" + strconv.FormatInt(int64(c)+0x100, 16)[1:] + " must be escaped.")
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return "", p.bad("The input string ended unexpectedly.")
			}
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r, err := p.hex4()
				if err != nil {
					return "", err
				}
				if utf16.IsSurrogate(rune(r)) {
					if r >= 0xDC00 {
						return "", p.bad("Unicode low surrogate must follow a high surrogate.")
					}
					if p.i+1 >= len(p.s) || p.s[p.i] != '\\' || p.s[p.i+1] != 'u' {
						return "", p.bad("Unicode low surrogate must follow a high surrogate.")
					}
					p.i += 2
					lo, err := p.hex4()
					if err != nil {
						return "", err
					}
					if lo < 0xDC00 || lo > 0xDFFF {
						return "", p.bad("Unicode low surrogate must follow a high surrogate.")
					}
					b.WriteRune(utf16.DecodeRune(rune(r), rune(lo)))
					continue
				}
				if r == 0 {
					if p.jsonb {
						e := sqlstate.Errorf("22P05", "unsupported Unicode escape sequence")
						e.Detail = `\u0000 cannot be converted to text.`
						return "", e
					}
					b.WriteString(`\u0000`)
					continue
				}
				b.WriteRune(rune(r))
			default:
				return "", p.bad("Escape sequence \"\\" + string(e) + "\" is invalid.")
			}
		default:
			b.WriteByte(c)
			p.i++
		}
	}
}

func (p *jsonParser) hex4() (int, error) {
	if p.i+4 > len(p.s) {
		return 0, p.bad("\"\\u\" must be followed by four hexadecimal digits.")
	}
	n, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 32)
	if err != nil {
		return 0, p.bad("\"\\u\" must be followed by four hexadecimal digits.")
	}
	p.i += 4
	return int(n), nil
}

// Canonical returns the jsonb form of v: object keys deduplicated (the
// last wins) and sorted by length then bytes, numbers canonical.
func (v *JSON) Canonical() *JSON {
	switch v.Kind {
	case 'o':
		last := map[string]int{}
		for i, k := range v.Keys {
			last[k] = i
		}
		out := &JSON{Kind: 'o'}
		for i, k := range v.Keys {
			if last[k] == i {
				out.Keys = append(out.Keys, k)
				out.Vals = append(out.Vals, v.Vals[i].Canonical())
			}
		}
		sort.Sort(byJSONBKey{out})
		out.Raw = out.String()
		return out
	case 'a':
		out := &JSON{Kind: 'a', Vals: make([]*JSON, len(v.Vals))}
		for i, e := range v.Vals {
			out.Vals[i] = e.Canonical()
		}
		out.Raw = out.String()
		return out
	case 'n':
		n, err := ParseNumeric(v.Str)
		if err != nil {
			return v
		}
		return &JSON{Kind: 'n', Str: string(n), Raw: string(n)}
	case 's':
		return &JSON{Kind: 's', Str: v.Str, Raw: JSONQuote(v.Str)}
	}
	return v
}

type byJSONBKey struct{ o *JSON }

func (b byJSONBKey) Len() int { return len(b.o.Keys) }
func (b byJSONBKey) Less(i, j int) bool {
	ki, kj := b.o.Keys[i], b.o.Keys[j]
	if len(ki) != len(kj) {
		return len(ki) < len(kj)
	}
	return ki < kj
}
func (b byJSONBKey) Swap(i, j int) {
	b.o.Keys[i], b.o.Keys[j] = b.o.Keys[j], b.o.Keys[i]
	b.o.Vals[i], b.o.Vals[j] = b.o.Vals[j], b.o.Vals[i]
}

// String writes v as jsonb's output function does.
func (v *JSON) String() string {
	var b strings.Builder
	v.write(&b)
	return b.String()
}

func (v *JSON) write(b *strings.Builder) {
	switch v.Kind {
	case 'o':
		b.WriteByte('{')
		for i, k := range v.Keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(JSONQuote(k))
			b.WriteString(": ")
			v.Vals[i].write(b)
		}
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, e := range v.Vals {
			if i > 0 {
				b.WriteString(", ")
			}
			e.write(b)
		}
		b.WriteByte(']')
	case 's':
		b.WriteString(JSONQuote(v.Str))
	case 'n':
		b.WriteString(v.Str)
	case 't':
		b.WriteString("true")
	case 'f':
		b.WriteString("false")
	default:
		b.WriteString("null")
	}
}

// JSONQuote writes s as a JSON string literal, escaping as PostgreSQL's
// escape_json does.
func JSONQuote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if c < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte("0123456789abcdef"[c>>4])
				b.WriteByte("0123456789abcdef"[c&15])
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
