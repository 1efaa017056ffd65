package model

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Typed conditions and aggregates over cell values, for the read filter's
// conditions (SQL's WHERE pushed down to the tablet servers) and for
// server-side partial aggregation. Values compare in PostgreSQL's order:
//
//	integers, timestamptz, date   numerically
//	floats                        numerically, -0 = +0, NaN equal to
//	                              itself and greater than every number
//	numeric                       by exact decimal value (math/big),
//	                              -Infinity < numbers < Infinity < NaN
//	text, bytea, uuid             bytewise (text: C collation)
//	boolean                       false < true
//
// jsonb values have no order here: a condition on a jsonb column may only
// test for NULL, and jsonb columns take no SUM, MIN or MAX.

// CondOp is a condition's comparison.
type CondOp uint8

const (
	CondEQ CondOp = iota
	CondNE
	CondLT
	CondLE
	CondGT
	CondGE
	// CondPrefix: a TEXT or BYTEA value starts with the operand's bytes.
	CondPrefix
	// CondIsNull: the row has no cell in the column.
	CondIsNull
	// CondIsNotNull: the row has a cell in the column.
	CondIsNotNull
)

var condOpNames = [...]string{"=", "<>", "<", "<=", ">", ">=", "prefix", "is null", "is not null"}

func (o CondOp) String() string {
	if int(o) < len(condOpNames) {
		return condOpNames[o]
	}
	return fmt.Sprintf("op(%d)", o)
}

// Condition keeps a row only if the newest version of one column, decoded
// as Type, compares with Operand (encoded by EncodeValue as the same type)
// by Op. A row without the column fails every op but CondIsNull (SQL's
// NULL semantics). A cell that does not decode as Type (written as
// another type) fails every op but CondIsNotNull. For CondPrefix the
// operand is the raw prefix of a TEXT or BYTEA value; CondIsNull and
// CondIsNotNull ignore it.
type Condition struct {
	Family    string
	Qualifier []byte
	Type      ValueType
	Op        CondOp
	Operand   []byte
}

func (c Condition) String() string {
	return fmt.Sprintf("%s:%s %s %q (%s)", c.Family, c.Qualifier, c.Op, c.Operand, c.Type)
}

// Validate checks the condition: a known op and type, an op the type
// supports, and an operand that decodes as the type.
func (c Condition) Validate() error {
	_, err := compileCondition(c)
	return err
}

// Holds reports whether the condition holds for a row's cells (in
// internal key order: a column's first cell is its newest). An invalid
// condition holds for no row.
func (c Condition) Holds(cells []Cell) bool {
	cc, err := compileCondition(c)
	return err == nil && cc.holds(cells)
}

// Conditions is a validated list of conditions with their operands
// decoded once, for evaluating them on many rows. All must hold.
type Conditions struct {
	conds []compiledCond
}

// CompileConditions validates conditions for evaluation.
func CompileConditions(cs []Condition) (*Conditions, error) {
	out := &Conditions{conds: make([]compiledCond, len(cs))}
	for i, c := range cs {
		cc, err := compileCondition(c)
		if err != nil {
			return nil, fmt.Errorf("condition %d: %w", i, err)
		}
		out.conds[i] = cc
	}
	return out, nil
}

// Holds reports whether every condition holds for a row's cells. A nil
// *Conditions holds for every row.
func (cs *Conditions) Holds(cells []Cell) bool {
	if cs == nil {
		return true
	}
	for i := range cs.conds {
		if !cs.conds[i].holds(cells) {
			return false
		}
	}
	return true
}

