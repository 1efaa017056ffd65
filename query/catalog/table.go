// Package catalog is how SQL sees cellar's tables: which columns a table
// has, their types, and how they map onto row keys, families and
// qualifiers. A table definition travels with the table's storage schema
// (model.Schema.Meta["sql"]), so it lives in Chubby through the master
// like the rest of the schema.
//
// Two shapes of table (DESIGN.md section 5):
//
//   - Bigtable-shaped: `_key TEXT|BYTEA PRIMARY KEY`, families declared as
//     `"family:" TYPE` (TYPE is the type of the family's undeclared
//     qualifiers), and typed columns `"family:qualifier" TYPE`. The row key
//     is _key itself.
//   - Plain (PostgreSQL-style): any primary key, one column or several,
//     whose values make the row key in an order-preserving encoding (a
//     single TEXT or BYTEA key is the row key itself); the other columns
//     are qualifiers of the default family "d".
//
// A table made through the native API has no definition; SQL sees it as
// `_key BYTEA` with each family's qualifiers as BYTEA.
package catalog

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/query/pgtypes"
)

const (
	// KeyColumn names the row key of a Bigtable-shaped table.
	KeyColumn = "_key"
	// DefaultFamily holds the columns of plain tables.
	DefaultFamily = "d"
	// MarkerFamily holds the marker cell of a row written with only its
	// key (DESIGN.md section 4); SQL hides it.
	MarkerFamily = "_"
	metaKey      = "sql"
)

// Column is a column as SQL names it.
type Column struct {
	// Name: "_key", "family:qualifier", or a plain table's column name.
	Name string `json:"name"`
	// Family and Qualifier locate a non-key column's cells.
	Family    string          `json:"family,omitempty"`
	Qualifier string          `json:"qualifier,omitempty"`
	Type      model.ValueType `json:"type"`
	// Varchar: declared VARCHAR, stored as TEXT; Length, if not 0, is
	// its limit in characters (VARCHAR(n)).
	Varchar bool `json:"varchar,omitempty"`
	Length  int  `json:"length,omitempty"`
	// Precision, if not 0, and Scale are a NUMERIC(p,s)'s: values are
	// rounded to Scale fractional digits and must then have at most
	// Precision-Scale digits before the point, as in PostgreSQL.
	Precision int  `json:"precision,omitempty"`
	Scale     int  `json:"scale,omitempty"`
	Key       bool `json:"key,omitempty"`
	NotNull   bool `json:"not_null,omitempty"`
}

// Family is a column family as SQL sees it.
type Family struct {
	Name string `json:"name"`
	// DefaultType is the type of the family's undeclared qualifiers.
	DefaultType model.ValueType `json:"default_type"`
	// Open: declared as "family:" (or a native table's family), so any
	// qualifier may be written, and SELECT * shows the undeclared ones
	// as one JSONB column named after the family.
	Open bool `json:"open,omitempty"`
}

// Table is a table as SQL sees it.
type Table struct {
	Name string `json:"-"`
	// Plain: a PostgreSQL-style table.
	Plain bool `json:"plain,omitempty"`
	// Columns: the key columns first, in key order, then the others in
	// the order they were declared.
	Columns  []Column `json:"columns"`
	Families []Family `json:"families"`
	native   bool
}

// Native reports whether the table has no SQL definition: it was made
// through the native API, so its rows may lack the marker cell.
func (t *Table) Native() bool { return t.native }

// KeyColumns returns the primary key's columns, in key order.
func (t *Table) KeyColumns() []Column {
	var out []Column
	for _, c := range t.Columns {
		if c.Key {
			out = append(out, c)
		}
	}
	return out
}

// RawKey reports whether the row key is the key column's value itself (a
// single TEXT or BYTEA key) rather than the order-preserving encoding.
func (t *Table) RawKey() bool {
	k := t.KeyColumns()
	return len(k) == 1 && (k[0].Type == model.TypeText || k[0].Type == model.TypeBytea)
}

