package catalog

import (
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/query/pglex"
)

// ALTER TABLE changes a table's definition and storage schema together:
//
//	ADD [COLUMN] "f:q" TYPE     a typed column (its family is created if new)
//	ADD [COLUMN] "f:" TYPE      an open family, or opens an existing one
//	ADD [COLUMN] name TYPE      a column of a plain table
//	DROP [COLUMN] "f:q" | name  forgets a typed column: its cells stay, and
//	                            show again if it is declared again
//	DROP [COLUMN] "f:"          drops the family and all its cells
//	SET (f.max_versions = 3, …) GC rules and locality-group settings, as
//	                            in CREATE TABLE's WITH (…)

// Altered is a table after ALTER TABLE.
type Altered struct {
	Table  *Table
	Schema model.Schema
}

// clone copies a definition and schema so that a failed ALTER changes
// nothing.
func clone(t *Table, s model.Schema) *Altered {
	c := *t
	c.Columns = slices.Clone(t.Columns)
	c.Families = slices.Clone(t.Families)
	s.Families = slices.Clone(s.Families)
	s.LocalityGroups = slices.Clone(s.LocalityGroups)
	return &Altered{Table: &c, Schema: s}
}

// FromAlter applies ALTER TABLE's column changes (TiDB's AST).
func FromAlter(t *Table, s model.Schema, stmt *ast.AlterTableStmt) (*Altered, error) {
	a := clone(t, s)
	for _, spec := range stmt.Specs {
		var err error
		switch spec.Tp {
		case ast.AlterTableAddColumns:
			for _, cd := range spec.NewColumns {
				if err = a.addColumn(cd); err != nil {
					break
				}
			}
		case ast.AlterTableDropColumn:
			err = a.dropColumn(spec.OldColumnName.Name.O, spec.IfExists)
		default:
			err = errorf(codeFeatureNotSupported, "ALTER TABLE supports ADD COLUMN, DROP COLUMN and SET (options)")
		}
		if err != nil {
			return nil, err
		}
	}
	return a, a.finish()
}

// AlterOptions applies ALTER TABLE … SET (options).
func AlterOptions(t *Table, s model.Schema, opts []pglex.Option) (*Altered, error) {
	a := clone(t, s)
	for _, o := range opts {
		if o.Name == "splits" {
			return nil, errorf(codeFeatureNotSupported, "splits are chosen at CREATE TABLE; later the tablets split by size")
		}
	}
	c := &Created{Table: a.Table, Schema: a.Schema}
	// Only the families the options name change; the others keep their
	// rules and groups.
	before := map[string]model.Family{}
	for _, f := range a.Schema.Families {
		before[f.Name] = f
	}
	groups := a.Schema.LocalityGroups
	c.Schema.LocalityGroups = nil
	if err := c.applyOptions(opts); err != nil {
		return nil, err
	}
	named := map[string]bool{}
	for _, o := range opts {
		owner, _, _ := strings.Cut(o.Name, ".")
		named[owner] = true
	}
	for i, f := range c.Schema.Families {
		if !named[f.Name] {
			c.Schema.Families[i] = before[f.Name]
		}
	}
	for _, g := range groups {
		if !slices.ContainsFunc(c.Schema.LocalityGroups, func(n model.LocalityGroup) bool { return n.Name == g.Name }) {
			c.Schema.LocalityGroups = append(c.Schema.LocalityGroups, g)
		}
	}
	a.Schema = c.Schema
	return a, a.finish()
}

func (a *Altered) finish() error {
	if err := a.Schema.Validate(); err != nil {
		return errorf(codeInvalidDefinition, "%v", err)
	}
	return a.Table.Attach(&a.Schema)
}

func (a *Altered) family(name string) *Family {
	for i := range a.Table.Families {
		if a.Table.Families[i].Name == name {
			return &a.Table.Families[i]
		}
	}
	return nil
}

func (a *Altered) addFamily(name string, typ model.ValueType, open bool) error {
	if f := a.family(name); f != nil {
		if open {
			f.DefaultType, f.Open = typ, true
		}
		return nil
	}
	if name == MarkerFamily || name == KeyColumn {
		return errorf(codeInvalidDefinition, "family %q is reserved", name)
	}
	if err := model.ValidateFamilyName(name); err != nil {
		return errorf(codeInvalidDefinition, "family %q: %v", name, err)
	}
	a.Table.Families = append(a.Table.Families, Family{Name: name, DefaultType: typ, Open: open})
	a.Schema.Families = append(a.Schema.Families, model.Family{Name: name})
	return nil
}

func (a *Altered) addColumn(cd *ast.ColumnDef) error {
	name := cd.Name.Name.O
	typ, err := valueType(cd.Tp, name)
	if err != nil {
		return err
	}
	for _, o := range cd.Options {
		switch o.Tp {
		case ast.ColumnOptionNull:
		case ast.ColumnOptionNotNull:
			return errorf(codeFeatureNotSupported, "column %q: a column added later cannot be NOT NULL (the rows already written lack it)", name)
		default:
			return errorf(codeFeatureNotSupported, "column %q: ADD COLUMN takes a name and a type", name)
		}
	}
	if slices.ContainsFunc(a.Table.Columns, func(c Column) bool { return c.Name == name }) {
		return errorf(codeDuplicateColumn, "column %q of relation %q already exists", name, a.Table.Name)
	}
	fam, qual, qualified := strings.Cut(name, ":")
	switch {
	case a.Table.Plain && qualified:
		return errorf(codeInvalidDefinition, "column %q: a plain table has plain columns", name)
	case !a.Table.Plain && !qualified:
		return errorf(codeInvalidDefinition, "column %q: in a table keyed by _key, add \"family:qualifier\" columns or \"family:\" families", name)
	case a.Table.Plain:
		col := Column{Name: name, Family: DefaultFamily, Qualifier: name, Type: typ}
		col.Varchar, col.Length = varchar(cd.Tp)
		if col.Precision, col.Scale, err = numeric(cd.Tp, name); err != nil {
			return err
		}
		a.Table.Columns = append(a.Table.Columns, col)
		return nil
	case qual == "":
		return a.addFamily(fam, typ, true)
	}
	if err := a.addFamily(fam, model.TypeBytea, false); err != nil {
		return err
	}
	col := Column{Name: name, Family: fam, Qualifier: qual, Type: typ}
	col.Varchar, col.Length = varchar(cd.Tp)
	if col.Precision, col.Scale, err = numeric(cd.Tp, name); err != nil {
		return err
	}
	a.Table.Columns = append(a.Table.Columns, col)
	return nil
}

func (a *Altered) dropColumn(name string, ifExists bool) error {
	if i := slices.IndexFunc(a.Table.Columns, func(c Column) bool { return c.Name == name }); i >= 0 {
		if a.Table.Columns[i].Key {
			return errorf(codeFeatureNotSupported, "cannot drop %s: it is the row key", name)
		}
		a.Table.Columns = slices.Delete(a.Table.Columns, i, i+1)
		return nil
	}
	if fam, qual, ok := strings.Cut(name, ":"); ok && qual == "" && a.family(fam) != nil {
		a.Table.Families = slices.DeleteFunc(a.Table.Families, func(f Family) bool { return f.Name == fam })
		a.Table.Columns = slices.DeleteFunc(a.Table.Columns, func(c Column) bool { return c.Family == fam })
		a.Schema.Families = slices.DeleteFunc(a.Schema.Families, func(f model.Family) bool { return f.Name == fam })
		return nil
	}
	if ifExists {
		return nil
	}
	return errorf(codeUndefinedColumn, "column %q of relation %q does not exist", name, a.Table.Name)
}
