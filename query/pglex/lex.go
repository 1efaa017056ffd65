package pglex

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// Result is a statement rewritten for the TiDB grammar.
type Result struct {
	// SQL is the text for the TiDB parser.
	SQL string
	// Params gives, for each ? in SQL in order, the PostgreSQL parameter
	// it stands for (0 for $1).
	Params []int
	// Upsert: the statement was UPSERT INTO.
	Upsert bool
	// IgnoreConflicts: ON CONFLICT … DO NOTHING (written as INSERT IGNORE).
	IgnoreConflicts bool
	// Returning is the RETURNING list, rewritten ("" if none), and
	// ReturningParams its parameters.
	Returning       string
	ReturningParams []int
	// Options are CREATE TABLE's storage options, WITH (name = value,
	// ...), which the TiDB grammar does not read; they are taken out.
	Options []Option

	in    string
	spans []span
}

// Option is one WITH option: a name (possibly qualified, a.b) and its
// value as text (a string's contents, or the token).
type Option struct {
	Name, Value string
	Position    int
}

// span: output bytes from out on come from input bytes from in on.
type span struct{ out, in int }

// Error is a lexical error, with its 1-based character position.
type Error struct {
	Msg      string
	Position int
	// Unsupported: the text is PostgreSQL, but not cellar's dialect.
	Unsupported bool
}

func (e *Error) Error() string { return e.Msg }

// InputPosition maps a byte offset in SQL to a 1-based character position
// in the statement the client sent.
func (r *Result) InputPosition(out int) int {
	i := sort.Search(len(r.spans), func(i int) bool { return r.spans[i].out > out }) - 1
	in := 0
	if i >= 0 {
		in = r.spans[i].in + (out - r.spans[i].out)
		if i+1 < len(r.spans) && r.spans[i+1].in > r.spans[i].in {
			in = min(in, r.spans[i+1].in-1)
		}
	}
	in = max(0, min(in, len(r.in)))
	return utf8.RuneCountInString(r.in[:in]) + 1
}

// unit is a piece of output: a token as written for TiDB, or a rewritten
// group of them.
type unit struct {
	text  string
	in    int // where it starts in the input
	space bool
	word  bool // an identifier, keyword or constant (may take a ::)
	tok   pg.Token
	sub   []span // spans inside text, relative; nil: all from in
}

type lexer struct {
	in   string
	toks []*pg.ScanToken
}

// Rewrite reads one statement with PostgreSQL's lexer and writes it for
// the TiDB grammar.
func Rewrite(sql string) (*Result, error) {
	sc, err := pg.Scan(sql)
	if err != nil {
		return nil, &Error{Msg: err.Error(), Position: 1}
	}
	l := &lexer{in: sql}
	for _, t := range sc.Tokens {
		if t.Token == pg.Token_SQL_COMMENT || t.Token == pg.Token_C_COMMENT {
			continue
		}
		l.toks = append(l.toks, t)
	}
	r := &Result{in: sql}
	if len(l.toks) == 0 {
		return r, nil
	}
	first := strings.ToLower(l.text(0))
	ddl := first == "create" || first == "alter"
	main, ret := l.toks, []*pg.ScanToken(nil)
	returning := -1
	depth := 0
	for i, t := range l.toks {
		switch t.Token {
		case pg.Token_ASCII_40:
			depth++
		case pg.Token_ASCII_41:
			depth--
		case pg.Token_RETURNING:
			if depth == 0 && returning < 0 {
				main, ret, returning = l.toks[:i], l.toks[i+1:], i
			}
		}
	}
	switch first {
	case "create":
		var err error
		if main, err = l.tableOptions(main, r); err != nil {
			return nil, err
		}
	case "alter":
		var err error
		if main, err = l.alterOptions(main, r); err != nil {
			return nil, err
		}
	}
	units, err := l.units(main, ddl, r, true)
	if err != nil {
		return nil, err
	}
	r.SQL, r.spans, r.Params = join(units)
	if returning >= 0 {
		if len(ret) == 0 {
			return nil, &Error{Msg: "syntax error at end of input: RETURNING needs a list", Position: utf8.RuneCountInString(sql) + 1}
		}
		ru, err := l.units(ret, false, r, false)
		if err != nil {
			return nil, err
		}
		r.Returning, _, r.ReturningParams = join(ru)
	}
	return r, nil
}

