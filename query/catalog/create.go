package catalog

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/types"

	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/query/pglex"
	"github.com/cellardb/cellar/query/sqlstate"
)

func errorf(code, format string, args ...any) *sqlstate.Error {
	return sqlstate.Errorf(code, format, args...)
}

// SQLSTATEs of definition errors.
const (
	codeFeatureNotSupported = "0A000"
	codeInvalidDefinition   = "42P16"
	codeDuplicateColumn     = "42701"
	codeInvalidParameter    = "22023"
	codeUndefinedObject     = "42704"
	codeUndefinedColumn     = "42703"
)

// Created is what a CREATE TABLE makes.
type Created struct {
	Table  *Table
	Schema model.Schema
	// Splits are the row keys the table's tablets start at.
	Splits [][]byte
}

// FromCreate reads a CREATE TABLE (as the TiDB grammar parsed the front
// end's output) and its WITH options.
func FromCreate(stmt *ast.CreateTableStmt, opts []pglex.Option) (*Created, error) {
	if stmt.ReferTable != nil || stmt.Select != nil || stmt.Partition != nil || len(stmt.Options) > 0 {
		return nil, errorf(codeFeatureNotSupported, "CREATE TABLE supports columns, a primary key and WITH options only")
	}
	t := &Table{Name: stmt.Table.Name.O}
	primary, err := primaryKey(stmt)
	if err != nil {
		return nil, err
	}
	_, hasKeyColumn := primaryIndex(stmt, KeyColumn)
	t.Plain = !hasKeyColumn
	families := map[string]*Family{}
	var familyOrder []string
	declare := func(name string, typ model.ValueType, explicit bool) error {
		if name == MarkerFamily {
			return errorf(codeInvalidDefinition, "family %q is reserved", MarkerFamily)
		}
		if err := model.ValidateFamilyName(name); err != nil {
			return errorf(codeInvalidDefinition, "family %q: %v", name, err)
		}
		if f, ok := families[name]; ok {
			if explicit {
				f.DefaultType, f.Open = typ, true
			}
			return nil
		}
		if name == KeyColumn {
			return errorf(codeInvalidDefinition, "a family cannot be named %q", KeyColumn)
		}
		families[name] = &Family{Name: name, DefaultType: typ, Open: explicit}
		familyOrder = append(familyOrder, name)
		return nil
	}
	seen := map[string]bool{}
	var keyCols, others []Column
	for _, cd := range stmt.Cols {
		name := cd.Name.Name.O
		if seen[name] {
			return nil, errorf(codeDuplicateColumn, "column %q specified more than once", name)
		}
		seen[name] = true
		typ, err := valueType(cd.Tp, name)
		if err != nil {
			return nil, err
		}
		col := Column{Name: name, Type: typ}
		col.Varchar, col.Length = varchar(cd.Tp)
		if col.Precision, col.Scale, err = numeric(cd.Tp, name); err != nil {
			return nil, err
		}
		for _, o := range cd.Options {
			switch o.Tp {
			case ast.ColumnOptionPrimaryKey, ast.ColumnOptionNotNull:
				col.NotNull = true
			case ast.ColumnOptionNull:
			default:
				what := "this option"
				switch o.Tp {
				case ast.ColumnOptionDefaultValue:
					what = "DEFAULT"
				case ast.ColumnOptionUniqKey:
					what = "UNIQUE"
				case ast.ColumnOptionCheck:
					what = "CHECK"
				case ast.ColumnOptionReference:
					what = "REFERENCES"
				case ast.ColumnOptionGenerated:
					what = "GENERATED"
				case ast.ColumnOptionCollate:
					what = "COLLATE"
				}
				return nil, errorf(codeFeatureNotSupported, "column %q: %s is not supported (only PRIMARY KEY, NOT NULL and NULL are)", name, what)
			}
		}
		if k := slices.Index(primary, name); k >= 0 {
			col.Key, col.NotNull = true, true
			if !t.Plain && typ != model.TypeText && typ != model.TypeBytea {
				return nil, errorf(codeInvalidDefinition, "_key must be TEXT or BYTEA, not %s", typ)
			}
			if typ == model.TypeNumeric || typ == model.TypeJSONB {
				return nil, errorf(codeFeatureNotSupported, "a %s column cannot be in a primary key", typ)
			}
			keyCols = append(keyCols, col)
			continue
		}
		fam, qual, qualified := strings.Cut(name, ":")
		switch {
		case t.Plain && qualified:
			return nil, errorf(codeInvalidDefinition, "column %q: a table keyed by plain columns has plain columns; name its key _key to use family:qualifier columns", name)
		case !t.Plain && !qualified:
			return nil, errorf(codeInvalidDefinition, "column %q: in a table keyed by _key, declare columns as \"family:qualifier\" (or families as \"family:\")", name)
		case t.Plain:
			col.Family, col.Qualifier = DefaultFamily, name
			if err := declare(DefaultFamily, model.TypeBytea, false); err != nil {
				return nil, err
			}
		case qual == "":
			if err := declare(fam, typ, true); err != nil {
				return nil, err
			}
			continue // a family declaration, not a column
		default:
			col.Family, col.Qualifier = fam, qual
			if err := declare(fam, model.TypeBytea, false); err != nil {
				return nil, err
			}
		}
		others = append(others, col)
	}
	// Key columns in the primary key's order.
	slices.SortFunc(keyCols, func(a, b Column) int { return slices.Index(primary, a.Name) - slices.Index(primary, b.Name) })
	if len(keyCols) != len(primary) {
		return nil, errorf(codeUndefinedObject, "the primary key names a column that does not exist")
	}
	t.Columns = append(keyCols, others...)
	for _, name := range familyOrder {
		t.Families = append(t.Families, *families[name])
	}
	c := &Created{Table: t}
	c.Schema.Families = append(c.Schema.Families, model.Family{Name: MarkerFamily, GC: model.MaxVersionsRule(1)})
	for _, f := range t.Families {
		c.Schema.Families = append(c.Schema.Families, model.Family{Name: f.Name})
	}
	if err := c.applyOptions(opts); err != nil {
		return nil, err
	}
	if err := c.Schema.Validate(); err != nil {
		return nil, errorf(codeInvalidDefinition, "%v", err)
	}
	if err := t.Attach(&c.Schema); err != nil {
		return nil, err
	}
	return c, nil
}