// Families lists the families the conditions read, once each.
func (cs *Conditions) Families() []string {
	if cs == nil {
		return nil
	}
	var out []string
	for _, c := range cs.conds {
		if !containsString(out, c.Family) {
			out = append(out, c.Family)
		}
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

type compiledCond struct {
	Condition
	operand ordValue
}

func compileCondition(c Condition) (compiledCond, error) {
	out := compiledCond{Condition: c}
	if err := ValidateFamilyName(c.Family); err != nil {
		return out, err
	}
	if c.Type > TypeJSONB {
		return out, fmt.Errorf("%w: unknown type %d", ErrInvalidArgument, c.Type)
	}
	switch c.Op {
	case CondIsNull, CondIsNotNull:
		return out, nil
	case CondPrefix:
		if c.Type != TypeText && c.Type != TypeBytea {
			return out, fmt.Errorf("%w: a prefix condition needs a text or bytea column, not %s", ErrInvalidArgument, c.Type)
		}
		return out, nil
	case CondEQ, CondNE, CondLT, CondLE, CondGT, CondGE:
	default:
		return out, fmt.Errorf("%w: unknown condition op %d", ErrInvalidArgument, c.Op)
	}
	if !Orderable(c.Type) {
		return out, fmt.Errorf("%w: %s values cannot be compared (only IS NULL and IS NOT NULL)", ErrInvalidArgument, c.Type)
	}
	v, err := decodeOrd(c.Type, c.Operand)
	if err != nil {
		return out, fmt.Errorf("%w: condition operand: %v", ErrInvalidArgument, err)
	}
	out.operand = v
	return out, nil
}

func (c *compiledCond) holds(cells []Cell) bool {
	value, ok := NewestValue(cells, c.Family, c.Qualifier)
	switch c.Op {
	case CondIsNull:
		return !ok
	case CondIsNotNull:
		return ok
	}
	if !ok {
		return false
	}
	if c.Op == CondPrefix {
		return bytes.HasPrefix(value, c.Operand)
	}
	v, err := decodeOrd(c.Type, value)
	if err != nil {
		return false
	}
	cmp := compareOrd(c.Type, v, c.operand)
	switch c.Op {
	case CondEQ:
		return cmp == 0
	case CondNE:
		return cmp != 0
	case CondLT:
		return cmp < 0
	case CondLE:
		return cmp <= 0
	case CondGT:
		return cmp > 0
	case CondGE:
		return cmp >= 0
	}
	return false
}

// NewestValue returns the value of the newest cell of a column among a
// row's cells (in internal key order), and whether there is one.
func NewestValue(cells []Cell, family string, qualifier []byte) ([]byte, bool) {
	for i := range cells {
		if cells[i].Family == family && bytes.Equal(cells[i].Qualifier, qualifier) {
			return cells[i].Value, true
		}
	}
	return nil, false
}

// Orderable reports whether values of t have an order (every type but
// jsonb).
func Orderable(t ValueType) bool { return t < TypeJSONB }

// Summable reports whether SUM applies to values of t: the integers, the
// floats and numeric.
func Summable(t ValueType) bool {
	switch t {
	case TypeInt8, TypeInt4, TypeInt2, TypeFloat8, TypeFloat4, TypeNumeric:
		return true
	}
	return false
}

// CompareValues compares two cell values of type t in PostgreSQL's order.
// It fails if either does not decode as t or t has no order.
func CompareValues(t ValueType, a, b []byte) (int, error) {
	if !Orderable(t) {
		return 0, fmt.Errorf("%w: %s values have no order", ErrInvalidArgument, t)
	}
	x, err := decodeOrd(t, a)
	if err != nil {
		return 0, err
	}
	y, err := decodeOrd(t, b)
	if err != nil {
		return 0, err
	}
	return compareOrd(t, x, y), nil
}

// EqualityKey returns a key that is the same for two cell values of type
// t exactly when PostgreSQL holds them equal, for grouping: -0 and +0 are
// one float, every NaN is one, 1.0 and 1.00 are one numeric; other types
// compare their bytes (jsonb too). It fails if b does not decode as t.
func EqualityKey(t ValueType, b []byte) (string, error) {
	if t == TypeJSONB {
		return string(b), nil
	}
	v, err := decodeOrd(t, b)
	if err != nil {
		return "", err
	}
	switch t {
	case TypeFloat8, TypeFloat4:
		switch {
		case math.IsNaN(v.f):
			return "NaN", nil
		case v.f == 0:
			v.f = 0
		}
		return string(binary.BigEndian.AppendUint64(nil, math.Float64bits(v.f))), nil
	case TypeBool:
		if v.i != 0 {
			return "\x01", nil
		}
		return "\x00", nil
	case TypeNumeric:
		switch v.num.special {
		case numNaN:
			return "NaN", nil
		case numPosInf:
			return "Infinity", nil
		case numNegInf:
			return "-Infinity", nil
		}
		return v.num.r.RatString(), nil
	}
	return string(b), nil
}

// ordValue is a decoded value in a form that compares fast.
type ordValue struct {
	i   int64   // integers, timestamptz, date, boolean
	f   float64 // floats
	b   []byte  // text, bytea, uuid
	num numeric
}

func decodeOrd(t ValueType, b []byte) (ordValue, error) {
	size := func(n int) error {
		if len(b) != n {
			return fmt.Errorf("%w: a %s cell holds %d bytes, not %d", ErrFailedPrecondition, t, len(b), n)
		}
		return nil
	}
	var v ordValue
	switch t {
	case TypeInt8, TypeInt4, TypeInt2, TypeTimestamptz:
		if err := size(8); err != nil {
			return v, err
		}
		v.i = int64(binary.BigEndian.Uint64(b))
	case TypeDate:
		if err := size(4); err != nil {
			return v, err
		}
		v.i = int64(int32(binary.BigEndian.Uint32(b)))
	case TypeFloat8:
		if err := size(8); err != nil {
			return v, err
		}
		v.f = math.Float64frombits(binary.BigEndian.Uint64(b))
	case TypeFloat4:
		if err := size(4); err != nil {
			return v, err
		}
		v.f = float64(math.Float32frombits(binary.BigEndian.Uint32(b)))
	case TypeBool:
		if err := size(1); err != nil {
			return v, err
		}
		if b[0] != 0 {
			v.i = 1
		}
	case TypeUUID:
		if err := size(16); err != nil {
			return v, err
		}
		v.b = b
	case TypeText, TypeBytea:
		v.b = b
	case TypeNumeric:
		n, err := parseNumeric(string(b))
		if err != nil {
			return v, err
		}
		v.num = n
	default:
		return v, fmt.Errorf("%w: %s values have no order", ErrInvalidArgument, t)
	}
	return v, nil
}

func compareOrd(t ValueType, x, y ordValue) int {
	switch t {
	case TypeInt8, TypeInt4, TypeInt2, TypeTimestamptz, TypeDate, TypeBool:
		return cmpInt(x.i, y.i)
	case TypeFloat8, TypeFloat4:
		return compareFloat(x.f, y.f)
	case TypeNumeric:
		return x.num.cmp(y.num)
	}
	return bytes.Compare(x.b, y.b)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareFloat is PostgreSQL's float8_cmp_internal: NaN equals NaN and
// sorts after every number; -0 equals +0.
func compareFloat(a, b float64) int {
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// numeric is a decoded NUMERIC: a finite value with its scale (digits
// after the point), or one of the special values.
type numeric struct {
	special int8
	r       *big.Rat
	scale   int
}

const (
	numFinite int8 = iota
	numNegInf
	numPosInf
	numNaN
)

// rank orders the kinds of numeric: -Infinity, numbers, Infinity, NaN.
func (n numeric) rank() int {
	switch n.special {
	case numNegInf:
		return 0
	case numPosInf:
		return 2
	case numNaN:
		return 3
	}
	return 1
}

func (n numeric) cmp(o numeric) int {
	if a, b := n.rank(), o.rank(); a != b || a != 1 {
		return cmpInt(int64(a), int64(b))
	}
	return n.r.Cmp(o.r)
}

// maxNumericExponent bounds the exponent of a NUMERIC's text, so that a
// value such as 1e999999999 cannot make a reader build a huge number.
// PostgreSQL's numeric holds at most 131072 digits before the point and
// 16383 after.
const maxNumericExponent = 140000

// parseNumeric reads a NUMERIC's text: [+-]digits[.digits][e[+-]digits],
// NaN, or [+-]Infinity (case-insensitive, as PostgreSQL reads them).
func parseNumeric(s string) (numeric, error) {
	bad := func() (numeric, error) {
		return numeric{}, fmt.Errorf("%w: %q is not a numeric value", ErrFailedPrecondition, s)
	}
	switch strings.ToLower(s) {
	case "nan":
		return numeric{special: numNaN}, nil
	case "infinity", "+infinity", "inf", "+inf":
		return numeric{special: numPosInf}, nil
	case "-infinity", "-inf":
		return numeric{special: numNegInf}, nil
	}
	rest := s
	neg := false
	if rest != "" && (rest[0] == '+' || rest[0] == '-') {
		neg = rest[0] == '-'
		rest = rest[1:]
	}
	var digits []byte
	frac, seenPoint, i := 0, false, 0
mantissa:
	for ; i < len(rest); i++ {
		switch c := rest[i]; {
		case c >= '0' && c <= '9':
			digits = append(digits, c)
			if seenPoint {
				frac++
			}
		case c == '.' && !seenPoint:
			seenPoint = true
		default:
			break mantissa
		}
	}
	if len(digits) == 0 {
		return bad()
	}
	exp := 0
	if i < len(rest) {
		if rest[i] != 'e' && rest[i] != 'E' {
			return bad()
		}
		e, err := strconv.Atoi(rest[i+1:])
		if err != nil || e > maxNumericExponent || e < -maxNumericExponent {
			return bad()
		}
		exp = e
	}
	if frac > maxNumericExponent || len(digits) > 2*maxNumericExponent {
		return bad()
	}
	m, ok := new(big.Int).SetString(string(digits), 10)
	if !ok {
		return bad()
	}
	if neg {
		m.Neg(m)
	}
	scale := frac - exp
	r := new(big.Rat)
	switch {
	case scale > 0:
		r.SetFrac(m, pow10(scale))
	case scale < 0:
		r.SetInt(m.Mul(m, pow10(-scale)))
	default:
		r.SetInt(m)
	}
	return numeric{r: r, scale: max(scale, 0)}, nil
}

var smallPow10 = func() []*big.Int {
	out := make([]*big.Int, 40)
	p := big.NewInt(1)
	for i := range out {
		out[i] = new(big.Int).Set(p)
		p.Mul(p, big.NewInt(10))
	}
	return out
}()

// pow10 returns 10^n; the caller must not change the result.
func pow10(n int) *big.Int {
	if n < len(smallPow10) {
		return smallPow10[n]
	}
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// Sum adds the values of a column of type Type exactly: integers in a
// big.Int, numeric in a big.Rat (the result keeps the largest scale of
// its inputs, as PostgreSQL's sum(numeric) does), floats in a float64.
// The zero Sum with Type set is empty.
type Sum struct {
	Type ValueType
	// N is how many values were added (partial sums count theirs).
	N int64

	i     big.Int // integers: i + small
	small int64
	num   numeric // finite: num.r, num.scale
	f     float64
	ready bool
}

// Add adds one cell value; it fails if the value does not decode as the
// type or the type has no sum.
func (s *Sum) Add(value []byte) error {
	if !Summable(s.Type) {
		return fmt.Errorf("%w: %s values have no sum", ErrInvalidArgument, s.Type)
	}
	v, err := decodeOrd(s.Type, value)
	if err != nil {
		return err
	}
	s.add(v)
	s.N++
	return nil
}

func (s *Sum) add(v ordValue) {
	switch s.Type {
	case TypeInt8, TypeInt4, TypeInt2:
		if r := s.small + v.i; (v.i >= 0) == (r >= s.small) {
			s.small = r
		} else { // it would overflow
			s.i.Add(&s.i, big.NewInt(s.small))
			s.small = v.i
		}
	case TypeFloat8, TypeFloat4:
		s.f += v.f
	case TypeNumeric:
		if !s.ready {
			s.num = numeric{special: v.num.special, r: new(big.Rat), scale: v.num.scale}
			if v.num.r != nil {
				s.num.r.Set(v.num.r)
			}
			s.ready = true
			return
		}
		s.num = addNumeric(s.num, v.num)
	}
}

// addNumeric adds b to a (which it may change), as PostgreSQL does:
// NaN absorbs everything, Infinity + -Infinity is NaN.
func addNumeric(a, b numeric) numeric {
	switch {
	case a.special == numNaN || b.special == numNaN:
		return numeric{special: numNaN}
	case a.special != numFinite && b.special != numFinite:
		if a.special != b.special {
			return numeric{special: numNaN}
		}
		return a
	case a.special != numFinite:
		return a
	case b.special != numFinite:
		return numeric{special: b.special}
	}
	a.r.Add(a.r, b.r)
	a.scale = max(a.scale, b.scale)
	return a
}

// AddText adds a partial sum of n values, in the form Text writes.
func (s *Sum) AddText(text string, n int64) error {
	if n == 0 {
		return nil
	}
	var v ordValue
	switch s.Type {
	case TypeInt8, TypeInt4, TypeInt2:
		x, ok := new(big.Int).SetString(text, 10)
		if !ok {
			return fmt.Errorf("%w: partial sum %q is not an integer", ErrInvalidArgument, text)
		}
		s.i.Add(&s.i, x)
		s.N += n
		return nil
	case TypeFloat8, TypeFloat4:
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return fmt.Errorf("%w: partial sum %q is not a float", ErrInvalidArgument, text)
		}
		v.f = f
	case TypeNumeric:
		num, err := parseNumeric(text)
		if err != nil {
			return fmt.Errorf("%w: partial sum %q is not a numeric", ErrInvalidArgument, text)
		}
		v.num = num
	default:
		return fmt.Errorf("%w: %s values have no sum", ErrInvalidArgument, s.Type)
	}
	s.add(v)
	s.N += n
	return nil
}

// Text writes the sum as decimal text: an integer, a numeric with the
// largest input scale (or NaN, Infinity, -Infinity), or a float64 as
// strconv's 'g' format with the fewest digits (NaN, +Inf, -Inf). An empty
// sum is "0".
func (s *Sum) Text() string {
	switch s.Type {
	case TypeFloat8, TypeFloat4:
		return strconv.FormatFloat(s.f, 'g', -1, 64)
	case TypeNumeric:
		if !s.ready {
			return "0"
		}
		switch s.num.special {
		case numNaN:
			return "NaN"
		case numPosInf:
			return "Infinity"
		case numNegInf:
			return "-Infinity"
		}
		return s.num.r.FloatString(s.num.scale)
	}
	return s.Int().String()
}

// Int returns an integer sum (nil for other types).
func (s *Sum) Int() *big.Int {
	switch s.Type {
	case TypeInt8, TypeInt4, TypeInt2:
		return new(big.Int).Add(&s.i, big.NewInt(s.small))
	}
	return nil
}

// Float returns a float sum.
func (s *Sum) Float() float64 { return s.f }

// Extreme keeps the least (or, if Max, the greatest) value of a column of
// type Type, in PostgreSQL's order; of equal values it keeps the first.
type Extreme struct {
	Type ValueType
	Max  bool
	// N is how many values were seen (partials count theirs).
	N int64

	best  []byte
	value ordValue
}

// Add considers one cell value; it fails if the value does not decode as
// the type or the type has no order. The Extreme keeps a copy.
func (e *Extreme) Add(value []byte) error {
	return e.AddN(value, 1)
}

// AddN considers a value that stands for n values (a partial result).
func (e *Extreme) AddN(value []byte, n int64) error {
	if n == 0 {
		return nil
	}
	if !Orderable(e.Type) {
		return fmt.Errorf("%w: %s values have no order", ErrInvalidArgument, e.Type)
	}
	v, err := decodeOrd(e.Type, value)
	if err != nil {
		return err
	}
	if e.N == 0 {
		e.keep(value, v)
	} else if c := compareOrd(e.Type, v, e.value); (e.Max && c > 0) || (!e.Max && c < 0) {
		e.keep(value, v)
	}
	e.N += n
	return nil
}

func (e *Extreme) keep(value []byte, v ordValue) {
	e.best = append(make([]byte, 0, len(value)), value...)
	if v.b != nil {
		v.b = e.best
	}
	e.value = v
}

// Value returns the extreme cell value, or nil if none was seen.
func (e *Extreme) Value() []byte { return e.best }
