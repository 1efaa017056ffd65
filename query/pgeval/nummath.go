package pgeval

import (
	"math"
	"math/big"
	"strings"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// numeric's sqrt, exp, ln, log and power, as numeric.c computes them:
// the result scale comes from PostgreSQL's rules (at least 16
// significant digits, no fewer fraction digits than the inputs, at most
// 1000), and the value is the exact one rounded half away from zero to
// that scale, worked out in big.Float with guard digits. NaN and the
// infinities follow numeric.c's special cases.

const (
	numMinSigDigits = 16   // NUMERIC_MIN_SIG_DIGITS
	numMaxScale     = 1000 // NUMERIC_MAX_DISPLAY_SCALE
	numMaxResult    = 2000 // NUMERIC_MAX_RESULT_SCALE
)

// numVar is a finite numeric as numeric.c's NumericVar sees it: its
// value, display scale, and the weight and first digits of its base-10000
// form.
type numVar struct {
	r      *big.Rat
	dscale int
	weight int   // of the first nonzero base-10000 digit; 0 for zero
	digits []int // base-10000 digits, without leading or trailing zeros
}

func toVar(n pgtypes.Numeric) numVar {
	s := strings.TrimPrefix(string(n), "-")
	intPart, frac, _ := strings.Cut(s, ".")
	v := numVar{r: toRat(n), dscale: len(frac)}
	intPart = strings.TrimLeft(intPart, "0")
	intPart = strings.Repeat("0", (4-len(intPart)%4)%4) + intPart
	frac += strings.Repeat("0", (4-len(frac)%4)%4)
	all := intPart + frac
	weight := len(intPart)/4 - 1
	for i := 0; i < len(all); i += 4 {
		d := 0
		for _, c := range all[i : i+4] {
			d = d*10 + int(c-'0')
		}
		v.digits = append(v.digits, d)
	}
	for len(v.digits) > 0 && v.digits[0] == 0 {
		v.digits = v.digits[1:]
		weight--
	}
	for len(v.digits) > 0 && v.digits[len(v.digits)-1] == 0 {
		v.digits = v.digits[:len(v.digits)-1]
	}
	if len(v.digits) > 0 {
		v.weight = weight
	}
	return v
}

func clampScale(s int) int { return min(max(s, 0), numMaxScale) }

// bitsFor is a big.Float precision holding digits decimal digits.
func bitsFor(digits int) uint { return uint(max(digits, 1))*3322/1000 + 64 }

func bigOf(r *big.Rat, prec uint) *big.Float { return new(big.Float).SetPrec(prec).SetRat(r) }

// numOfFloat rounds f to scale digits after the point.
func numOfFloat(f *big.Float, scale int) pgtypes.Numeric {
	r, _ := f.Rat(nil)
	return roundHalfAway(r, scale)
}

// expF is e^x to prec bits: e^(x/2^k) by its series, squared k times.
func expF(x *big.Float, prec uint) *big.Float {
	k := max(x.MantExp(nil)+10, 0)
	wp := prec + uint(k) + 32
	y := new(big.Float).SetPrec(wp).SetMantExp(x, -k)
	sum := new(big.Float).SetPrec(wp).SetInt64(1)
	term := new(big.Float).SetPrec(wp).SetInt64(1)
	for n := int64(1); ; n++ {
		term.Mul(term, y)
		term.Quo(term, new(big.Float).SetPrec(wp).SetInt64(n))
		if term.Sign() == 0 || term.MantExp(nil) < sum.MantExp(nil)-int(wp) {
			break
		}
		sum.Add(sum, term)
	}
	for ; k > 0; k-- {
		sum.Mul(sum, sum)
	}
	return sum
}

// lnF is ln x (x > 0) to prec bits of absolute precision, from x = m·2^e:
// ln m + e·ln 2, each by Newton's iteration on exp.
func lnF(x *big.Float, prec uint) *big.Float {
	m := new(big.Float)
	e := x.MantExp(m)
	wp := prec + 64 + uint(bitLen(e))
	out := lnNewton(m, wp)
	if e != 0 {
		ln2 := lnNewton(new(big.Float).SetPrec(wp).SetInt64(2), wp)
		out.Add(out, ln2.Mul(ln2, new(big.Float).SetPrec(wp).SetInt64(int64(e))))
	}
	return out
}

func bitLen(e int) int {
	n := 0
	for e != 0 {
		e /= 2
		n++
	}
	return n
}

// lnNewton is ln m for m near 1 (0.5 ≤ m ≤ 2): y += 2(m - e^y)/(m + e^y),
// which triples the correct bits each step from float64's 53.
func lnNewton(m *big.Float, wp uint) *big.Float {
	mf, _ := m.Float64()
	y := new(big.Float).SetPrec(wp).SetFloat64(math.Log(mf))
	mm := new(big.Float).SetPrec(wp).Set(m)
	// At least doubling each step; one more for good measure.
	for good := uint(25); good < 2*wp; good *= 2 {
		ey := expF(y, wp)
		num := new(big.Float).SetPrec(wp).Sub(mm, ey)
		den := new(big.Float).SetPrec(wp).Add(mm, ey)
		y.Add(y, num.Quo(num, den).Mul(num, new(big.Float).SetInt64(2)))
	}
	return y
}

// numSqrt is numeric_sqrt: exact, to its scale.
func numSqrt(n pgtypes.Numeric) (any, error) {
	negative := func() error {
		return sqlstate.Errorf("2201F", "cannot take square root of a negative number")
	}
	if n.IsSpecial() {
		if n == pgtypes.NumericNegInf {
			return nil, negative()
		}
		return n, nil
	}
	v := toVar(n)
	if v.r.Sign() < 0 {
		return nil, negative()
	}
	sweight := (v.weight+1)*4/2 - 1
	rscale := clampScale(max(numMinSigDigits-sweight, v.dscale))
	// The integer square root of x·10^(2·(rscale+1)) has one digit past
	// the scale; rounding it rounds the exact root.
	scaled := new(big.Rat).Mul(v.r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(2*(rscale+1))), nil)))
	root := new(big.Int).Sqrt(new(big.Int).Quo(scaled.Num(), scaled.Denom()))
	r := new(big.Rat).SetFrac(root, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(rscale+1)), nil))
	return roundHalfAway(r, rscale), nil
}