func (l *lexer) text(i int) string { return l.in[l.toks[i].Start:l.toks[i].End] }

// pos is the 1-based character position of a token.
func (l *lexer) pos(i int) int { return utf8.RuneCountInString(l.in[:l.toks[i].Start]) + 1 }

func (l *lexer) errorf(at *pg.ScanToken, unsupported bool, format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...), Position: utf8.RuneCountInString(l.in[:at.Start]) + 1, Unsupported: unsupported}
}

// spaced reports whether the input had space (or a comment) before t.
func (l *lexer) spaced(t *pg.ScanToken) bool {
	if t.Start == 0 {
		return false
	}
	c := l.in[t.Start-1]
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '/' || c == '-'
}

func isWord(t *pg.ScanToken) bool {
	switch t.Token {
	case pg.Token_IDENT, pg.Token_SCONST, pg.Token_ICONST, pg.Token_FCONST, pg.Token_PARAM, pg.Token_BCONST, pg.Token_XCONST:
		return true
	}
	return t.KeywordKind != pg.KeywordKind_NO_KEYWORD
}

// units rewrites a run of tokens.
func (l *lexer) units(toks []*pg.ScanToken, ddl bool, r *Result, top bool) ([]unit, error) {
	var out []unit
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		text := l.in[t.Start:t.End]
		u := unit{text: text, in: int(t.Start), space: l.spaced(t), word: isWord(t), tok: t.Token}
		lower := strings.ToLower(text)
		switch {
		case t.Token == pg.Token_PARAM:
			n, err := strconv.Atoi(text[1:])
			if err != nil || n < 1 {
				return nil, l.errorf(t, false, "bad parameter %s", text)
			}
			u.text = "?" + strconv.Itoa(n-1) // resolved to ? by join
		case t.Token == pg.Token_SCONST:
			v, err := literal(text)
			if err != nil {
				return nil, l.errorf(t, false, "%v", err)
			}
			u.text = quote(v)
		case t.Token == pg.Token_USCONST || t.Token == pg.Token_UIDENT:
			return nil, l.errorf(t, true, "U& strings and identifiers are not supported")
		case top && i == 0 && lower == "upsert" && len(toks) > 1 && toks[1].Token == pg.Token_INTO:
			u.text = "INSERT"
			r.Upsert = true
		case top && i == 0 && t.Token == pg.Token_END_P:
			u.text = "COMMIT"
		case t.Token == pg.Token_INTERVAL && i+1 < len(toks) && toks[i+1].Token == pg.Token_SCONST:
			v, err := literal(l.in[toks[i+1].Start:toks[i+1].End])
			if err != nil {
				return nil, l.errorf(toks[i+1], false, "%v", err)
			}
			u.text = "__pginterval(" + quote(v) + ")"
			u.word = true
			i++
		case t.Token == pg.Token_ON && i+1 < len(toks) && toks[i+1].Token == pg.Token_CONFLICT:
			n, err := l.onConflict(toks, i, &out, r)
			if err != nil {
				return nil, err
			}
			if n < 0 {
				return out, nil // DO NOTHING ends the statement
			}
			i = n
			continue
		case lower == "excluded" && i+2 < len(toks) && toks[i+1].Token == pg.Token_ASCII_46:
			u.text = "VALUES(" + l.in[toks[i+2].Start:toks[i+2].End] + ")"
			u.word = true
			i += 2
		case t.Token == pg.Token_CAST && i+1 < len(toks) && toks[i+1].Token == pg.Token_ASCII_40:
			end := matching(toks, i+1)
			if end < 0 {
				return nil, l.errorf(t, false, "unterminated CAST")
			}
			as := -1
			depth := 0
			for k := i + 2; k < end; k++ {
				switch toks[k].Token {
				case pg.Token_ASCII_40:
					depth++
				case pg.Token_ASCII_41:
					depth--
				case pg.Token_AS:
					if depth == 0 && as < 0 {
						as = k
					}
				}
			}
			if as < 0 {
				return nil, l.errorf(t, false, "CAST needs AS and a type")
			}
			inner, err := l.units(toks[i+2:as], ddl, r, false)
			if err != nil {
				return nil, err
			}
			name, mods, n, err := l.typeName(toks[as+1 : end])
			if err != nil {
				return nil, err
			}
			if n != end-(as+1) {
				return nil, l.errorf(toks[as+1+n], false, "syntax error in the type of CAST")
			}
			u = castUnit(inner, name, mods, u.in, u.space)
			i = end
		case t.Token == pg.Token_TYPECAST:
			start := operandStart(out)
			if start < 0 {
				return nil, l.errorf(t, false, "syntax error at or near \"::\"")
			}
			name, mods, n, err := l.typeName(toks[i+1:])
			if err != nil {
				return nil, err
			}
			operand := append([]unit(nil), out[start:]...)
			out = out[:start]
			u = castUnit(operand, name, mods, operand[0].in, operand[0].space)
			i += n
		case ddl && t.Token == pg.Token_IDENTITY_P && i > 0 && toks[i-1].Token == pg.Token_AS:
			return nil, l.errorf(t, true, "identity columns are not supported: cellar has no sequences")
		case ddl && l.typePosition(toks, i, out):
			name, mods, n, err := l.typeName(toks[i:])
			if err != nil {
				return nil, err
			}
			if serialTypes[name] {
				return nil, l.errorf(t, true, "serial columns (%s) are not supported: cellar has no sequences", name)
			}
			if unsupportedTypes[name] {
				return nil, l.errorf(t, true, "type %s is not supported in a column (docs/sql.md lists the types)", name)
			}
			if mysql, ok := ddlTypes[name]; ok {
				if mods != "" {
					return nil, l.errorf(t, false, "type %s takes no modifiers", name)
				}
				u.text = mysql
				i += n - 1
			} else if (name == "varchar" || name == "character varying") && mods == "" {
				// PostgreSQL's VARCHAR has no limit; the TiDB grammar
				// needs one: VARCHAR(0) stands for none.
				u.text = "VARCHAR(0)"
				i += n - 1
			}
		}
		out = append(out, u)
	}
	return out, nil
}

