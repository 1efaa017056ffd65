package query

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/query/catalog"
	"github.com/cellardb/cellar/query/pgcatalog"
	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// How SQL rows map onto Bigtable rows (DESIGN.md section 4): the row key
// is the key column's value (TEXT/BYTEA) or the key columns in the
// order-preserving encoding; each other column is the newest cell of its
// family:qualifier; an open family's JSONB column gathers the newest cell
// of each undeclared qualifier; every row SQL writes also keeps the marker
// cell in family "_" so that it exists even when all its columns are NULL.

// toModel converts a SQL value (pgtypes' Go form) to model's.
func toModel(v any) any {
	switch x := v.(type) {
	case pgtypes.Numeric:
		return string(x)
	case time.Time:
		return x.UTC()
	}
	return v
}

// fromModel converts model's Go form of a value of type t to SQL's.
func fromModel(t model.ValueType, v any) any {
	if t == model.TypeNumeric {
		if s, ok := v.(string); ok {
			// A number ends in a digit or a point; anything else is a
			// special value, which the native API may spell "inf".
			if s != "" && (s[len(s)-1] < '0' || s[len(s)-1] > '9') && s[len(s)-1] != '.' {
				if n, err := pgtypes.ParseNumeric(s); err == nil {
					return n
				}
			}
			return pgtypes.Numeric(s)
		}
	}
	return v
}

// rowCodec reads and writes one table's rows.
type rowCodec struct {
	t       *catalog.Table
	cols    []catalog.Column // Visible()
	keyIdx  []int            // positions of the key columns in cols
	keyType []model.ValueType
	raw     bool
	// declared[family][qualifier]: a declared column's position.
	declared map[string]map[string]int
	// open[family]: its JSONB column's position.
	open map[string]int
	// visible is how many columns the table shows (SELECT *); the rest
	// are undeclared qualifiers of open families that a statement names,
	// which also stay in their family's JSONB column.
	visible int
}

func newRowCodec(t *catalog.Table, extra []catalog.Column) *rowCodec {
	c := &rowCodec{t: t, cols: append(t.Visible(), extra...), raw: t.RawKey(), declared: map[string]map[string]int{}, open: map[string]int{}}
	c.visible = len(c.cols) - len(extra)
	for i, col := range c.cols {
		switch {
		case col.Key:
			c.keyIdx = append(c.keyIdx, i)
			c.keyType = append(c.keyType, col.Type)
		case col.Qualifier == "":
			c.open[col.Family] = i
		default:
			if c.declared[col.Family] == nil {
				c.declared[col.Family] = map[string]int{}
			}
			c.declared[col.Family][col.Qualifier] = i
		}
	}
	return c
}

// columns are the table's columns for the evaluator, with the table OID
// and attnum pg_attribute gives the ones it shows (the undeclared
// qualifiers a statement names have none).
func (c *rowCodec) columns() []pgtypes.Column {
	out := make([]pgtypes.Column, len(c.cols))
	table := pgcatalog.TableOID(c.t.Name)
	for i, col := range c.cols {
		var o *pgtypes.Origin
		if i < c.visible {
			o = &pgtypes.Origin{Table: table, Attnum: int16(i + 1), Typmod: int32(col.Typmod())}
		}
		out[i] = pgtypes.Column{Name: col.Name, OID: col.OID(), Origin: o}
	}
	return out
}

// encodeKey makes the row key from the key columns' values (SQL form).
func (c *rowCodec) encodeKey(vals []any) ([]byte, error) {
	for i, v := range vals {
		if v == nil {
			return nil, notNullViolation(c.t.Name, c.cols[c.keyIdx[i]].Name)
		}
	}
	if c.raw {
		var key []byte
		switch x := vals[0].(type) {
		case string:
			key = []byte(x)
		case []byte:
			key = x
		}
		if err := model.ValidateRowKey(key); err != nil {
			return nil, sqlstate.Errorf(sqlstate.CodeProgramLimitExceeded, "%v", err)
		}
		return key, nil
	}
	var key []byte
	for i, v := range vals {
		var err error
		if key, err = model.AppendKeyValue(key, c.keyType[i], toModel(v)); err != nil {
			return nil, sqlstate.Errorf(sqlstate.CodeInvalidParameterValue, "%v", err)
		}
	}
	if err := model.ValidateRowKey(key); err != nil {
		return nil, sqlstate.Errorf(sqlstate.CodeProgramLimitExceeded, "%v", err)
	}
	return key, nil
}

// rawKeyValue is the value of a raw key column: the row key itself.
func (c *rowCodec) rawKeyValue(key []byte) (any, error) {
	if c.keyType[0] == model.TypeText {
		if !utf8.Valid(key) {
			return nil, sqlstate.Errorf(codeCharacterNotInRepertoire, "table %q: row key %q is not valid UTF-8 text", c.t.Name, key)
		}
		return string(key), nil
	}
	return bytes.Clone(key), nil
}

// decodeKey reads the key columns' values from a row key.
func (c *rowCodec) decodeKey(key []byte) ([]any, error) {
	if c.raw {
		v, err := c.rawKeyValue(key)
		if err != nil {
			return nil, err
		}
		return []any{v}, nil
	}
	vals, err := model.DecodeKeyValues(key, c.keyType)
	if err != nil {
		return nil, sqlstate.Errorf(codeInvalidBinaryRepresentation, "table %q: %v", c.t.Name, err)
	}
	for i := range vals {
		vals[i] = fromModel(c.keyType[i], vals[i])
	}
	return vals, nil
}