func numExp(n pgtypes.Numeric) (any, error) {
	switch n {
	case pgtypes.NumericNaN, pgtypes.NumericPosInf:
		return n, nil
	case pgtypes.NumericNegInf:
		return pgtypes.Numeric("0"), nil
	}
	v := toVar(n)
	val := toFloat(n) * 0.434294481903252
	val = min(max(val, -numMaxResult), numMaxResult)
	rscale := clampScale(max(numMinSigDigits-int(val), v.dscale))
	return expScaled(v.r, toFloat(n), rscale)
}

// expScaled is e^x rounded to rscale, with exp_var's range: beyond
// ±6000 it overflows or is 0.
func expScaled(x *big.Rat, approx float64, rscale int) (any, error) {
	if math.Abs(approx) >= numMaxResult*3 {
		if approx > 0 {
			return nil, overflowsNumeric()
		}
		return roundHalfAway(new(big.Rat), rscale), nil
	}
	digits := rscale + max(int(approx*0.434294481903252), 0) + 30
	return numOfFloat(expF(bigOf(x, bitsFor(digits)), bitsFor(digits)), rscale), nil
}

func overflowsNumeric() error {
	return sqlstate.Errorf(sqlstate.CodeNumericOutOfRange, "value overflows numeric format")
}

func logArgError(r *big.Rat) error {
	switch r.Sign() {
	case 0:
		return sqlstate.Errorf("2201E", "cannot take logarithm of zero")
	case -1:
		return sqlstate.Errorf("2201E", "cannot take logarithm of a negative number")
	}
	return nil
}

func numLn(n pgtypes.Numeric) (any, error) {
	switch n {
	case pgtypes.NumericNaN, pgtypes.NumericPosInf:
		return n, nil
	case pgtypes.NumericNegInf:
		return nil, sqlstate.Errorf("2201E", "cannot take logarithm of a negative number")
	}
	v := toVar(n)
	if err := logArgError(v.r); err != nil {
		return nil, err
	}
	rscale := clampScale(max(numMinSigDigits-estimateLnDweight(v), v.dscale))
	prec := bitsFor(rscale + 30)
	return numOfFloat(lnF(bigOf(v.r, prec), prec), rscale), nil
}

// estimateLnDweight is numeric.c's estimate of the decimal weight of
// ln(v), which picks log's and power's scales.
func estimateLnDweight(v numVar) int {
	if v.r.Sign() <= 0 {
		return 0
	}
	if v.r.Cmp(big.NewRat(9, 10)) >= 0 && v.r.Cmp(big.NewRat(11, 10)) <= 0 {
		x := toVar(roundHalfAway(new(big.Rat).Sub(v.r, big.NewRat(1, 1)), v.dscale))
		if len(x.digits) == 0 {
			return 0
		}
		return x.weight*4 + int(math.Log10(float64(x.digits[0])))
	}
	digits, dweight := float64(v.digits[0]), v.weight*4
	if len(v.digits) > 1 {
		digits = digits*10000 + float64(v.digits[1])
		dweight -= 4
	}
	ln := math.Log(digits) + float64(dweight)*2.302585092994046
	return int(math.Log10(math.Abs(ln)))
}