// tableOptions takes WITH (name = value, ...) after CREATE TABLE's column
// list out of toks, into r.Options.
func (l *lexer) tableOptions(toks []*pg.ScanToken, r *Result) ([]*pg.ScanToken, error) {
	open := -1
	for i, t := range toks {
		if t.Token == pg.Token_ASCII_40 {
			open = i
			break
		}
	}
	if open < 0 {
		return toks, nil
	}
	end := matching(toks, open)
	if end < 0 || end+2 >= len(toks) || toks[end+1].Token != pg.Token_WITH || toks[end+2].Token != pg.Token_ASCII_40 {
		return toks, nil
	}
	close := matching(toks, end+2)
	if close < 0 {
		return nil, l.errorf(toks[end+1], false, "unterminated WITH options")
	}
	if err := l.optionList(toks, end+2, close, r); err != nil {
		return nil, err
	}
	out := append(append([]*pg.ScanToken(nil), toks[:end+1]...), toks[close+1:]...)
	return out, nil
}

// optionList reads the options between toks[open] "(" and toks[close]
// ")": name = value, separated by commas.
func (l *lexer) optionList(toks []*pg.ScanToken, open, close int, r *Result) error {
	// Unquoted names fold to lower case, as PostgreSQL's identifiers do;
	// quoted ones keep theirs.
	word := func(t *pg.ScanToken) string {
		w := l.in[t.Start:t.End]
		if strings.HasPrefix(w, `"`) {
			return strings.ReplaceAll(strings.Trim(w, `"`), `""`, `"`)
		}
		return strings.ToLower(w)
	}
	for k := open + 1; k < close; {
		name := word(toks[k])
		at := l.errorf(toks[k], false, "")
		k++
		for k+1 < close && toks[k].Token == pg.Token_ASCII_46 {
			name += "." + word(toks[k+1])
			k += 2
		}
		if k >= close || toks[k].Token != pg.Token_ASCII_61 || k+1 >= close {
			return l.errorf(toks[min(k, close)], false, "a WITH option needs = and a value")
		}
		vt := toks[k+1]
		value := l.in[vt.Start:vt.End]
		if vt.Token == pg.Token_SCONST {
			v, err := literal(value)
			if err != nil {
				return l.errorf(vt, false, "%v", err)
			}
			value = v
		}
		r.Options = append(r.Options, Option{Name: name, Value: value, Position: at.(*Error).Position})
		k += 2
		if k < close {
			if toks[k].Token != pg.Token_ASCII_44 {
				return l.errorf(toks[k], false, "syntax error in WITH options")
			}
			k++
		}
	}
	return nil
}

