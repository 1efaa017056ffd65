package model

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func enc(t *testing.T, ty ValueType, v any) []byte {
	t.Helper()
	b, err := EncodeValue(ty, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestConditionHolds(t *testing.T) {
	day := func(y, m, d int) time.Time { return time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC) }
	row := func(ty ValueType, v any) []Cell {
		// The newest version first, then an older one that must not count.
		return []Cell{
			{Family: "a", Qualifier: []byte("x"), Timestamp: 1, Value: []byte("other column")},
			{Family: "f", Qualifier: []byte("c"), Timestamp: 9, Value: enc(t, ty, v)},
			{Family: "f", Qualifier: []byte("c"), Timestamp: 5, Value: []byte("stale")},
		}
	}
	nan := math.NaN()
	for _, c := range []struct {
		ty      ValueType
		cell    any // the column's value; nil: no cell
		op      CondOp
		operand any
		want    bool
	}{
		{TypeInt8, int64(5), CondEQ, int64(5), true},
		{TypeInt8, int64(5), CondNE, int64(5), false},
		{TypeInt8, int64(-5), CondLT, int64(3), true}, // numerically, not bytewise
		{TypeInt8, int64(math.MinInt64), CondLE, int64(math.MaxInt64), true},
		{TypeInt4, int64(7), CondGT, int64(6), true},
		{TypeInt2, int64(7), CondGE, int64(8), false},
		{TypeFloat8, -1.5, CondLT, 0.0, true},
		{TypeFloat8, math.Copysign(0, -1), CondEQ, 0.0, true}, // -0 = +0
		{TypeFloat8, nan, CondEQ, nan, true},                  // NaN = NaN
		{TypeFloat8, nan, CondGT, math.Inf(1), true},          // NaN is greatest
		{TypeFloat8, math.Inf(1), CondLT, nan, true},
		{TypeFloat4, 0.5, CondGT, 0.25, true},
		{TypeText, "abc", CondLT, "abd", true},
		{TypeText, "B", CondLT, "a", true}, // C collation
		{TypeText, "", CondEQ, "", true},
		{TypeText, "hello", CondPrefix, "he", true},
		{TypeText, "hello", CondPrefix, "lo", false},
		{TypeBytea, []byte{0xff}, CondGT, []byte{0x00, 0xff}, true},
		{TypeBytea, []byte{1, 2, 3}, CondPrefix, []byte{1, 2}, true},
		{TypeBool, false, CondLT, true, true},
		{TypeBool, true, CondEQ, true, true},
		{TypeTimestamptz, time.UnixMicro(-10).UTC(), CondLT, time.UnixMicro(10).UTC(), true},
		{TypeDate, day(1969, 12, 31), CondLT, day(1970, 1, 1), true},
		{TypeDate, day(2026, 11, 22), CondEQ, day(2026, 11, 22), true},
		{TypeUUID, [16]byte{1}, CondLT, [16]byte{2}, true},
		{TypeNumeric, "1.0", CondEQ, "1.00", true},
		{TypeNumeric, "9", CondLT, "10", true}, // by value, not as text
		{TypeNumeric, "-0.5", CondLT, "0", true},
		{TypeNumeric, "1e3", CondEQ, "1000", true},
		{TypeNumeric, "NaN", CondGT, "99999999999999999999", true},
		{TypeNumeric, "NaN", CondEQ, "NaN", true},
		{TypeNumeric, "0.1", CondGT, "0.09999999999999999999999", true},
		{TypeNumeric, "Infinity", CondGT, "5", true}, // -Infinity < numbers < Infinity < NaN
		{TypeNumeric, "Infinity", CondLT, "NaN", true},
		{TypeNumeric, "-Infinity", CondLT, "-1e100", true},
		{TypeNumeric, "-Infinity", CondGT, "5", false},
		{TypeNumeric, "Infinity", CondEQ, "Infinity", true},
		{TypeNumeric, "5", CondLT, "Infinity", true},
		{TypeJSONB, `{}`, CondIsNotNull, nil, true},
		// NULL: only IS NULL holds.
		{TypeInt8, nil, CondEQ, int64(0), false},
		{TypeInt8, nil, CondNE, int64(0), false},
		{TypeInt8, nil, CondLT, int64(0), false},
		{TypeText, nil, CondPrefix, "", false},
		{TypeInt8, nil, CondIsNull, nil, true},
		{TypeInt8, nil, CondIsNotNull, nil, false},
		{TypeInt8, int64(0), CondIsNull, nil, false},
		{TypeInt8, int64(0), CondIsNotNull, nil, true},
	} {
		var cells []Cell
		if c.cell != nil {
			cells = row(c.ty, c.cell)
		} else {
			cells = []Cell{{Family: "f", Qualifier: []byte("other"), Value: []byte("v")}}
		}
		cond := Condition{Family: "f", Qualifier: []byte("c"), Type: c.ty, Op: c.op}
		if c.operand != nil {
			if c.op == CondPrefix {
				if s, ok := c.operand.(string); ok {
					cond.Operand = []byte(s)
				} else {
					cond.Operand = c.operand.([]byte)
				}
			} else {
				cond.Operand = enc(t, c.ty, c.operand)
			}
		}
		if err := cond.Validate(); err != nil {
			t.Fatalf("%v: %v", cond, err)
		}
		if got := cond.Holds(cells); got != c.want {
			t.Errorf("%s %v %s %v: got %v, want %v", c.ty, c.cell, c.op, c.operand, got, c.want)
		}
		cs, err := CompileConditions([]Condition{cond})
		if err != nil || cs.Holds(cells) != c.want {
			t.Errorf("compiled %s %v %s %v: got %v (%v), want %v", c.ty, c.cell, c.op, c.operand, cs.Holds(cells), err, c.want)
		}
	}
}

func TestConditionWrongSizeCellFails(t *testing.T) {
	cells := []Cell{{Family: "f", Qualifier: []byte("c"), Value: []byte{1, 2, 3}}}
	for _, op := range []CondOp{CondEQ, CondNE, CondLT, CondLE, CondGT, CondGE} {
		c := Condition{Family: "f", Qualifier: []byte("c"), Type: TypeInt8, Op: op, Operand: enc(t, TypeInt8, int64(1))}
		if c.Holds(cells) {
			t.Errorf("%s holds for a 3-byte bigint cell", op)
		}
	}
	if !(Condition{Family: "f", Qualifier: []byte("c"), Type: TypeInt8, Op: CondIsNotNull}).Holds(cells) {
		t.Error("a cell of the wrong size is NULL")
	}
	bad := []Cell{{Family: "f", Qualifier: []byte("c"), Value: []byte("1.2.3")}}
	if (Condition{Family: "f", Qualifier: []byte("c"), Type: TypeNumeric, Op: CondNE, Operand: []byte("0")}).Holds(bad) {
		t.Error("a numeric that does not parse compared")
	}
}

func TestConditionsAreANDed(t *testing.T) {
	cells := []Cell{
		{Family: "f", Qualifier: []byte("a"), Value: enc(t, TypeInt8, int64(10))},
		{Family: "f", Qualifier: []byte("b"), Value: []byte("x")},
	}
	ge := Condition{Family: "f", Qualifier: []byte("a"), Type: TypeInt8, Op: CondGE, Operand: enc(t, TypeInt8, int64(10))}
	eq := Condition{Family: "f", Qualifier: []byte("b"), Type: TypeText, Op: CondEQ, Operand: []byte("x")}
	ne := Condition{Family: "f", Qualifier: []byte("b"), Type: TypeText, Op: CondNE, Operand: []byte("x")}
	yes, _ := CompileConditions([]Condition{ge, eq})
	no, _ := CompileConditions([]Condition{ge, ne})
	if !yes.Holds(cells) || no.Holds(cells) {
		t.Fatal("conditions are not ANDed")
	}
	if fs := yes.Families(); len(fs) != 1 || fs[0] != "f" {
		t.Fatalf("families %v", fs)
	}
	var none *Conditions
	if !none.Holds(cells) {
		t.Fatal("no conditions must hold")
	}
}

func TestConditionValidate(t *testing.T) {
	for _, c := range []Condition{
		{Family: "", Qualifier: []byte("c"), Type: TypeInt8, Op: CondIsNull},
		{Family: "f", Type: TypeInt8, Op: CondOp(99)},
		{Family: "f", Type: ValueType(99), Op: CondIsNull},
		{Family: "f", Type: TypeInt8, Op: CondEQ, Operand: []byte{1}},
		{Family: "f", Type: TypeNumeric, Op: CondEQ, Operand: []byte("abc")},
		{Family: "f", Type: TypeNumeric, Op: CondEQ, Operand: []byte("1e999999999")},
		{Family: "f", Type: TypeJSONB, Op: CondEQ, Operand: []byte("{}")},
		{Family: "f", Type: TypeInt8, Op: CondPrefix, Operand: []byte("1")},
	} {
		err := c.Validate()
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%v: %v", c, err)
		}
		if c.Holds(nil) {
			t.Errorf("invalid %v holds", c)
		}
	}
	if _, err := CompileConditions([]Condition{{Family: "f", Type: TypeInt8, Op: CondIsNull}, {Family: "f", Op: CondOp(42)}}); err == nil || !strings.Contains(err.Error(), "condition 1") {
		t.Fatalf("CompileConditions: %v", err)
	}
}