// numLog is log(base, n), PostgreSQL's log_var.
func numLog(base, n pgtypes.Numeric) (any, error) {
	if base.IsSpecial() || n.IsSpecial() {
		if base == pgtypes.NumericNaN || n == pgtypes.NumericNaN {
			return pgtypes.NumericNaN, nil
		}
		s1, s2 := numSign(base), numSign(n)
		switch {
		case s1 < 0 || s2 < 0:
			return nil, sqlstate.Errorf("2201E", "cannot take logarithm of a negative number")
		case s1 == 0 || s2 == 0:
			return nil, sqlstate.Errorf("2201E", "cannot take logarithm of zero")
		case base == pgtypes.NumericPosInf && n == pgtypes.NumericPosInf:
			return pgtypes.NumericNaN, nil
		case base == pgtypes.NumericPosInf:
			return pgtypes.Numeric("0"), nil
		}
		return pgtypes.NumericPosInf, nil
	}
	b, x := toVar(base), toVar(n)
	bw, xw := estimateLnDweight(b), estimateLnDweight(x)
	rw := xw - bw
	rscale := clampScale(max(numMinSigDigits-rw, b.dscale, x.dscale))
	if err := logArgError(b.r); err != nil {
		return nil, err
	}
	if err := logArgError(x.r); err != nil {
		return nil, err
	}
	prec := bitsFor(rscale + absInt(rw) + absInt(bw) + absInt(xw) + 40)
	lb := lnF(bigOf(b.r, prec+bitsFor(absInt(b.weight)*4)), prec)
	if lb.Sign() == 0 {
		return nil, sqlstate.Errorf(sqlstate.CodeDivisionByZero, "division by zero")
	}
	lx := lnF(bigOf(x.r, prec+bitsFor(absInt(x.weight)*4)), prec)
	return numOfFloat(lx.Quo(lx, lb), rscale), nil
}

// numPower is numeric_power: POSIX's pow rules for NaN and the
// infinities, an exact power for integer exponents, e^(y·ln x) otherwise.
func numPower(a, b pgtypes.Numeric) (any, error) {
	one := pgtypes.Numeric("1")
	if a.IsSpecial() || b.IsSpecial() {
		switch {
		case a == pgtypes.NumericNaN:
			if !b.IsSpecial() && numSign(b) == 0 {
				return one, nil
			}
			return pgtypes.NumericNaN, nil
		case b == pgtypes.NumericNaN:
			if !a.IsSpecial() && toRat(a).Cmp(big.NewRat(1, 1)) == 0 {
				return one, nil
			}
			return pgtypes.NumericNaN, nil
		}
		s1, s2 := numSign(a), numSign(b)
		if s1 == 0 && s2 < 0 {
			return nil, sqlstate.Errorf("2201F", "zero raised to a negative power is undefined")
		}
		// numeric_is_integral holds the infinities integral.
		if s1 < 0 && b.Inf() == 0 && !isIntegral(b) {
			return nil, sqlstate.Errorf("2201F", "a negative number raised to a non-integer power yields a complex result")
		}
		switch {
		case !a.IsSpecial() && toRat(a).Cmp(big.NewRat(1, 1)) == 0, s2 == 0:
			return one, nil
		case s1 == 0 && s2 > 0:
			return pgtypes.Numeric("0"), nil
		case b.IsSpecial():
			var absGT1 bool
			if a.IsSpecial() {
				absGT1 = true
			} else {
				r := toRat(a)
				if r.Cmp(big.NewRat(-1, 1)) == 0 {
					return one, nil
				}
				absGT1 = new(big.Rat).Abs(r).Cmp(big.NewRat(1, 1)) > 0
			}
			if absGT1 == (s2 > 0) {
				return pgtypes.NumericPosInf, nil
			}
			return pgtypes.Numeric("0"), nil
		case a == pgtypes.NumericPosInf:
			if s2 > 0 {
				return pgtypes.NumericPosInf, nil
			}
			return pgtypes.Numeric("0"), nil
		case s2 < 0:
			return pgtypes.Numeric("0"), nil
		case isIntegral(b) && new(big.Int).Rem(toRat(b).Num(), big.NewInt(2)).Sign() != 0:
			return pgtypes.NumericNegInf, nil
		}
		return pgtypes.NumericPosInf, nil
	}
	x, y := toVar(a), toVar(b)
	if x.r.Sign() == 0 && y.r.Sign() < 0 {
		return nil, sqlstate.Errorf("2201F", "zero raised to a negative power is undefined")
	}
	if y.r.IsInt() && y.r.Num().IsInt64() && y.r.Num().Int64() >= math.MinInt32 && y.r.Num().Int64() <= math.MaxInt32 {
		return powerInt(x, int(y.r.Num().Int64()))
	}
	if x.r.Sign() == 0 {
		return roundHalfAway(new(big.Rat), numMinSigDigits), nil
	}
	neg := false
	base := x.r
	if x.r.Sign() < 0 {
		if !y.r.IsInt() {
			return nil, sqlstate.Errorf("2201F", "a negative number raised to a non-integer power yields a complex result")
		}
		neg = new(big.Int).Rem(y.r.Num(), big.NewInt(2)).Sign() != 0
		base = new(big.Rat).Abs(x.r)
		x = toVar(negNumeric(a))
	}
	// The scale comes from a low-precision exp·ln(base), as power_var
	// estimates it.
	lnDweight := estimateLnDweight(x)
	local := max(8-lnDweight, 0)
	lnb := numOfFloat(lnF(bigOf(base, bitsFor(local+40+absInt(x.weight)*4)), bitsFor(local+40)), local)
	lnNum := roundHalfAway(new(big.Rat).Mul(toRat(lnb), y.r), local)
	val := toFloat(lnNum)
	if math.Abs(val) > numMaxResult*3.01 {
		if val > 0 {
			return nil, overflowsNumeric()
		}
		return roundHalfAway(new(big.Rat), numMaxScale), nil
	}
	val *= 0.434294481903252
	rscale := clampScale(max(numMinSigDigits-int(val), x.dscale, y.dscale))
	digits := rscale + max(int(val), 0) + max(y.weight*4, 0) + 40
	prec := bitsFor(digits + absInt(lnDweight))
	exponent := lnF(bigOf(base, prec+bitsFor(absInt(x.weight)*4)), prec)
	exponent.Mul(exponent, bigOf(y.r, prec))
	approx, _ := exponent.Float64()
	out, err := expScaled(ratOf(exponent), approx, rscale)
	if err != nil || !neg {
		return out, err
	}
	return negNumeric(out.(pgtypes.Numeric)), nil
}