// primaryKey returns the primary key's column names, from a column's
// PRIMARY KEY or the table's constraint.
func primaryKey(stmt *ast.CreateTableStmt) ([]string, error) {
	var key []string
	for _, cd := range stmt.Cols {
		for _, o := range cd.Options {
			if o.Tp == ast.ColumnOptionPrimaryKey {
				key = append(key, cd.Name.Name.O)
			}
		}
	}
	for _, c := range stmt.Constraints {
		switch c.Tp {
		case ast.ConstraintPrimaryKey:
			if len(key) > 0 {
				return nil, errorf(codeInvalidDefinition, "multiple primary keys are not allowed")
			}
			for _, k := range c.Keys {
				if k.Column == nil {
					return nil, errorf(codeFeatureNotSupported, "primary keys on expressions are not supported")
				}
				key = append(key, k.Column.Name.O)
			}
		default:
			return nil, errorf(codeFeatureNotSupported, "only PRIMARY KEY constraints are supported")
		}
	}
	if len(key) == 0 {
		return nil, errorf(codeInvalidDefinition, "a table needs a primary key: _key TEXT PRIMARY KEY, or the key of a plain table")
	}
	if len(key) > 1 && len(key) != len(unique(key)) {
		return nil, errorf(codeInvalidDefinition, "multiple primary keys are not allowed")
	}
	return key, nil
}

func unique(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return slices.Compact(c)
}

func primaryIndex(stmt *ast.CreateTableStmt, name string) (int, bool) {
	key, err := primaryKey(stmt)
	if err != nil {
		return -1, false
	}
	i := slices.Index(key, name)
	return i, i >= 0 && len(key) == 1
}