func TestEqualityKey(t *testing.T) {
	same := func(ty ValueType, a, b []byte) bool {
		ka, err1 := EqualityKey(ty, a)
		kb, err2 := EqualityKey(ty, b)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		return ka == kb
	}
	if !same(TypeFloat8, enc(t, TypeFloat8, math.Copysign(0, -1)), enc(t, TypeFloat8, 0.0)) {
		t.Error("-0 and +0 group apart")
	}
	if !same(TypeFloat8, enc(t, TypeFloat8, math.NaN()), []byte{0xff, 0xf8, 0, 0, 0, 0, 0, 1}) {
		t.Error("NaNs group apart")
	}
	if !same(TypeNumeric, []byte("1.0"), []byte("1.00")) || same(TypeNumeric, []byte("1"), []byte("1.1")) {
		t.Error("numeric grouping")
	}
	if !same(TypeBool, []byte{1}, []byte{2}) {
		t.Error("true values group apart")
	}
	if same(TypeText, []byte("a"), []byte("A")) {
		t.Error("text grouping")
	}
	if _, err := EqualityKey(TypeInt8, []byte{1}); err == nil {
		t.Error("a 1-byte bigint got a key")
	}
}

func TestSum(t *testing.T) {
	add := func(s *Sum, vals ...any) {
		t.Helper()
		for _, v := range vals {
			b := string(enc(t, s.Type, v))
			if err := s.Add([]byte(b)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Integers: exact past int64.
	s := &Sum{Type: TypeInt8}
	add(s, int64(math.MaxInt64), int64(math.MaxInt64), int64(3), int64(math.MinInt64))
	if got := s.Text(); got != "9223372036854775809" || s.N != 4 {
		t.Fatalf("int sum %s (%d)", got, s.N)
	}
	neg := &Sum{Type: TypeInt8}
	add(neg, int64(math.MinInt64), int64(math.MinInt64), int64(-1))
	if got := neg.Text(); got != "-18446744073709551617" {
		t.Fatalf("negative int sum %s", got)
	}
	// Merging partials.
	m := &Sum{Type: TypeInt8}
	if err := m.AddText(s.Text(), s.N); err != nil {
		t.Fatal(err)
	}
	if err := m.AddText(neg.Text(), neg.N); err != nil {
		t.Fatal(err)
	}
	if got := m.Text(); got != "-9223372036854775808" || m.N != 7 {
		t.Fatalf("merged %s (%d)", got, m.N)
	}
	// Numeric: exact, with the largest scale.
	n := &Sum{Type: TypeNumeric}
	add(n, "0.1", "0.20", "1e2")
	if got := n.Text(); got != "100.30" {
		t.Fatalf("numeric sum %s", got)
	}
	n2 := &Sum{Type: TypeNumeric}
	if err := n2.AddText(n.Text(), n.N); err != nil {
		t.Fatal(err)
	}
	if err := n2.AddText("-0.305", 2); err != nil {
		t.Fatal(err)
	}
	if got := n2.Text(); got != "99.995" || n2.N != 5 {
		t.Fatalf("merged numeric %s %d", got, n2.N)
	}
	add(n2, "NaN", "1")
	if got := n2.Text(); got != "NaN" {
		t.Fatalf("numeric NaN sum %s", got)
	}
	inf := &Sum{Type: TypeNumeric}
	add(inf, "1", "Infinity", "2")
	if got := inf.Text(); got != "Infinity" {
		t.Fatalf("numeric inf %s", got)
	}
	add(inf, "-Infinity")
	if got := inf.Text(); got != "NaN" {
		t.Fatalf("numeric inf - inf %s", got)
	}
	// Partial sums of infinities from two tablets meet as numeric_sum's
	// combine does.
	for _, c := range []struct{ a, b, want string }{
		{"Infinity", "Infinity", "Infinity"}, {"Infinity", "-Infinity", "NaN"}, {"-Infinity", "12.5", "-Infinity"},
		{"1.25", "Infinity", "Infinity"}, {"NaN", "-Infinity", "NaN"},
	} {
		m := &Sum{Type: TypeNumeric}
		if err := m.AddText(c.a, 2); err != nil {
			t.Fatal(err)
		}
		if err := m.AddText(c.b, 3); err != nil {
			t.Fatal(err)
		}
		if got := m.Text(); got != c.want || m.N != 5 {
			t.Errorf("%s + %s: %s (%d), want %s", c.a, c.b, got, m.N, c.want)
		}
	}
	// Floats.
	f := &Sum{Type: TypeFloat8}
	add(f, 0.5, 0.25)
	if got := f.Text(); got != "0.75" {
		t.Fatalf("float sum %s", got)
	}
	f4 := &Sum{Type: TypeFloat4}
	add(f4, 1.5)
	if err := f4.AddText("+Inf", 3); err != nil || f4.Text() != "+Inf" || f4.N != 4 {
		t.Fatalf("float4 sum %s %v", f4.Text(), err)
	}
	// Not summable, or not decodable.
	if err := (&Sum{Type: TypeText}).Add([]byte("1")); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("text sum: %v", err)
	}
	if err := (&Sum{Type: TypeInt8}).Add([]byte{1}); !errors.Is(err, ErrFailedPrecondition) {
		t.Fatalf("bad cell: %v", err)
	}
}

func TestExtreme(t *testing.T) {
	for _, c := range []struct {
		ty       ValueType
		vals     []any
		min, max any
	}{
		{TypeInt8, []any{int64(3), int64(-7), int64(12)}, int64(-7), int64(12)},
		{TypeFloat8, []any{1.0, math.NaN(), -2.0}, -2.0, math.NaN()},
		{TypeText, []any{"b", "", "ab"}, "", "b"},
		{TypeNumeric, []any{"10", "9.5", "-1"}, "-1", "10"},
		{TypeNumeric, []any{"10", "Infinity", "-Infinity", "-1e100"}, "-Infinity", "Infinity"},
		{TypeNumeric, []any{"NaN", "Infinity", "-5"}, "-5", "NaN"},
		{TypeBool, []any{true, false}, false, true},
	} {
		lo, hi := &Extreme{Type: c.ty}, &Extreme{Type: c.ty, Max: true}
		for _, v := range c.vals {
			b := enc(t, c.ty, v)
			if err := lo.Add(b); err != nil {
				t.Fatal(err)
			}
			if err := hi.Add(b); err != nil {
				t.Fatal(err)
			}
		}
		if cmp, err := CompareValues(c.ty, lo.Value(), enc(t, c.ty, c.min)); err != nil || cmp != 0 || lo.Value() == nil {
			t.Errorf("%s min: %q (%v)", c.ty, lo.Value(), err)
		}
		if cmp, err := CompareValues(c.ty, hi.Value(), enc(t, c.ty, c.max)); err != nil || cmp != 0 {
			t.Errorf("%s max: %q (%v)", c.ty, hi.Value(), err)
		}
		if lo.N != int64(len(c.vals)) {
			t.Errorf("%s: N %d", c.ty, lo.N)
		}
	}
	// Equal values: the first stays.
	e := &Extreme{Type: TypeNumeric}
	e.Add([]byte("1.0"))
	e.Add([]byte("1.00"))
	if string(e.Value()) != "1.0" {
		t.Fatalf("kept %q", e.Value())
	}
	if err := (&Extreme{Type: TypeJSONB}).Add([]byte("{}")); err == nil {
		t.Fatal("jsonb max")
	}
}