func ratOf(f *big.Float) *big.Rat {
	r, _ := f.Rat(nil)
	return r
}

func isIntegral(n pgtypes.Numeric) bool {
	return !n.IsSpecial() && toRat(n).IsInt()
}

// powerInt is power_var_int: base^exp rounded to the larger of 16 and
// the base's scale, 0 when it is certainly below that, 22003 when it is
// certainly beyond numeric's range.
func powerInt(x numVar, exp int) (any, error) {
	rscale := clampScale(max(numMinSigDigits, x.dscale))
	switch exp {
	case 0:
		return roundHalfAway(big.NewRat(1, 1), rscale), nil
	case 1:
		return roundHalfAway(x.r, rscale), nil
	}
	if x.r.Sign() == 0 {
		return roundHalfAway(new(big.Rat), rscale), nil
	}
	// log10 of the result, from the base's first digits, as
	// power_var_int's overflow and underflow tests take it.
	f, p := float64(x.digits[0]), x.weight*4
	for i := 1; i < len(x.digits) && i*4 < 16; i++ {
		f = f*10000 + float64(x.digits[i])
		p -= 4
	}
	f = float64(exp) * (math.Log10(f) + float64(p))
	if f > 3*math.MaxInt16*4 || f > 131072+8 {
		return nil, overflowsNumeric()
	}
	if f+1 < float64(-rscale) || f+1 < -numMaxScale {
		return roundHalfAway(new(big.Rat), rscale), nil
	}
	digits := rscale + max(int(f), 0) + int(math.Log10(math.Abs(float64(exp)))) + 30
	prec := bitsFor(digits)
	b := bigOf(x.r, prec+bitsFor(absInt(x.weight)*4))
	out := new(big.Float).SetPrec(prec).SetInt64(1)
	n := exp
	if n < 0 {
		n = -n
	}
	for sq := b; n > 0; n >>= 1 {
		if n&1 == 1 {
			out.Mul(out, sq)
		}
		if n > 1 {
			sq = new(big.Float).SetPrec(prec).Mul(sq, sq)
		}
	}
	if exp < 0 {
		out.Quo(new(big.Float).SetPrec(prec).SetInt64(1), out)
	}
	if tooBig(out) {
		return nil, overflowsNumeric()
	}
	return numOfFloat(out, rscale), nil
}