// TypeOID is the PostgreSQL type of a cell value type.
func TypeOID(t model.ValueType) uint32 {
	switch t {
	case model.TypeText:
		return pgtypes.OIDText
	case model.TypeInt8:
		return pgtypes.OIDInt8
	case model.TypeInt4:
		return pgtypes.OIDInt4
	case model.TypeInt2:
		return pgtypes.OIDInt2
	case model.TypeFloat8:
		return pgtypes.OIDFloat8
	case model.TypeFloat4:
		return pgtypes.OIDFloat4
	case model.TypeBool:
		return pgtypes.OIDBool
	case model.TypeTimestamptz:
		return pgtypes.OIDTimestamptz
	case model.TypeDate:
		return pgtypes.OIDDate
	case model.TypeUUID:
		return pgtypes.OIDUUID
	case model.TypeNumeric:
		return pgtypes.OIDNumeric
	case model.TypeJSONB:
		return pgtypes.OIDJSONB
	}
	return pgtypes.OIDBytea
}

// OID is the column's PostgreSQL type: its cell type's, or varchar.
func (c Column) OID() uint32 {
	if c.Varchar {
		return pgtypes.OIDVarchar
	}
	return TypeOID(c.Type)
}

// Typmod is the column's type modifier as pg_attribute keeps it: a
// VARCHAR(n)'s n, or a NUMERIC(p,s)'s p<<16 | s, plus PostgreSQL's 4-byte
// header; else -1.
func (c Column) Typmod() int64 {
	switch {
	case c.Varchar && c.Length > 0:
		return int64(c.Length) + 4
	case c.Type == model.TypeNumeric && c.Precision > 0:
		return (int64(c.Precision)<<16 | int64(c.Scale)) + 4
	}
	return -1
}

// TypeName is the column's type with its modifier, as PostgreSQL's
// format_type writes it: "character varying(64)", "numeric(10,2)".
func (c Column) TypeName() string {
	switch {
	case c.Varchar && c.Length > 0:
		return fmt.Sprintf("character varying(%d)", c.Length)
	case c.Varchar:
		return "character varying"
	case c.Type == model.TypeNumeric && c.Precision > 0:
		return fmt.Sprintf("numeric(%d,%d)", c.Precision, c.Scale)
	}
	return c.Type.String()
}

// Visible returns the columns SQL shows, in order: the key columns, the
// declared columns, and one JSONB column per open family (named after the
// family, with Family set and Qualifier empty) holding its undeclared
// qualifiers. SELECT * and the emulated catalog list these.
func (t *Table) Visible() []Column {
	out := append([]Column(nil), t.Columns...)
	for _, f := range t.Families {
		if f.Open {
			out = append(out, Column{Name: f.Name, Family: f.Name, Type: model.TypeJSONB})
		}
	}
	return out
}

// Column looks a column up by its SQL name.
func (t *Table) Column(name string) (Column, bool) {
	for _, c := range t.Columns {
		if c.Name == name {
			return c, true
		}
	}
	if fam, qual, ok := strings.Cut(name, ":"); ok && !t.Plain {
		for _, f := range t.Families {
			if f.Name == fam && qual != "" && f.Open {
				return Column{Name: name, Family: fam, Qualifier: qual, Type: f.DefaultType}, true
			}
		}
	}
	return Column{}, false
}

// Attach stores the definition in a storage schema.
func (t *Table) Attach(s *model.Schema) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if s.Meta == nil {
		s.Meta = map[string]string{}
	}
	s.Meta[metaKey] = string(b)
	return nil
}

// FromSchema returns how SQL sees a table with this storage schema.
func FromSchema(name string, s model.Schema) (*Table, error) {
	if js, ok := s.Meta[metaKey]; ok {
		t := &Table{Name: name}
		if err := json.Unmarshal([]byte(js), t); err != nil {
			return nil, fmt.Errorf("%w: the SQL definition of table %q: %v", model.ErrCorruption, name, err)
		}
		return t, nil
	}
	// A table of the native API: its key and every qualifier are bytes.
	t := &Table{Name: name, Columns: []Column{{Name: KeyColumn, Type: model.TypeBytea, Key: true, NotNull: true}}, native: true}
	for _, f := range s.Families {
		if f.Name != MarkerFamily {
			t.Families = append(t.Families, Family{Name: f.Name, DefaultType: model.TypeBytea, Open: true})
		}
	}
	return t, nil
}