// alterOptions takes out ALTER TABLE's SET (name = value, …), the
// PostgreSQL form for storage parameters, as Options.
func (l *lexer) alterOptions(toks []*pg.ScanToken, r *Result) ([]*pg.ScanToken, error) {
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].Token == pg.Token_SET && toks[i+1].Token == pg.Token_ASCII_40 {
			close := matching(toks, i+1)
			if close < 0 {
				return nil, l.errorf(toks[i], false, "unterminated SET options")
			}
			if err := l.optionList(toks, i+1, close, r); err != nil {
				return nil, err
			}
			return append(append([]*pg.ScanToken(nil), toks[:i]...), toks[close+1:]...), nil
		}
	}
	return toks, nil
}

// typePosition reports whether toks[i] starts a column's type: it follows
// the column's name, which follows "(", "," or COLUMN (or TYPE in ALTER
// COLUMN … TYPE).
func (l *lexer) typePosition(toks []*pg.ScanToken, i int, out []unit) bool {
	if !isWord(toks[i]) || toks[i].Token == pg.Token_SCONST || strings.HasPrefix(l.in[toks[i].Start:toks[i].End], `"`) {
		return false
	}
	if i >= 1 && toks[i-1].Token == pg.Token_TYPE_P {
		return true
	}
	if i < 2 || !isWord(toks[i-1]) {
		return false
	}
	switch toks[i-2].Token {
	case pg.Token_ASCII_40, pg.Token_ASCII_44, pg.Token_COLUMN:
		return true
	case pg.Token_ADD_P:
		// ALTER TABLE t ADD name type (COLUMN is optional).
		return toks[i-1].Token != pg.Token_COLUMN
	}
	return false
}

// onConflict rewrites ON CONFLICT [(cols)] DO UPDATE SET … / DO NOTHING
// starting at toks[i]. It returns the index of the last token used, or -1
// if the statement ends there.
func (l *lexer) onConflict(toks []*pg.ScanToken, i int, out *[]unit, r *Result) (int, error) {
	k := i + 2
	if k < len(toks) && toks[k].Token == pg.Token_ASCII_40 {
		if k = matching(toks, k); k < 0 {
			return 0, l.errorf(toks[i], false, "unterminated conflict target")
		}
		k++
	} else if k < len(toks) && toks[k].Token == pg.Token_ON {
		return 0, l.errorf(toks[k], true, "ON CONFLICT ON CONSTRAINT is not supported: name the key, as in ON CONFLICT (_key)")
	}
	if k+1 >= len(toks) || toks[k].Token != pg.Token_DO {
		return 0, l.errorf(toks[i], false, "ON CONFLICT needs DO UPDATE or DO NOTHING")
	}
	switch toks[k+1].Token {
	case pg.Token_NOTHING:
		if k+2 != len(toks) {
			return 0, l.errorf(toks[k+2], false, "syntax error after DO NOTHING")
		}
		r.IgnoreConflicts = true
		for j := range *out {
			if strings.EqualFold((*out)[j].text, "insert") {
				(*out)[j].text = "INSERT IGNORE"
				break
			}
		}
		return -1, nil
	case pg.Token_UPDATE:
		if k+2 >= len(toks) || toks[k+2].Token != pg.Token_SET {
			return 0, l.errorf(toks[k+1], false, "DO UPDATE needs SET")
		}
		for j := k + 3; j < len(toks); j++ {
			if toks[j].Token == pg.Token_WHERE {
				return 0, l.errorf(toks[j], true, "ON CONFLICT DO UPDATE … WHERE is not supported")
			}
		}
		*out = append(*out, unit{text: "ON DUPLICATE KEY UPDATE", in: int(toks[i].Start), space: true})
		return k + 2, nil
	}
	return 0, l.errorf(toks[k+1], false, "ON CONFLICT needs DO UPDATE or DO NOTHING")
}

