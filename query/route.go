package query

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/query/sqlstate"
)

// Which grammar reads a statement. cellar has two (DESIGN.md section 3):
//
//   - The dialect's DDL, which declares families, typed columns, GC
//     rules, locality groups and splits (CREATE, ALTER and DROP TABLE),
//     and its MySQL-style forms (SHOW TABLES, SHOW CREATE TABLE,
//     DESCRIBE) go through the PG lexical front end (query/pglex) to the
//     TiDB grammar.
//   - Queries and row writes (SELECT, INSERT, UPSERT, UPDATE, DELETE,
//     EXPLAIN), catalog queries and session statements are read by
//     PostgreSQL's own grammar (pg_query), because their expressions must
//     have PostgreSQL's semantics, which the evaluator (query/pgeval)
//     implements over PostgreSQL's AST. UPSERT INTO, the one extension
//     among them, is read as INSERT INTO with its flag set.
//
// A query string is split into statements by PostgreSQL's lexer; each is
// parsed at once (a syntax error anywhere fails them all, as in
// PostgreSQL) and planned when it runs, so that a statement may use a
// table an earlier statement of the same string created.

// piece is one statement of a query string.
type piece struct {
	text   string
	offset int // in characters, where text starts in the query string
	kind   string
	upsert bool
	// asOf is the expression of AS OF TIMESTAMP, taken out of text.
	asOf string
	// explainUpsert: EXPLAIN of an UPSERT (text has INSERT in its place).
	explainUpsert bool
	// maybeAsOf: the statement has AS OF TIMESTAMP tokens.
	maybeAsOf bool
}

// split divides a query string into statements, classified.
func split(sql string) ([]piece, error) {
	if p, ok := single(sql); ok {
		return []piece{p}, nil
	}
	sc, err := pg.Scan(sql)
	if err != nil {
		return nil, syntaxError(err)
	}
	var out []piece
	start, depth := -1, 0
	var first []string
	upsertAt := -1 // EXPLAIN's UPSERT
	asOf := false
	var prev [2]pg.Token
	flush := func(end int) {
		if start >= 0 {
			p := piece{text: strings.TrimSpace(sql[start:end]), offset: utf8.RuneCountInString(sql[:start])}
			p.kind, p.upsert = classify(first)
			p.maybeAsOf = asOf
			if upsertAt >= 0 && p.kind == kindPG {
				// EXPLAIN [options] UPSERT: read it as INSERT (same
				// length, so positions stay right).
				at := upsertAt - start // text starts at the first token
				p.text = p.text[:at] + "INSERT" + p.text[at+len("upsert"):]
				p.explainUpsert = true
			}
			out = append(out, p)
		}
		start, first, upsertAt, asOf = -1, nil, -1, false
	}
	for _, t := range sc.Tokens {
		if t.Token == pg.Token_SQL_COMMENT || t.Token == pg.Token_C_COMMENT {
			continue
		}
		switch t.Token {
		case pg.Token_ASCII_40:
			depth++
		case pg.Token_ASCII_41:
			depth--
		case pg.Token_ASCII_59:
			if depth <= 0 {
				flush(int(t.Start))
				depth = 0
				continue
			}
		}
		if start < 0 {
			start = int(t.Start)
		}
		word := strings.ToLower(sql[t.Start:t.End])
		if prev[0] == pg.Token_AS && prev[1] == pg.Token_OF && word == "timestamp" {
			asOf = true
		}
		prev[0], prev[1] = prev[1], t.Token
		if len(first) > 0 && first[0] == "explain" && word == "upsert" && upsertAt < 0 && depth == 0 {
			upsertAt = int(t.Start)
		}
		if len(first) < 3 {
			first = append(first, word)
		}
	}
	flush(len(sql))
	return out, nil
}

// single is split's fast path for the common string: one statement with
// no semicolon but a trailing one, starting with plain words. It reads
// the first words itself instead of running PostgreSQL's lexer over what
// may be a large multi-row INSERT (the grammar reads it next anyway).
func single(sql string) (piece, bool) {
	body := strings.TrimRight(sql, " \t\r\n")
	body = strings.TrimSuffix(body, ";")
	start := len(sql) - len(strings.TrimLeft(sql, " \t\r\n"))
	if strings.ContainsAny(body, ";") || start >= len(body) {
		return piece{}, false
	}
	var words []string
	rest := body[start:]
	for len(words) < 3 {
		rest = strings.TrimLeft(rest, " \t\r\n")
		n := 0
		for n < len(rest) && (rest[n] == '_' || rest[n] >= 'a' && rest[n] <= 'z' || rest[n] >= 'A' && rest[n] <= 'Z' || n > 0 && rest[n] >= '0' && rest[n] <= '9') {
			n++
		}
		if n == 0 {
			break
		}
		words = append(words, strings.ToLower(rest[:n]))
		rest = rest[n:]
	}
	if len(words) == 0 || strings.HasPrefix(body[start:], "--") || strings.HasPrefix(body[start:], "/*") ||
		(words[0] == "explain" && containsFold(body, "upsert")) {
		return piece{}, false
	}
	p := piece{text: strings.TrimSpace(body), offset: utf8.RuneCountInString(sql[:start])}
	p.kind, p.upsert = classify(words)
	p.maybeAsOf = containsFold(body, "as of")
	return p, true
}