// tooBig reports whether |f| is at least 10^131072, beyond numeric's
// 32768 base-10000 digits before the point.
func tooBig(f *big.Float) bool {
	if f.MantExp(nil) < 435411 { // 10^131072 is about 2^435411.8
		return false
	}
	limit := new(big.Float).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(131072), nil))
	return new(big.Float).Abs(f).Cmp(limit) >= 0
}

// floatPower is dpow: POSIX's rules for NaN and the infinities, 2201F for
// 0 to a negative power and a negative number to a non-integer one, and
// 22003 when a finite power overflows or underflows.
func floatPower(x, y float64) (any, error) {
	switch {
	case math.IsNaN(x):
		if math.IsNaN(y) || y != 0 {
			return math.NaN(), nil
		}
		return 1.0, nil
	case math.IsNaN(y):
		if x != 1 {
			return math.NaN(), nil
		}
		return 1.0, nil
	case x == 0 && y < 0:
		return nil, sqlstate.Errorf("2201F", "zero raised to a negative power is undefined")
	case x < 0 && math.Floor(y) != y:
		return nil, sqlstate.Errorf("2201F", "a negative number raised to a non-integer power yields a complex result")
	}
	r := math.Pow(x, y)
	if x != 0 && !math.IsInf(x, 0) && !math.IsInf(y, 0) && !math.IsInf(r, 0) && r != 0 {
		// glibc's pow is correctly rounded; Go's may be an ulp off.
		lx := lnF(new(big.Float).SetPrec(floatPrec).SetFloat64(math.Abs(x)), floatPrec)
		v := expF(lx.Mul(lx, new(big.Float).SetPrec(floatPrec).SetFloat64(y)), floatPrec)
		r, _ = v.Float64()
		if x < 0 && math.Mod(y, 2) != 0 {
			r = -r
		}
	}
	if !math.IsInf(x, 0) && !math.IsInf(y, 0) {
		switch {
		case math.IsInf(r, 0):
			return nil, sqlstate.Errorf(sqlstate.CodeNumericOutOfRange, "value out of range: overflow")
		case r == 0 && x != 0:
			return nil, sqlstate.Errorf(sqlstate.CodeNumericOutOfRange, "value out of range: underflow")
		}
	}
	return r, nil
}

// numDiv is div(), numeric_div_trunc: the quotient truncated to an
// integer.
func numDiv(a, b pgtypes.Numeric) (any, error) {
	if a.IsSpecial() || b.IsSpecial() {
		if a == pgtypes.NumericNaN || b == pgtypes.NumericNaN {
			return pgtypes.NumericNaN, nil
		}
		if a.Inf() == 0 {
			return pgtypes.Numeric("0"), nil
		}
		if b.IsSpecial() {
			return pgtypes.NumericNaN, nil
		}
		if numSign(b) == 0 {
			return nil, sqlstate.Errorf(sqlstate.CodeDivisionByZero, "division by zero")
		}
		if a.Inf()*numSign(b) > 0 {
			return pgtypes.NumericPosInf, nil
		}
		return pgtypes.NumericNegInf, nil
	}
	y := toRat(b)
	if y.Sign() == 0 {
		return nil, sqlstate.Errorf(sqlstate.CodeDivisionByZero, "division by zero")
	}
	q := new(big.Rat).Quo(toRat(a), y)
	return roundHalfAway(new(big.Rat).SetInt(new(big.Int).Quo(q.Num(), q.Denom())), 0), nil
}

// floatPrec is the precision float8's exp, ln, log and power are worked
// out in before rounding to the nearest float64, as glibc's correctly
// rounded functions answer.
const floatPrec = 160

// floatExp is e^x rounded to the nearest float64.
func floatExp(x float64) float64 {
	r := math.Exp(x)
	if math.IsInf(r, 0) || r == 0 || math.IsNaN(r) || x == 0 {
		return r
	}
	r, _ = expF(new(big.Float).SetPrec(floatPrec).SetFloat64(x), floatPrec).Float64()
	return r
}

// floatLog is ln x (x > 0), or log10 x, rounded to the nearest float64.
func floatLog(x float64, ten bool) float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) || x == 1 {
		if ten {
			return math.Log10(x)
		}
		return math.Log(x)
	}
	l := lnF(new(big.Float).SetPrec(floatPrec).SetFloat64(x), floatPrec)
	if ten {
		l.Quo(l, lnF(new(big.Float).SetPrec(floatPrec).SetInt64(10), floatPrec))
	}
	r, _ := l.Float64()
	return r
}