// matching returns the index of the ")" that closes toks[open].
func matching(toks []*pg.ScanToken, open int) int {
	depth := 0
	for k := open; k < len(toks); k++ {
		switch toks[k].Token {
		case pg.Token_ASCII_40:
			depth++
		case pg.Token_ASCII_41:
			depth--
			if depth == 0 {
				return k
			}
		}
	}
	return -1
}

// operandStart finds where the operand of a postfix :: begins among the
// units written so far: a parenthesized group (with the function name
// before it), a qualified name, or one word.
func operandStart(out []unit) int {
	i := len(out) - 1
	if i < 0 {
		return -1
	}
	if out[i].tok == pg.Token_ASCII_41 {
		depth := 0
		for ; i >= 0; i-- {
			switch out[i].tok {
			case pg.Token_ASCII_41:
				depth++
			case pg.Token_ASCII_40:
				depth--
			}
			if depth == 0 {
				break
			}
		}
		if i < 0 {
			return -1
		}
		if i > 0 && out[i-1].word && !out[i].space && out[i-1].tok != pg.Token_SCONST {
			i--
		}
	} else if !out[i].word {
		return -1
	}
	for i >= 2 && out[i-1].tok == pg.Token_ASCII_46 && out[i-2].word {
		i -= 2
	}
	return i
}

// typeName reads a type name at the start of toks: its words (one of the
// multi-word names, or one word, optionally qualified by pg_catalog), and
// its modifiers in parentheses. It returns the lower-case name, the
// modifiers as written, and the tokens used.
func (l *lexer) typeName(toks []*pg.ScanToken) (string, string, int, error) {
	if len(toks) == 0 || !isWord(toks[0]) {
		if len(toks) == 0 {
			return "", "", 0, &Error{Msg: "syntax error at end of input: a type name is missing", Position: utf8.RuneCountInString(l.in) + 1}
		}
		return "", "", 0, l.errorf(toks[0], false, "syntax error at or near %q: a type name is missing", l.in[toks[0].Start:toks[0].End])
	}
	word := func(k int) string { return strings.ToLower(strings.Trim(l.in[toks[k].Start:toks[k].End], `"`)) }
	n := 0
	if word(0) == "pg_catalog" && len(toks) > 2 && toks[1].Token == pg.Token_ASCII_46 {
		n = 2
	}
	name := ""
	for _, mw := range multiWord {
		if n+len(mw) > len(toks) {
			continue
		}
		ok := true
		for k, w := range mw {
			if word(n+k) != w {
				ok = false
				break
			}
		}
		if ok {
			name = strings.Join(mw, " ")
			n += len(mw)
			break
		}
	}
	if name == "" {
		name = word(n)
		n++
	}
	mods := ""
	if n < len(toks) && toks[n].Token == pg.Token_ASCII_40 {
		end := matching(toks, n)
		if end < 0 {
			return "", "", 0, l.errorf(toks[n], false, "unterminated type modifiers")
		}
		mods = l.in[toks[n+1].Start:toks[end].Start]
		if end == n+1 {
			mods = ""
		}
		n = end + 1
	}
	if n < len(toks) && toks[n].Token == pg.Token_ASCII_91 {
		return "", "", 0, l.errorf(toks[n], true, "array types are not supported")
	}
	return name, strings.TrimSpace(mods), n, nil
}

