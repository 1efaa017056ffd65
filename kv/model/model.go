package model

import (
	"bytes"
	"fmt"
	"math"
)

const (
	// MaxRowKeyLen is the longest row key a table accepts.
	MaxRowKeyLen = 64 << 10
	// MaxFamilyLen bounds a family name.
	MaxFamilyLen = 64
	// MaxQualifierLen bounds a column qualifier.
	MaxQualifierLen = 16 << 10
	// MaxValueLen bounds one cell value (Cloud Bigtable allows 100 MiB).
	MaxValueLen = 100 << 20
	// MaxMutationBytes bounds the encoded size of one row mutation.
	MaxMutationBytes = 256 << 20

	// ServerTimestamp asks the tablet to assign the timestamp of a SetCell.
	ServerTimestamp int64 = -1
	// MaxTimestamp is the largest timestamp a cell may carry. MaxInt64 itself
	// is reserved for family and row deletion markers.
	MaxTimestamp int64 = math.MaxInt64 - 1
)

// Column names a column as family:qualifier.
type Column struct {
	Family    string
	Qualifier []byte
}

func (c Column) String() string { return c.Family + ":" + string(c.Qualifier) }

// Cell is one version of one column of a row.
type Cell struct {
	Family    string
	Qualifier []byte
	Timestamp int64
	Value     []byte
}

// Expect is a condition on the newest version of one column of a row: it
// holds Value, or, if Absent, the column has no cell. A check-and-mutate
// with expects is a compare-and-swap on several columns.
type Expect struct {
	Family    string
	Qualifier []byte
	Value     []byte
	Absent    bool
}

// ExpectsHold reports whether every expect holds for a row's cells (in
// internal key order, so a column's first cell is its newest).
func ExpectsHold(cells []Cell, ex []Expect) bool {
	for _, e := range ex {
		v, found := NewestValue(cells, e.Family, e.Qualifier)
		if e.Absent == found || (found && !bytes.Equal(v, e.Value)) {
			return false
		}
	}
	return true
}

// Row is a row key with its cells, in internal key order: family, then
// qualifier, then timestamp descending.
type Row struct {
	Key   []byte
	Cells []Cell
	// Labels, if not nil, holds each cell's labels, parallel to Cells:
	// what a Bigtable row filter's apply_label_transformer attached.
	Labels [][]string
}

// TimeRange is the half-open interval [Start, End) of microsecond
// timestamps. End == 0 means unbounded.
type TimeRange struct {
	Start int64
	End   int64
}

// Contains reports whether ts lies in the range.
func (r TimeRange) Contains(ts int64) bool {
	return ts >= r.Start && (r.End == 0 || ts < r.End)
}

// Validate checks that the range is well formed.
func (r TimeRange) Validate() error {
	if r.Start < 0 || r.End < 0 {
		return fmt.Errorf("%w: negative timestamp in range [%d, %d)", ErrInvalidArgument, r.Start, r.End)
	}
	if r.End != 0 && r.End <= r.Start {
		return fmt.Errorf("%w: empty time range [%d, %d)", ErrInvalidArgument, r.Start, r.End)
	}
	return nil
}

// RowRange is the half-open interval [Start, End) of row keys. An empty End
// means "to the end of the table".
type RowRange struct {
	Start []byte
	End   []byte
}

// Contains reports whether row lies in the range.
func (r RowRange) Contains(row []byte) bool {
	return bytes.Compare(row, r.Start) >= 0 && (len(r.End) == 0 || bytes.Compare(row, r.End) < 0)
}

// Intersect returns the overlap of two ranges and whether it is non-empty.
func (r RowRange) Intersect(o RowRange) (RowRange, bool) {
	out := r
	if bytes.Compare(o.Start, out.Start) > 0 {
		out.Start = o.Start
	}
	if len(o.End) > 0 && (len(out.End) == 0 || bytes.Compare(o.End, out.End) < 0) {
		out.End = o.End
	}
	if len(out.End) > 0 && bytes.Compare(out.Start, out.End) >= 0 {
		return RowRange{}, false
	}
	return out, true
}

func (r RowRange) String() string {
	end := fmt.Sprintf("%q", r.End)
	if len(r.End) == 0 {
		end = "+inf"
	}
	return fmt.Sprintf("[%q, %s)", r.Start, end)
}

// MutationKind says what a Mutation does. The values double as the kind
// byte of internal keys.
type MutationKind uint8

const (
	// KindSetCell writes one cell.
	KindSetCell MutationKind = 1
	// KindDeleteColumn deletes the versions of one column in a time range.
	KindDeleteColumn MutationKind = 2
	// KindDeleteFamily deletes every cell of a family in the row.
	KindDeleteFamily MutationKind = 3
	// KindDeleteRow deletes every cell of the row.
	KindDeleteRow MutationKind = 4
)