// containsFold reports whether s contains sub, ignoring ASCII case; sub
// is lower case and starts with a letter. It runs over every multi-row
// INSERT, so EqualFold runs only where the first letter matches (at every
// byte it was 6% of a bulk load's CPU).
func containsFold(s, sub string) bool {
	if sub == "" {
		return true
	}
	c := sub[0]
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i]|0x20 == c && strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// Statement kinds by grammar.
const (
	kindPG      = "pg"
	kindDialect = "dialect"
)

func classify(words []string) (kind string, upsert bool) {
	w := func(i int) string {
		if i < len(words) {
			return words[i]
		}
		return ""
	}
	switch w(0) {
	case "upsert":
		return kindPG, true
	case "describe", "desc":
		return kindDialect, false
	case "show":
		if w(1) == "tables" || (w(1) == "create" && w(2) == "table") || w(1) == "columns" {
			return kindDialect, false
		}
	case "create", "alter", "drop":
		if w(1) == "table" {
			return kindDialect, false
		}
	}
	return kindPG, false
}

// parsePiece parses one statement with its grammar; a PG statement's
// node is returned, a dialect statement is read when it is planned.
func parsePiece(p *piece) (*pg.Node, error) {
	if p.kind == kindDialect {
		return nil, nil
	}
	text := p.text
	if p.maybeAsOf {
		if asOf, rest, err := cutAsOf(text); err != nil {
			return nil, shiftPosition(err, p.offset)
		} else if asOf != "" {
			text, p.asOf = rest, asOf
		}
	}
	if p.upsert {
		// Same length, so positions stay right.
		text = "INSERT" + text[len("upsert"):]
	}
	tree, err := pg.Parse(text)
	if err != nil {
		return nil, shiftPosition(syntaxError(err), p.offset)
	}
	if len(tree.Stmts) != 1 {
		return nil, sqlstate.Errorf(sqlstate.CodeSyntaxError, "cannot parse %q as one statement", p.text)
	}
	return tree.Stmts[0].Stmt, nil
}

// shiftPosition moves an error's position by the statement's offset in
// the query string.
func shiftPosition(err error, offset int) error {
	var e *sqlstate.Error
	if errors.As(err, &e) && e.Position > 0 && offset > 0 {
		c := *e
		c.Position += offset
		return &c
	}
	return err
}

// tableStatement reports whether a PG statement reads or writes tables,
// so that it is planned when it runs, not when it is parsed.
func tableStatement(n *pg.Node) bool {
	switch n.Node.(type) {
	case *pg.Node_SelectStmt, *pg.Node_InsertStmt, *pg.Node_UpdateStmt, *pg.Node_DeleteStmt, *pg.Node_ExplainStmt, *pg.Node_CopyStmt, *pg.Node_DeclareCursorStmt:
		return true
	}
	return false
}

// maxParam is the highest $n in a statement, and where the first is.
func maxParam(n *pg.Node) (int, int) {
	most, pos := 0, 0
	walk(n, func(m protoMessage) bool {
		if p, ok := m.(*pg.ParamRef); ok {
			most = max(most, int(p.Number))
			if pos == 0 || int(p.Location)+1 < pos {
				pos = int(p.Location) + 1
			}
		}
		return true
	})
	return most, pos
}

// compileLater returns a statement planned at its first execution.
func (s *Session) compileLater(p piece, n *pg.Node, paramOIDs []uint32) *Statement {
	st := &Statement{SQL: p.text}
	if n != nil {
		most, pos := maxParam(n)
		st.Params = make([]uint32, most)
		st.ParamPosition = pos + p.offset
	}
	st.later = func(ctx context.Context, s *Session) (*Statement, error) {
		var c *Statement
		var err error
		if p.kind == kindDialect {
			c, err = s.compileDialect(ctx, p)
		} else {
			c, err = s.compileTable(ctx, p, n, paramOIDs)
		}
		return c, shiftPosition(err, p.offset)
	}
	return st
}

// cutAsOf takes AS OF TIMESTAMP <constant or $n> out of a query (after its
// table), which PostgreSQL's grammar does not have, blanking it so that
// positions stay right. The expression reads the table as of that time.
func cutAsOf(text string) (string, string, error) {
	sc, err := pg.Scan(text)
	if err != nil {
		return "", text, nil
	}
	toks := sc.Tokens
	for i := 0; i+3 < len(toks); i++ {
		if toks[i].Token != pg.Token_AS || toks[i+1].Token != pg.Token_OF || !strings.EqualFold(text[toks[i+2].Start:toks[i+2].End], "timestamp") {
			continue
		}
		end := i + 3
		switch toks[end].Token {
		case pg.Token_SCONST, pg.Token_PARAM, pg.Token_ICONST:
		default:
			return "", "", &sqlstate.Error{Code: sqlstate.CodeSyntaxError, Message: "AS OF TIMESTAMP takes a constant or a parameter", Position: int(toks[end].Start) + 1}
		}
		expr := text[toks[end].Start:toks[end].End]
		blank := strings.Repeat(" ", int(toks[end].End-toks[i].Start))
		return expr, text[:toks[i].Start] + blank + text[toks[end].End:], nil
	}
	return "", text, nil
}