// castUnit writes a cast as a call that keeps the PostgreSQL type's name.
func castUnit(operand []unit, name, mods string, in int, space bool) unit {
	fn := "__pgcast_" + strings.ReplaceAll(name, " ", "_")
	text, spans, _ := joinUnits(operand, false)
	u := unit{text: fn + "(" + text, in: in, space: space, word: true}
	for _, s := range spans {
		u.sub = append(u.sub, span{out: len(fn) + 1 + s.out, in: s.in})
	}
	if mods != "" {
		u.text += ", " + mods
	}
	u.text += ")"
	return u
}

// join writes units as text, resolving parameters to ? in order.
func join(units []unit) (string, []span, []int) { return joinUnits(units, true) }

// joinUnits writes units as text; with resolve, the ?<n> parameter marks
// become ? and their numbers are returned in order.
func joinUnits(units []unit, resolve bool) (string, []span, []int) {
	var b strings.Builder
	var spans []span
	var params []int
	for i, u := range units {
		if i > 0 && u.space {
			b.WriteByte(' ')
		}
		start := b.Len()
		text := u.text
		// Parameters are ?<n> until here, also inside rewritten units.
		for resolve {
			j := strings.Index(text, "?")
			if j < 0 || j+1 >= len(text) || text[j+1] < '0' || text[j+1] > '9' {
				break
			}
			k := j + 1
			for k < len(text) && text[k] >= '0' && text[k] <= '9' {
				k++
			}
			n, _ := strconv.Atoi(text[j+1 : k])
			params = append(params, n)
			text = text[:j] + "?" + "\x00" + text[k:]
		}
		text = strings.ReplaceAll(text, "\x00", "")
		if u.sub == nil {
			spans = append(spans, span{out: start, in: u.in})
		} else {
			for _, s := range u.sub {
				spans = append(spans, span{out: start + s.out, in: s.in})
			}
		}
		b.WriteString(text)
	}
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].out < spans[j].out })
	return b.String(), spans, params
}

// literal reads a PostgreSQL string constant: a standard one (a doubled
// quote inside stands for one), E'…' (with backslash escapes) or
// $tag$…$tag$.
func literal(tok string) (string, error) {
	switch {
	case strings.HasPrefix(tok, "$"):
		end := strings.Index(tok[1:], "$") + 1
		tag := tok[:end+1]
		return strings.TrimSuffix(strings.TrimPrefix(tok, tag), tag), nil
	case len(tok) > 1 && (tok[0] == 'E' || tok[0] == 'e') && tok[1] == '\'':
		return unescape(tok[2 : len(tok)-1])
	case strings.HasPrefix(tok, "'"):
		return strings.ReplaceAll(tok[1:len(tok)-1], "''", "'"), nil
	}
	return "", fmt.Errorf("unsupported string constant %s", tok)
}

func unescape(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\'' && i+1 < len(s) && s[i+1] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
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
		case 'x':
			j := i + 1
			for j < len(s) && j < i+3 && isHex(s[j]) {
				j++
			}
			v, err := strconv.ParseUint(s[i+1:j], 16, 8)
			if err != nil {
				return "", fmt.Errorf("invalid hexadecimal escape in E'…'")
			}
			b.WriteByte(byte(v))
			i = j - 1
		case 'u', 'U':
			n := 4
			if e == 'U' {
				n = 8
			}
			if i+1+n > len(s) {
				return "", fmt.Errorf("invalid Unicode escape in E'…'")
			}
			v, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
			if err != nil || !utf8.ValidRune(rune(v)) {
				return "", fmt.Errorf("invalid Unicode escape in E'…'")
			}
			b.WriteRune(rune(v))
			i += n
		default:
			if e >= '0' && e <= '7' {
				j := i
				for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
					j++
				}
				v, _ := strconv.ParseUint(s[i:j], 8, 8)
				b.WriteByte(byte(v))
				i = j - 1
			} else {
				b.WriteByte(e)
			}
		}
	}
	return b.String(), nil
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// quote writes a standard string literal; with NO_BACKSLASH_ESCAPES the
// TiDB grammar reads it as PostgreSQL does.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