const (
	codeCharacterNotInRepertoire    = "22021"
	codeInvalidBinaryRepresentation = "22P03"
)

// decode turns a row (cells in internal key order, newest first) into
// SQL values; need, if not nil, says which columns are wanted.
func (c *rowCodec) decode(r model.Row, need []bool) ([]any, error) {
	out := make([]any, len(c.cols))
	switch {
	case c.raw && len(c.keyIdx) == 1:
		// One raw key column: no slice of key values to make.
		v, err := c.rawKeyValue(r.Key)
		if err != nil {
			return nil, err
		}
		out[c.keyIdx[0]] = v
	case len(c.keyIdx) > 0:
		kv, err := c.decodeKey(r.Key)
		if err != nil {
			return nil, err
		}
		for i, idx := range c.keyIdx {
			out[idx] = kv[i]
		}
	}
	type member struct {
		q string
		v json.RawMessage
	}
	var members map[int][]member
	for i := 0; i < len(r.Cells); i++ {
		cell := r.Cells[i]
		if i > 0 && r.Cells[i-1].Family == cell.Family && bytes.Equal(r.Cells[i-1].Qualifier, cell.Qualifier) {
			continue // an older version
		}
		if idx, ok := c.declared[cell.Family][string(cell.Qualifier)]; ok {
			if need == nil || need[idx] {
				v, err := model.DecodeValue(c.cols[idx].Type, cell.Value)
				if err != nil {
					return nil, sqlstate.Errorf(codeInvalidBinaryRepresentation, "table %q, row %q, column %q: %v", c.t.Name, r.Key, c.cols[idx].Name, err)
				}
				out[idx] = fromModel(c.cols[idx].Type, v)
			}
			if idx < c.visible {
				continue
			}
		}
		idx, ok := c.open[cell.Family]
		if !ok || (need != nil && !need[idx]) {
			continue
		}
		js, err := c.jsonMember(cell)
		if err != nil {
			return nil, err
		}
		if members == nil {
			members = map[int][]member{}
		}
		members[idx] = append(members[idx], member{jsonKey(cell.Qualifier), js})
	}
	for idx, ms := range members {
		// jsonb's key order: shorter keys first, then bytewise.
		sort.Slice(ms, func(i, j int) bool {
			if len(ms[i].q) != len(ms[j].q) {
				return len(ms[i].q) < len(ms[j].q)
			}
			return ms[i].q < ms[j].q
		})
		var b bytes.Buffer
		b.WriteByte('{')
		for i, m := range ms {
			if i > 0 {
				b.WriteString(", ")
			}
			b.Write(jsonString(m.q))
			b.WriteString(": ")
			b.Write(m.v)
		}
		b.WriteByte('}')
		out[idx] = b.String()
	}
	return out, nil
}

// jsonString writes s as a JSON string the way jsonb prints it: PG's
// escape_json, which escapes neither <, > and & nor U+2028 and U+2029.
func jsonString(s string) []byte {
	return []byte(pgtypes.JSONQuote(s))
}

// jsonKey is a qualifier as a JSON object key: itself if UTF-8, else \x
// and its hex (DESIGN.md section 5).
func jsonKey(q []byte) string {
	if utf8.Valid(q) {
		return string(q)
	}
	return `\x` + hex.EncodeToString(q)
}

// jsonMember renders an undeclared qualifier's value, typed by its
// family's default type, as JSON.
func (c *rowCodec) jsonMember(cell model.Cell) (json.RawMessage, error) {
	var typ model.ValueType
	for _, f := range c.t.Families {
		if f.Name == cell.Family {
			typ = f.DefaultType
		}
	}
	v, err := model.DecodeValue(typ, cell.Value)
	if err != nil {
		// Written as another type (through the native API, say): show
		// the bytes.
		return jsonString(`\x` + hex.EncodeToString(cell.Value)), nil
	}
	switch x := v.(type) {
	case string:
		if typ == model.TypeJSONB && json.Valid([]byte(x)) {
			return json.RawMessage(x), nil
		}
		if typ == model.TypeNumeric {
			if n := fromModel(typ, x).(pgtypes.Numeric); n.IsSpecial() {
				return jsonString(string(n)), nil // not a JSON number, as to_jsonb writes it
			}
			return json.RawMessage(x), nil
		}
		return jsonString(x), nil
	case []byte:
		if utf8.Valid(x) {
			return jsonString(string(x)), nil
		}
		return jsonString(`\x` + hex.EncodeToString(x)), nil
	case int64:
		return json.RawMessage(strconv.FormatInt(x, 10)), nil
	case float64:
		return json.RawMessage(pgtypes.FormatText(pgtypes.OIDFloat8, x)), nil
	case bool:
		return json.Marshal(x)
	}
	return jsonString(pgtypes.FormatText(catalog.TypeOID(typ), fromModel(typ, v))), nil
}

// cellValue encodes a SQL value for column col.
func (c *rowCodec) cellValue(col catalog.Column, v any) ([]byte, error) {
	b, err := model.EncodeValue(col.Type, toModel(v))
	if err != nil {
		return nil, sqlstate.Errorf(sqlstate.CodeNumericOutOfRange, "column %q: %v", col.Name, err)
	}
	return b, nil
}

// markerCell is the cell every row SQL writes carries.
func markerCell(ts int64) model.Mutation {
	return model.SetCell(catalog.MarkerFamily, nil, ts, nil)
}