func (k MutationKind) String() string {
	switch k {
	case KindSetCell:
		return "set"
	case KindDeleteColumn:
		return "delete-column"
	case KindDeleteFamily:
		return "delete-family"
	case KindDeleteRow:
		return "delete-row"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Mutation is one change to a row.
type Mutation struct {
	Kind      MutationKind
	Family    string
	Qualifier []byte
	// Timestamp of a SetCell, in µs, or ServerTimestamp.
	Timestamp int64
	Value     []byte
	// Range of a DeleteColumn.
	Range TimeRange
}

// SetCell returns a mutation that writes one cell.
func SetCell(family string, qualifier []byte, ts int64, value []byte) Mutation {
	return Mutation{Kind: KindSetCell, Family: family, Qualifier: qualifier, Timestamp: ts, Value: value}
}

// DeleteColumn returns a mutation that deletes the versions of a column
// whose timestamps lie in r.
func DeleteColumn(family string, qualifier []byte, r TimeRange) Mutation {
	return Mutation{Kind: KindDeleteColumn, Family: family, Qualifier: qualifier, Range: r}
}

// DeleteFamily returns a mutation that deletes a family from the row.
func DeleteFamily(family string) Mutation {
	return Mutation{Kind: KindDeleteFamily, Family: family}
}

// DeleteRow returns a mutation that deletes the whole row.
func DeleteRow() Mutation { return Mutation{Kind: KindDeleteRow} }

// RowMutation is a list of mutations applied to one row atomically and in
// order.
type RowMutation struct {
	Row       []byte
	Mutations []Mutation
}

// EncodedSize estimates the bytes the mutation occupies in the log and the
// memtable.
func (m *RowMutation) EncodedSize() int {
	n := len(m.Row) + 8
	for i := range m.Mutations {
		mu := &m.Mutations[i]
		n += len(mu.Family) + len(mu.Qualifier) + len(mu.Value) + 24
	}
	return n
}

// ValidateRowKey checks a row key's length.
func ValidateRowKey(row []byte) error {
	if len(row) > MaxRowKeyLen {
		return fmt.Errorf("%w: row key of %d bytes exceeds %d", ErrInvalidArgument, len(row), MaxRowKeyLen)
	}
	return nil
}

// ValidateFamilyName checks that a family name is non-empty, short and
// printable ASCII without a colon.
func ValidateFamilyName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty family name", ErrInvalidArgument)
	}
	if len(name) > MaxFamilyLen {
		return fmt.Errorf("%w: family name %q longer than %d bytes", ErrInvalidArgument, name, MaxFamilyLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c > '~' || c == ':' {
			return fmt.Errorf("%w: family name %q has byte 0x%02x; use printable ASCII without ':'", ErrInvalidArgument, name, c)
		}
	}
	return nil
}

// Validate checks the mutation's shape, independent of any schema. A
// SetCell may carry ServerTimestamp.
func (m *RowMutation) Validate() error {
	if err := ValidateRowKey(m.Row); err != nil {
		return err
	}
	if len(m.Mutations) == 0 {
		return fmt.Errorf("%w: row mutation without mutations", ErrInvalidArgument)
	}
	if n := m.EncodedSize(); n > MaxMutationBytes {
		return fmt.Errorf("%w: row mutation of %d bytes exceeds %d", ErrInvalidArgument, n, MaxMutationBytes)
	}
	for i := range m.Mutations {
		mu := &m.Mutations[i]
		if mu.Kind != KindDeleteRow {
			if err := ValidateFamilyName(mu.Family); err != nil {
				return fmt.Errorf("mutation %d: %w", i, err)
			}
		}
		switch mu.Kind {
		case KindSetCell:
			if mu.Timestamp != ServerTimestamp && (mu.Timestamp < 0 || mu.Timestamp > MaxTimestamp) {
				return fmt.Errorf("%w: mutation %d: timestamp %d out of range", ErrInvalidArgument, i, mu.Timestamp)
			}
			if len(mu.Value) > MaxValueLen {
				return fmt.Errorf("%w: mutation %d: value of %d bytes exceeds %d", ErrInvalidArgument, i, len(mu.Value), MaxValueLen)
			}
			if len(mu.Qualifier) > MaxQualifierLen {
				return fmt.Errorf("%w: mutation %d: qualifier of %d bytes exceeds %d", ErrInvalidArgument, i, len(mu.Qualifier), MaxQualifierLen)
			}
		case KindDeleteColumn:
			if err := mu.Range.Validate(); err != nil {
				return fmt.Errorf("mutation %d: %w", i, err)
			}
			if len(mu.Qualifier) > MaxQualifierLen {
				return fmt.Errorf("%w: mutation %d: qualifier of %d bytes exceeds %d", ErrInvalidArgument, i, len(mu.Qualifier), MaxQualifierLen)
			}
		case KindDeleteFamily, KindDeleteRow:
		default:
			return fmt.Errorf("%w: mutation %d: unknown kind %d", ErrInvalidArgument, i, mu.Kind)
		}
	}
	return nil
}