// varchar reads VARCHAR(n): a TEXT column with a length limit.
func varchar(ft *types.FieldType) (bool, int) {
	switch ft.GetType() {
	case mysql.TypeVarchar, mysql.TypeVarString:
		if ft.GetCharset() != "binary" {
			return true, max(ft.GetFlen(), 0)
		}
	}
	return false, 0
}

// numeric returns a NUMERIC(p,s)'s precision and scale (NUMERIC(p) is
// scale 0), or 0, 0 for a NUMERIC without them.
func numeric(ft *types.FieldType, column string) (int, int, error) {
	if ft.GetType() != mysql.TypeNewDecimal || ft.GetFlen() <= 0 {
		return 0, 0, nil
	}
	p, s := ft.GetFlen(), max(ft.GetDecimal(), 0)
	if p > 1000 {
		return 0, 0, errorf(codeInvalidParameter, "column %q: NUMERIC precision %d must be between 1 and 1000", column, p)
	}
	if s > 1000 {
		return 0, 0, errorf(codeInvalidParameter, "column %q: NUMERIC scale %d must be between -1000 and 1000", column, s)
	}
	return p, s, nil
}

// valueType maps a column type, as the front end wrote it for the TiDB
// grammar, back to cellar's (query/pglex's type table is the other half).
func valueType(ft *types.FieldType, column string) (model.ValueType, error) {
	binary := ft.GetCharset() == "binary"
	switch ft.GetType() {
	case mysql.TypeLonglong:
		return model.TypeInt8, nil
	case mysql.TypeLong, mysql.TypeInt24:
		return model.TypeInt4, nil
	case mysql.TypeShort:
		return model.TypeInt2, nil
	case mysql.TypeTiny:
		if ft.GetFlen() == 1 {
			return model.TypeBool, nil // BOOLEAN
		}
		return model.TypeInt2, nil
	case mysql.TypeDouble:
		return model.TypeFloat8, nil
	case mysql.TypeFloat:
		return model.TypeFloat4, nil
	case mysql.TypeNewDecimal:
		return model.TypeNumeric, nil
	case mysql.TypeJSON:
		return model.TypeJSONB, nil
	case mysql.TypeTimestamp:
		return model.TypeTimestamptz, nil
	case mysql.TypeDate:
		return model.TypeDate, nil
	case mysql.TypeString:
		if binary && ft.GetFlen() == 16 {
			return model.TypeUUID, nil // BINARY(16), the front end's uuid
		}
		if !binary {
			return model.TypeText, nil
		}
	case mysql.TypeVarchar, mysql.TypeVarString:
		if !binary {
			return model.TypeText, nil
		}
	case mysql.TypeBlob, mysql.TypeTinyBlob, mysql.TypeMediumBlob, mysql.TypeLongBlob:
		if binary {
			return model.TypeBytea, nil
		}
		return model.TypeText, nil
	case mysql.TypeDatetime:
		return 0, errorf(codeFeatureNotSupported, "column %q: timestamp without time zone is not supported; use timestamptz", column)
	}
	return 0, errorf(codeFeatureNotSupported, "column %q: type %s is not supported", column, ft.String())
}

