package catalog

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cellardb/cellar/kv/model"
)

// CreateStatement writes the CREATE TABLE statement that makes a table
// like t with schema s (SHOW CREATE TABLE). GC rules and locality groups
// come out as WITH options; a nested rule (a union inside an
// intersection), which only the native API can make, is written as a
// comment. splits are the row keys the table's tablets start at (all but
// the first's): a table keyed by _key shows them as its splits option,
// or, if one cannot be written there, says so in a comment.
func CreateStatement(t *Table, s model.Schema, splits [][]byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE %s (\n", quoteIdent(t.Name))
	var lines []string
	for _, c := range t.Columns {
		typ := strings.ToUpper(c.TypeName())
		if c.Varchar {
			typ = "VARCHAR"
			if c.Length > 0 {
				typ = fmt.Sprintf("VARCHAR(%d)", c.Length)
			}
		}
		line := "  " + quoteIdent(c.Name) + " " + typ
		if c.NotNull && !c.Key {
			line += " NOT NULL"
		}
		if c.Key && len(t.KeyColumns()) == 1 {
			line += " PRIMARY KEY"
		}
		lines = append(lines, line)
	}
	for _, f := range t.Families {
		if f.Open {
			lines = append(lines, "  "+quoteIdent(f.Name+":")+" "+strings.ToUpper(f.DefaultType.String()))
		}
	}
	if k := t.KeyColumns(); len(k) > 1 {
		var names []string
		for _, c := range k {
			names = append(names, quoteIdent(c.Name))
		}
		lines = append(lines, "  PRIMARY KEY ("+strings.Join(names, ", ")+")")
	}
	b.WriteString(strings.Join(lines, ",\n"))
	b.WriteString("\n)")
	var opts, notes []string
	if len(splits) > 0 && !t.Plain {
		if keys, ok := splitsOption(splits); ok {
			opts = append(opts, "splits = "+quoteLiteral(keys))
		} else {
			notes = append(notes, fmt.Sprintf("-- %d split points, not all writable as splits (a key with a comma, spaces at its ends or bytes that are not UTF-8)", len(splits)))
		}
	}
	for _, f := range s.Families {
		if f.Name == MarkerFamily {
			continue
		}
		o, ok := gcOptions(f.Name, f.GC)
		if !ok {
			notes = append(notes, fmt.Sprintf("-- family %s: GC rule %s", f.Name, f.GC))
		}
		opts = append(opts, o...)
		if f.LocalityGroup != "" {
			opts = append(opts, fmt.Sprintf("%s.group = '%s'", f.Name, f.LocalityGroup))
		}
	}
	for _, g := range s.LocalityGroups {
		if g.InMemory {
			opts = append(opts, g.Name+".in_memory = true")
		}
		if g.Compression == model.CompressionNone {
			opts = append(opts, g.Name+".compression = 'none'")
		}
		if g.NoBloom {
			opts = append(opts, g.Name+".bloom = false")
		}
	}
	if len(opts) > 0 {
		b.WriteString(" WITH (" + strings.Join(opts, ", ") + ")")
	}
	for _, n := range notes {
		b.WriteString("\n" + n)
	}
	return b.String()
}

func gcOptions(fam string, r model.GCRule) ([]string, bool) {
	one := func(r model.GCRule) (string, bool) {
		switch r.Kind {
		case model.GCMaxVersions:
			return fmt.Sprintf("%s.max_versions = %d", fam, r.MaxVersions), true
		case model.GCMaxAge:
			return fmt.Sprintf("%s.max_age = '%s'", fam, ageText(r.MaxAge)), true
		}
		return "", false
	}
	switch r.Kind {
	case model.GCNone:
		return nil, true
	case model.GCMaxVersions, model.GCMaxAge:
		o, _ := one(r)
		return []string{o}, true
	case model.GCUnion, model.GCIntersection:
		if len(r.Rules) != 2 || r.Rules[0].Kind == r.Rules[1].Kind {
			return nil, false
		}
		a, ok1 := one(r.Rules[0])
		b, ok2 := one(r.Rules[1])
		if !ok1 || !ok2 {
			return nil, false
		}
		kind := "union"
		if r.Kind == model.GCIntersection {
			kind = "intersection"
		}
		return []string{a, b, fmt.Sprintf("%s.gc = '%s'", fam, kind)}, true
	}
	return nil, false
}

func ageText(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hours", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%d minutes", d/time.Minute)
	}
	return fmt.Sprintf("%d seconds", d/time.Second)
}

// quoteIdent quotes a name unless PostgreSQL would read it bare.
func quoteIdent(s string) string {
	bare := s != ""
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			bare = false
		}
	}
	if bare {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// splitsOption writes split keys as the splits option reads them: comma
// separated, each trimmed of spaces.
func splitsOption(splits [][]byte) (string, bool) {
	keys := make([]string, len(splits))
	for i, k := range splits {
		s := string(k)
		if s == "" || !utf8.ValidString(s) || strings.Contains(s, ",") || strings.TrimSpace(s) != s {
			return "", false
		}
		keys[i] = s
	}
	return strings.Join(keys, ","), true
}

// quoteLiteral is s as a standard SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