// applyOptions reads WITH (…): splits; per family max_versions, max_age,
// gc (union or intersection of the two) and group; per locality group
// in_memory, compression (snappy or none) and bloom.
func (c *Created) applyOptions(opts []pglex.Option) error {
	type famOpts struct {
		versions int
		age      time.Duration
		gc       string
		group    string
	}
	fams := map[string]*famOpts{}
	groups := map[string]*model.LocalityGroup{}
	var groupOrder []string
	group := func(name string) *model.LocalityGroup {
		g := groups[name]
		if g == nil {
			g = &model.LocalityGroup{Name: name}
			groups[name] = g
			groupOrder = append(groupOrder, name)
		}
		return g
	}
	isFamily := func(name string) bool {
		for _, f := range c.Table.Families {
			if f.Name == name {
				return true
			}
		}
		return false
	}
	for _, o := range opts {
		bad := func(format string, args ...any) error {
			return errorf(codeInvalidParameter, "WITH option %s: %s", o.Name, fmt.Sprintf(format, args...))
		}
		if o.Name == "splits" {
			if c.Table.Plain {
				return errorf(codeFeatureNotSupported, "WITH option splits: split keys are supported on tables keyed by _key")
			}
			for _, s := range strings.Split(o.Value, ",") {
				if s = strings.TrimSpace(s); s != "" {
					c.Splits = append(c.Splits, []byte(s))
				}
			}
			continue
		}
		owner, setting, ok := strings.Cut(o.Name, ".")
		if !ok {
			return bad("unknown option (options are splits, <family>.max_versions|max_age|gc|group, <group>.in_memory|compression|bloom)")
		}
		switch setting {
		case "max_versions", "max_age", "gc", "group":
			if !isFamily(owner) {
				return bad("no family %q in this table", owner)
			}
			f := fams[owner]
			if f == nil {
				f = &famOpts{}
				fams[owner] = f
			}
			switch setting {
			case "max_versions":
				n, err := strconv.Atoi(o.Value)
				if err != nil || n < 1 {
					return bad("%q is not a positive integer", o.Value)
				}
				f.versions = n
			case "max_age":
				d, err := parseAge(o.Value)
				if err != nil {
					return bad("%v", err)
				}
				f.age = d
			case "gc":
				if o.Value != "union" && o.Value != "intersection" {
					return bad("%q: use union or intersection", o.Value)
				}
				f.gc = o.Value
			case "group":
				f.group = o.Value
				group(o.Value)
			}
		case "in_memory", "bloom":
			b, err := strconv.ParseBool(o.Value)
			if err != nil {
				return bad("%q is not true or false", o.Value)
			}
			if setting == "in_memory" {
				group(owner).InMemory = b
			} else {
				group(owner).NoBloom = !b
			}
		case "compression":
			switch o.Value {
			case "snappy":
				group(owner).Compression = model.CompressionSnappy
			case "none":
				group(owner).Compression = model.CompressionNone
			default:
				return bad("%q: use snappy or none", o.Value)
			}
		default:
			return bad("unknown setting %q", setting)
		}
	}
	for i := range c.Schema.Families {
		f := &c.Schema.Families[i]
		o := fams[f.Name]
		if o == nil {
			continue
		}
		var rules []model.GCRule
		if o.versions > 0 {
			rules = append(rules, model.MaxVersionsRule(o.versions))
		}
		if o.age > 0 {
			rules = append(rules, model.MaxAgeRule(o.age))
		}
		switch {
		case len(rules) == 1:
			f.GC = rules[0]
		case len(rules) == 2 && o.gc == "intersection":
			f.GC = model.IntersectionRule(rules...)
		case len(rules) == 2:
			f.GC = model.UnionRule(rules...)
		}
		f.LocalityGroup = o.group
	}
	for _, name := range groupOrder {
		c.Schema.LocalityGroups = append(c.Schema.LocalityGroups, *groups[name])
	}
	return nil
}

// parseAge reads a max age: a Go duration ("36h") or PostgreSQL-style
// "N days|hours|minutes|seconds".
func parseAge(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d, nil
	}
	f := strings.Fields(s)
	if len(f) == 2 {
		n, err := strconv.Atoi(f[0])
		unit := map[string]time.Duration{"day": 24 * time.Hour, "days": 24 * time.Hour, "hour": time.Hour, "hours": time.Hour,
			"minute": time.Minute, "minutes": time.Minute, "second": time.Second, "seconds": time.Second}[strings.ToLower(f[1])]
		if err == nil && n > 0 && unit > 0 {
			return time.Duration(n) * unit, nil
		}
	}
	return 0, fmt.Errorf("%q is not a duration such as '30 days' or '12h'", s)
}
